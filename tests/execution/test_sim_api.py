"""The simulator speaks the Messages API: shapes, headers, auth, SSE, count_tokens, limits."""

from __future__ import annotations

import asyncio
import http.client
import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import anthropic
import pytest

from gate.sim import Simulator

MODEL = "claude-sonnet-5-5"


@pytest.fixture(scope="module")
def sim() -> Iterator[Simulator]:
    with Simulator() as s:
        yield s


@pytest.fixture
def client(sim: Simulator) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=sim.base_url, api_key="k", max_retries=0)


def post(url: str, body: Any, headers: dict[str, str] | None = None,
         ) -> tuple[int, dict[str, str], bytes]:
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method="POST",
                                 headers={"content-type": "application/json", **(headers or {})})
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, {k.lower(): v for k, v in resp.headers.items()}, resp.read()
    except urllib.error.HTTPError as err:
        return err.code, {k.lower(): v for k, v in err.headers.items()}, err.read()


BODY = {"model": MODEL, "max_tokens": 50, "messages": [{"role": "user", "content": "hi"}]}


def test_missing_key_is_401_in_the_api_shape(sim: Simulator) -> None:
    status, headers, raw = post(f"{sim.base_url}/v1/messages", BODY)
    body = json.loads(raw)
    assert status == 401
    assert body["type"] == "error"
    assert body["error"]["type"] == "authentication_error"
    assert body["request_id"] == headers["request-id"]


def test_x_api_key_and_bearer_both_work_and_every_response_has_a_request_id(
        sim: Simulator) -> None:
    for headers in ({"x-api-key": "a"}, {"authorization": "Bearer b"}):
        status, h, raw = post(f"{sim.base_url}/v1/messages?beta=true", BODY,
                              {**headers, "anthropic-beta": "prompt-caching-2024-07-31",
                               "anthropic-version": "2023-06-01"})
        assert status == 200, raw
        assert h["request-id"].startswith("req_")
        assert json.loads(raw)["model"] == MODEL + "-sim"


def test_chunked_request_body_is_read(sim: Simulator) -> None:
    host, port = sim.base_url.removeprefix("http://").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=10)
    body = json.dumps(BODY).encode()
    conn.putrequest("POST", "/v1/messages")
    conn.putheader("x-api-key", "k")
    conn.putheader("transfer-encoding", "chunked")
    conn.endheaders()
    conn.send(b"%x\r\n%s\r\n%x\r\n%s\r\n0\r\n\r\n" % (10, body[:10], len(body) - 10, body[10:]))
    resp = conn.getresponse()
    assert resp.status == 200, resp.read()
    assert json.loads(resp.read())["type"] == "message"


def test_bad_requests_get_400_and_unknown_routes_404(sim: Simulator) -> None:
    key = {"x-api-key": "k"}
    assert post(f"{sim.base_url}/v1/messages", b"{not json", key)[0] == 400
    assert post(f"{sim.base_url}/v1/messages", {"model": MODEL, "messages": []}, key)[0] == 400
    no_max = {"model": MODEL, "messages": [{"role": "user", "content": "x"}]}
    status, _, raw = post(f"{sim.base_url}/v1/messages", no_max, key)
    assert status == 400 and json.loads(raw)["error"]["type"] == "invalid_request_error"
    status, h, raw = post(f"{sim.base_url}/v1/complete", BODY, key)
    assert status == 404 and json.loads(raw)["error"]["type"] == "not_found_error"
    assert "request-id" in h


def test_sdk_sync_tolerates_unknown_fields_and_labels_the_model(
        client: anthropic.Anthropic) -> None:
    msg = client.messages.create(
        model=MODEL, max_tokens=200, messages=[{"role": "user", "content": "hello"}],
        metadata={"user_id": "u"},
        extra_body={"context_management": {"edits": []}, "output_config": {"effort": "high"},
                    "temperature": 0.2, "some_future_field": [1, 2]},
        extra_headers={"anthropic-beta": "claude-code-20250219"})
    assert msg.model == "claude-sonnet-5-5-sim"
    assert msg.stop_reason == "end_turn"
    assert "simulator" in msg.content[0].text  # type: ignore[union-attr]
    assert msg.id.startswith("msg_")


def test_sdk_async_client(sim: Simulator) -> None:
    async def go() -> anthropic.types.Message:
        async with anthropic.AsyncAnthropic(base_url=sim.base_url, api_key="k",
                                            max_retries=0) as c:
            msg = await c.messages.create(model=MODEL, max_tokens=100,
                                          messages=[{"role": "user", "content": "hi"}])
            assert msg.stop_reason == "end_turn"
            stream = c.messages.stream(model=MODEL, max_tokens=100,
                                       messages=[{"role": "user", "content": "hi"}])
            async with stream as s:
                return await s.get_final_message()

    msg = asyncio.run(go())
    assert msg.usage.output_tokens > 1
    assert msg.stop_reason == "end_turn"


def test_sse_event_sequence(client: anthropic.Anthropic) -> None:
    with client.messages.stream(model=MODEL, max_tokens=200,
                                messages=[{"role": "user", "content": "hi"}]) as stream:
        kinds = [e.type for e in stream]
        final = stream.get_final_message()
    assert kinds[0] == "message_start"
    assert kinds[-1] == "message_stop"
    assert kinds.index("message_delta") > kinds.index("content_block_stop")
    assert "text" in kinds  # the helper's accumulated-text events from text_delta
    assert final.usage.output_tokens > 1  # message_delta's cumulative value replaced the initial 1


def test_max_tokens_truncates(client: anthropic.Anthropic) -> None:
    msg = client.messages.create(model=MODEL, max_tokens=5,
                                 messages=[{"role": "user", "content": "hello"}])
    assert msg.stop_reason == "max_tokens"
    assert msg.usage.output_tokens == 5
    assert len(msg.content[0].text) <= 20  # type: ignore[union-attr]


def test_stop_sequences_cut_the_answer(client: anthropic.Anthropic) -> None:
    msg = client.messages.create(model=MODEL, max_tokens=300, stop_sequences=["simulator"],
                                 messages=[{"role": "user", "content": "hello"}])
    assert msg.stop_reason == "stop_sequence" and msg.stop_sequence == "simulator"
    assert msg.content[0].text.endswith("agent-gate ")  # type: ignore[union-attr]


def test_title_side_request_gets_a_short_answer(client: anthropic.Anthropic) -> None:
    msg = client.messages.create(model="claude-haiku-4-5", max_tokens=30,
                                 system="Generate a concise title for this conversation.",
                                 messages=[{"role": "user", "content": "fix the bug"}])
    assert msg.stop_reason == "end_turn"
    assert 0 < len(msg.content[0].text) < 40  # type: ignore[union-attr]


def test_count_tokens_counts_everything(client: anthropic.Anthropic) -> None:
    tools: list[Any] = [{"name": "bash", "input_schema": {"type": "object"}}]
    small = client.messages.count_tokens(model=MODEL,
                                         messages=[{"role": "user", "content": "hi"}])
    more = client.messages.count_tokens(model=MODEL, tools=tools, system="be brief",
                                        messages=[{"role": "user", "content": "hi"}])
    assert 0 < small.input_tokens < more.input_tokens
