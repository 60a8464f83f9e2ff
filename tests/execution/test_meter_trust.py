"""Every request the upstream answers is in the run's totals, or the run says it is not.

The real meter over real HTTP, in front of a loopback upstream that records what reaches it
(header lines as sent, duplicates included) and can hold its answers: a request still in
flight when its run closes, a billed model without a price, a body whose keys repeat, an
agent's own copy of the gate's headers.
"""

from __future__ import annotations

import http.client
import json
import threading
import time
from collections.abc import Iterator, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from gate.core.cost import price_table
from gate.meter import MeterProxy, RunMeter

USAGE = {"input_tokens": 100, "output_tokens": 20, "cache_creation_input_tokens": 0,
         "cache_read_input_tokens": 0}


class Upstream:
    """A Messages API that answers every request with a billed message, once released."""

    def __init__(self) -> None:
        self.seen: list[dict[str, Any]] = []
        self.answered = 0
        self.release = threading.Event()
        self.release.set()
        self.arrived = threading.Semaphore(0)
        up = self

        class H(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a: Any) -> None:
                pass

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers["content-length"]))
                up.seen.append({"headers": list(self.headers.items()), "body": raw})
                up.arrived.release()
                up.release.wait(30)
                up.answered += 1  # before the answer leaves: the client may read it first
                body = json.dumps({"id": "msg_1", "type": "message", "role": "assistant",
                                   "model": json.loads(raw)["model"], "stop_reason": "end_turn",
                                   "content": [{"type": "text", "text": "hi"}],
                                   "usage": USAGE}).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


@pytest.fixture
def upstream() -> Iterator[Upstream]:
    up = Upstream()
    yield up
    up.release.set()
    up.server.shutdown()
    up.server.server_close()


@pytest.fixture
def meter(upstream: Upstream) -> Iterator[MeterProxy]:
    with MeterProxy(upstream.url, "sk-real", price_table(), run_header="x-gate-run") as m:
        yield m


def _post(run: RunMeter, body: bytes, headers: dict[str, str] | None = None,
          extra: Sequence[tuple[str, str]] = ()) -> tuple[int, dict[str, Any]]:
    host, port = run.base_url.split("//")[1].split("/")[0].split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=30)
    path = "/" + run.base_url.split("/", 3)[3] + "/v1/messages"
    conn.putrequest("POST", path, skip_accept_encoding=True)
    for k, v in {"x-api-key": run.token, "content-type": "application/json",
                 "content-length": str(len(body)), **(headers or {})}.items():
        conn.putheader(k, v)
    for k, v in extra:
        conn.putheader(k, v)
    conn.endheaders(body)
    resp = conn.getresponse()
    data = resp.read()
    conn.close()
    return resp.status, json.loads(data) if data else {}


def _message(model: str = "claude-sonnet-5-5") -> bytes:
    return json.dumps({"model": model, "max_tokens": 16,
                       "messages": [{"role": "user", "content": "hi"}]}).encode()


def test_a_request_in_flight_when_its_run_closes_leaves_the_run_not_fully_metered(
        meter: MeterProxy, upstream: Upstream) -> None:
    run = meter.open_run("t-r0")
    assert _post(run, _message())[0] == 200  # one counted request
    upstream.release.clear()
    late = threading.Thread(target=lambda: _post(run, _message()), daemon=True)
    late.start()
    assert upstream.arrived.acquire(timeout=10) and upstream.arrived.acquire(timeout=10)
    run.close(wait=0.2)  # the agent is gone; its child's request is still at the upstream
    totals = run.measured()
    upstream.release.set()
    late.join(10)
    assert upstream.answered == 2  # the upstream answered (and billed) both
    assert totals.turns == 1
    assert totals.unmetered is not None and "in flight" in totals.unmetered


def test_a_run_closed_with_nothing_in_flight_is_fully_metered(meter: MeterProxy) -> None:
    run = meter.open_run("t-r0")
    assert _post(run, _message())[0] == 200
    run.close(wait=0.2)
    totals = run.measured()
    assert (totals.turns, totals.unmetered) == (1, None)


def test_a_request_after_its_run_closed_is_not_forwarded(meter: MeterProxy,
                                                         upstream: Upstream) -> None:
    run = meter.open_run("t-r0")
    run.close(wait=0.2)
    assert _post(run, _message())[0] == 404
    assert upstream.seen == []


def test_a_billed_model_without_a_price_is_not_metered_at_zero(meter: MeterProxy) -> None:
    run = meter.open_run("t-r0")
    assert _post(run, _message("claude-nobody-knows-1"))[0] == 200
    run.close(wait=0.2)
    totals = run.measured()
    assert totals.turns == 1
    assert totals.unmetered is not None and "claude-nobody-knows-1" in totals.unmetered
    assert "[agent.prices" in totals.unmetered  # says how to add its price


@pytest.mark.parametrize("body", [
    b'{"model": "claude-haiku-4-5", "max_tokens": 16, "messages": [], '
    b'"model": "claude-opus-4-1"}',
    b'{"model": "claude-sonnet-5-5", "max_tokens": 16, "messages": '
    b'[{"role": "user", "content": "a", "content": "b"}]}',
    b'{"model": "claude-sonnet-5-5", "mod\\u0065l": "claude-opus-4-1", "messages": []}',
])
def test_a_body_with_a_repeated_key_is_refused_and_never_forwarded(
        meter: MeterProxy, upstream: Upstream, body: bytes) -> None:
    run = meter.open_run("t-r0")
    status, answer = _post(run, body)
    assert status == 400
    assert answer["type"] == "error" and answer["error"]["type"] == "invalid_request_error"
    assert "duplicate" in answer["error"]["message"]
    assert upstream.seen == []
    run.close(wait=0.2)
    assert run.measured().turns == 0


def test_the_gates_own_headers_from_the_agent_are_dropped(meter: MeterProxy,
                                                          upstream: Upstream) -> None:
    run = meter.open_run("t-r0")
    status, _ = _post(run, _message(), extra=[("X-Gate-Run", "lucky-r9"),
                                              ("x-GATE-run", "lucky-r8"),
                                              ("X-Gate-Anything", "x")])
    assert status == 200
    sent = [(k.lower(), v) for k, v in upstream.seen[0]["headers"]]
    assert [v for k, v in sent if k == "x-gate-run"] == ["t-r0"]
    assert not [k for k, _ in sent if k.startswith("x-gate-") and k != "x-gate-run"]


def test_a_request_that_ends_within_the_grace_is_counted(
        meter: MeterProxy, upstream: Upstream) -> None:
    """A request that ends within the grace is counted, and the run is fully metered."""
    run = meter.open_run("t-r0")
    upstream.release.clear()
    late = threading.Thread(target=lambda: _post(run, _message()), daemon=True)
    late.start()
    assert upstream.arrived.acquire(timeout=10)
    threading.Timer(0.3, upstream.release.set).start()
    t0 = time.monotonic()
    run.close(wait=10)
    assert time.monotonic() - t0 < 5
    late.join(10)
    totals = run.measured()
    assert (totals.turns, totals.unmetered) == (1, None)
