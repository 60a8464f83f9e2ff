"""Faults surface as the SDK's own exceptions (or retries that succeed); the ledger is exact."""

from __future__ import annotations

import contextlib
from types import SimpleNamespace
from typing import Any

import anthropic
import pytest

from gate.sim import FaultConfig, Latency, Simulator, key_id, ledger_totals, read_ledger
from gate.usage import Usage

MODEL = "claude-sonnet-5-5"


def _transport_errors() -> tuple[type[Exception], ...]:
    """What a broken stream body raises: the SDK's HTTP library error, whichever it uses."""
    found: list[type[Exception]] = [anthropic.APIConnectionError]
    for name in ("httpx2", "httpx"):
        with contextlib.suppress(ImportError):
            found.append(__import__(name).TransportError)
    return tuple(found)

KW: dict[str, Any] = {"model": MODEL, "max_tokens": 300,
                      "messages": [{"role": "user", "content": "hello"}]}


def _client(sim: Simulator, retries: int = 0) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=sim.base_url, api_key="secret-key-123",
                               max_retries=retries)


@pytest.mark.parametrize(("faults", "exc", "status"), [
    (FaultConfig(rate_429=1.0, retry_after=7), anthropic.RateLimitError, 429),
    (FaultConfig(rate_529=1.0), anthropic.OverloadedError, 529),
    (FaultConfig(rate_500=1.0), anthropic.InternalServerError, 500),
])
def test_http_error_faults_raise_the_sdk_exception(faults: FaultConfig,
                                                   exc: type[anthropic.APIStatusError],
                                                   status: int) -> None:
    with Simulator(faults=faults) as sim:
        with pytest.raises(exc) as err:
            _client(sim).messages.create(**KW)
        assert err.value.status_code == status
        assert err.value.response.headers["request-id"]
        if status == 429:
            assert err.value.response.headers["retry-after"] == "7"
        [entry] = read_ledger(sim.ledger_path)
        assert entry["status"] == status and entry["usage"] is None


def test_error_event_mid_stream_after_200() -> None:
    with Simulator(faults=FaultConfig(rate_stream_error=1.0)) as sim:
        client = _client(sim)
        with pytest.raises(anthropic.APIStatusError) as err, \
                client.messages.stream(**KW) as stream:
            for _ in stream:
                pass
        assert "overloaded_error" in str(err.value)
        # not a stream → the fault does not apply
        assert client.messages.create(**KW).stop_reason == "end_turn"
        first, second = read_ledger(sim.ledger_path)
        assert first["status"] == 200 and first["fault"] == "stream_error"
        assert first["usage"]["output_tokens"] == 1  # billed for input, as message_start said
        assert second["usage"]["output_tokens"] > 1


def test_dropped_connection_mid_stream_and_before_a_json_response() -> None:
    with Simulator(faults=FaultConfig(rate_disconnect=1.0)) as sim:
        client = _client(sim)
        with pytest.raises(_transport_errors(), match=r"incomplete|closed"), \
                client.messages.stream(**KW) as stream:
            for _ in stream:
                pass
        with pytest.raises(anthropic.APIConnectionError):
            client.messages.create(**KW)
        streamed, plain = read_ledger(sim.ledger_path)
        assert streamed["fault"] == "disconnect" and streamed["usage"]["input_tokens"] > 0
        assert plain["fault"] == "disconnect" and plain["usage"] is None


def test_sdk_retries_succeed_and_the_ledger_shows_the_failures() -> None:
    faults = FaultConfig(rate_429=0.5, retry_after=0.01)
    with Simulator(faults=faults, seed=3) as sim:
        client = _client(sim, retries=20)
        for _ in range(8):
            assert client.messages.create(**KW).stop_reason == "end_turn"
        with client.messages.stream(**KW) as stream:
            assert stream.get_final_message().stop_reason == "end_turn"
        statuses = [e["status"] for e in read_ledger(sim.ledger_path)]
    assert statuses.count(200) == 9
    assert statuses.count(429) >= 3


def test_faults_are_seeded() -> None:
    faults = FaultConfig(rate_429=0.5)
    draws = [faults.pick(7, n, stream=False) for n in range(200)]
    assert draws == [faults.pick(7, n, stream=False) for n in range(200)]
    assert 60 < draws.count("429") < 140
    assert draws != [faults.pick(8, n, stream=False) for n in range(200)]


def test_fault_rates_are_validated() -> None:
    from gate.errors import BadInput

    with pytest.raises(BadInput):
        FaultConfig(rate_429=0.7, rate_500=0.7)
    with pytest.raises(BadInput):
        FaultConfig(rate_529=-0.1)


def test_latency_and_streaming_speed(monkeypatch: pytest.MonkeyPatch) -> None:
    """The response waits ``fixed_ms`` before its first byte, then each streamed delta waits
    for its tokens at ``tokens_per_second`` (a whole answer waits for all of its tokens).
    Checked by the waits the simulator takes, in order; a stopwatch belongs in bench/."""
    from gate.sim import _server

    waits: list[float] = []
    monkeypatch.setattr(_server, "time", SimpleNamespace(sleep=waits.append))
    with Simulator(latency=Latency(fixed_ms=150, tokens_per_second=500)) as sim:
        client = _client(sim)
        with client.messages.stream(**KW) as stream:
            deltas = [e.delta for e in stream if e.type == "content_block_delta"]
            msg = stream.get_final_message()
        streamed = list(waits)
        waits.clear()
        whole = client.messages.create(**KW)
    assert msg.usage.output_tokens > 40 and len(deltas) > 1
    texts = [getattr(d, "text", None) or getattr(d, "partial_json", "") for d in deltas]
    assert streamed == [0.15, *(max(1, len(t) // 4) / 500 for t in texts)]
    assert sum(streamed[1:]) >= 40 / 500
    assert waits == [0.15, whole.usage.output_tokens / 500]
    # no latency configured: no wait at all
    waits.clear()
    with Simulator() as sim, _client(sim).messages.stream(**KW) as stream:
        stream.get_final_message()
    assert not any(waits), waits


def test_ledger_matches_what_the_sdk_received() -> None:
    with Simulator() as sim:
        client = _client(sim)
        system = [{"type": "text", "text": "rules " * 1200,
                   "cache_control": {"type": "ephemeral"}}]
        received = Usage()
        for i in range(4):
            kw = {**KW, "system": system}
            if i % 2:
                with client.messages.stream(**kw) as stream:
                    u = stream.get_final_message().usage
            else:
                u = client.messages.create(**kw).usage
            received = received + Usage.from_api(u.model_dump())
        client.messages.count_tokens(model=MODEL, messages=KW["messages"])
        entries = read_ledger(sim.ledger_path)
        assert ledger_totals(sim.ledger_path) == received
        assert received.cache_read_input_tokens > 0
        text = sim.ledger_path.read_text()
    assert len(entries) == 5
    assert "secret-key-123" not in text
    assert {e["key_id"] for e in entries} == {key_id("secret-key-123")}
    for e in entries:
        assert {"request_id", "time", "model", "stream", "status", "usage", "key_id", "task",
                "episode"} <= set(e)


def test_own_ledger_is_removed_on_close_but_a_given_path_is_kept(tmp_path: Any) -> None:
    with Simulator() as sim:
        auto = sim.ledger_path
        assert auto.exists()
    assert not auto.exists()
    path = tmp_path / "ledger.jsonl"
    path.write_text('{"left": "over from an earlier run"}\n')
    with Simulator(ledger_path=path) as sim:
        _client(sim).messages.create(**KW)
    assert len(read_ledger(path)) == 1
