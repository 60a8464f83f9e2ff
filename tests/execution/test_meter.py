"""The metering proxy against a scripted upstream on loopback, driven by the real SDK."""

from __future__ import annotations

import contextlib
import http.client
import json
import socket
import ssl
import struct
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import anthropic
import pytest
import requests
import trustme

from gate.agents._builtin import TRANSPORT_ERRORS
from gate.core.cost import price_table
from gate.meter import MeterProxy

REAL_KEY = "sk-ant-real-key-only-the-gate-holds"
START_USAGE = {"input_tokens": 100, "output_tokens": 1, "cache_creation_input_tokens": 50,
               "cache_read_input_tokens": 200,
               "cache_creation": {"ephemeral_5m_input_tokens": 50, "ephemeral_1h_input_tokens": 0}}


def _sse(kind: str, data: dict[str, Any]) -> bytes:
    return f"event: {kind}\ndata: {json.dumps({'type': kind, **data})}\n\n".encode()


class Upstream:
    """A scripted Messages API. ``mode``: ok | broken | overloaded | hold. With ``tls``: over
    HTTPS, with that server context's certificate."""

    def __init__(self, tls: ssl.SSLContext | None = None) -> None:
        self.mode = "ok"
        self.elsewhere = ""
        self.seen: list[dict[str, Any]] = []
        self.release = threading.Event()
        self.ended = threading.Event()  # a connection of ours was closed by the other side
        up = self

        class H(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a: Any) -> None:
                pass

            def handle(self) -> None:
                try:
                    super().handle()
                except OSError:
                    pass  # the other side went away (or reset) mid-answer
                finally:
                    up.ended.set()

            def do_GET(self) -> None:
                up.seen.append({"path": self.path, "headers": dict(self.headers), "body": None})
                self._json(200, {"data": [{"id": "claude-sonnet-5-5", "type": "model"}],
                                 "has_more": False})

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["content-length"])))
                up.seen.append({"path": self.path, "headers": dict(self.headers), "body": body})
                if self.path.startswith("/v1/messages/count_tokens"):
                    self._json(200, {"input_tokens": 7})
                    return
                if up.mode == "redirect":  # to a server of someone else's
                    self.send_response(307)
                    self.send_header("location", f"{up.elsewhere}/v1/messages")
                    self.send_header("content-length", "0")
                    self.end_headers()
                    return
                bearer = self.headers.get("authorization") == f"Bearer {REAL_KEY}"
                if self.headers.get("x-api-key") != REAL_KEY and not bearer:
                    self._json(401, {"type": "error", "error": {"type": "authentication_error",
                                                                "message": "bad key"}})
                    return
                if up.mode == "overloaded":
                    self._json(529, {"type": "error", "error": {"type": "overloaded_error",
                                                                "message": "busy"}})
                    return
                if up.mode in ("spend-limit", "rate-limit"):
                    self._json(429, {"type": "error", "error": {"type": "rate_limit_error",
                                                                "message": "limit"}},
                               {"retry-after": "0"} if up.mode == "rate-limit" else {})
                    return
                if up.mode == "truncated-json":
                    self.send_response(200)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", "500")
                    self.end_headers()
                    self.wfile.write(b'{"id": "msg_1", "usage": {')
                    self.close_connection = True
                    return
                msg = {"id": "msg_1", "type": "message", "role": "assistant",
                       "model": body["model"], "content": [], "stop_reason": None,
                       "stop_sequence": None, "usage": START_USAGE}
                if not body.get("stream"):
                    done = {**msg, "content": [{"type": "text", "text": "hello"}],
                            "stop_reason": "end_turn", "usage": {**START_USAGE,
                                                                 "output_tokens": 42}}
                    self._json(200, done)
                    if up.mode == "hangup-after":  # an idle timeout, as servers have: the
                        self.close_connection = True  # connection closes with no notice
                    return
                chunked = up.mode == "hold-chunked"  # a stream on a keep-alive connection
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("request-id", "req_up_1")
                if chunked:
                    self.send_header("transfer-encoding", "chunked")
                self.end_headers()  # close-delimited body, unless chunked
                if chunked:
                    self._chunks(_sse("message_start", {"message": msg}))
                    up.release.wait(10)
                    self._chunks(*(_sse("ping", {}) for _ in range(50)),
                                 _sse("message_stop", {}), b"")
                    return  # the connection stays open for its next request
                self.wfile.write(_sse("message_start", {"message": msg}))
                self.wfile.flush()
                if up.mode == "broken":
                    self.close_connection = True
                    return
                if up.mode == "hold":
                    up.release.wait(10)
                for ev in (
                    _sse("ping", {}),
                    _sse("content_block_start", {"index": 0, "content_block":
                                                 {"type": "text", "text": ""}}),
                    _sse("content_block_delta", {"index": 0, "delta":
                                                 {"type": "text_delta", "text": "hello"}}),
                    _sse("content_block_stop", {"index": 0}),
                    _sse("message_delta", {"delta": {"stop_reason": "end_turn",
                                                     "stop_sequence": None},
                                           "usage": {"output_tokens": 42}}),
                    _sse("message_stop", {}),
                ):
                    self.wfile.write(ev)
                    self.wfile.flush()
                self.close_connection = True

            def _chunks(self, *data: bytes) -> None:
                for d in data:
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(d), d))
                self.wfile.flush()

            def _json(self, status: int, obj: dict[str, Any],
                      extra: dict[str, str] | None = None) -> None:
                data = json.dumps(obj).encode()
                self.send_response(status)
                for k, v in (extra or {}).items():
                    self.send_header(k, v)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.send_header("request-id", "req_up_2")
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.server.daemon_threads = True
        if tls is not None:
            self.server.socket = tls.wrap_socket(self.server.socket, server_side=True)
        threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True).start()
        self.url = f"http{'s' if tls else ''}://127.0.0.1:{self.server.server_address[1]}"


@pytest.fixture
def upstream() -> Iterator[Upstream]:
    up = Upstream()
    yield up
    up.server.shutdown()
    up.server.server_close()


@pytest.fixture
def proxy(upstream: Upstream) -> Iterator[MeterProxy]:
    with MeterProxy(upstream.url, REAL_KEY, price_table()) as p:
        yield p


def _client(run: Any) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=run.base_url, api_key=run.token, max_retries=0)


def test_stream_usage_metered_and_real_key_swapped_in(proxy: MeterProxy,
                                                      upstream: Upstream) -> None:
    run = proxy.open_run("t-r0")
    with _client(run).messages.stream(model="claude-sonnet-5-5", max_tokens=10,
                                      messages=[{"role": "user", "content": "hi"}]) as s:
        final = s.get_final_message()
    assert final.usage.output_tokens == 42
    turns, usage, cost = run.totals()
    assert turns == 1
    assert (usage.input_tokens, usage.output_tokens, usage.cache_creation_input_tokens,
            usage.cache_read_input_tokens) == (100, 42, 50, 200)
    assert cost == pytest.approx((100 * 2 + 50 * 2.5 + 200 * 0.1 + 42 * 10) / 1e6)
    seen = upstream.seen[-1]
    assert seen["headers"]["x-api-key"] == REAL_KEY
    assert run.token not in json.dumps(seen["headers"])
    assert REAL_KEY not in repr(proxy) + repr(run)


def test_json_response_metered(proxy: MeterProxy) -> None:
    run = proxy.open_run("t-r1")
    msg = _client(run).messages.create(model="claude-sonnet-5-5", max_tokens=10,
                                       messages=[{"role": "user", "content": "hi"}])
    assert msg.content[0].text == "hello"  # type: ignore[union-attr]
    turns, usage, _ = run.totals()
    assert turns == 1 and usage.output_tokens == 42 and usage.cache_read_input_tokens == 200


def test_query_string_and_anthropic_headers_preserved(proxy: MeterProxy,
                                                      upstream: Upstream) -> None:
    run = proxy.open_run("t-r2")
    r = requests.post(f"{run.base_url}/v1/messages?beta=true",
                      headers={"x-api-key": run.token, "anthropic-version": "2023-06-01",
                               "anthropic-beta": "prompt-caching-2024-07-31"},
                      json={"model": "claude-sonnet-5-5", "max_tokens": 5,
                            "messages": [{"role": "user", "content": "x"}]}, timeout=10)
    assert r.status_code == 200
    seen = upstream.seen[-1]
    assert seen["path"] == "/v1/messages?beta=true"
    headers = {k.lower(): v for k, v in seen["headers"].items()}
    assert headers["anthropic-beta"] == "prompt-caching-2024-07-31"
    assert headers["anthropic-version"] == "2023-06-01"


def test_request_without_run_token_is_rejected(proxy: MeterProxy, upstream: Upstream) -> None:
    run = proxy.open_run("t-r3")
    bad = anthropic.Anthropic(base_url=run.base_url, api_key="sk-guess", max_retries=0)
    with pytest.raises(anthropic.AuthenticationError):
        bad.messages.create(model="claude-sonnet-5-5", max_tokens=5,
                            messages=[{"role": "user", "content": "x"}])
    assert upstream.seen == []  # never forwarded
    r = requests.post(f"{proxy.url}/r/not-a-run/v1/messages", json={}, timeout=10)
    assert r.status_code == 404


def test_broken_stream_still_counts_billed_input(proxy: MeterProxy,
                                                 upstream: Upstream) -> None:
    upstream.mode = "broken"
    run = proxy.open_run("t-r4")
    with pytest.raises(TRANSPORT_ERRORS), _client(run).messages.stream(
        model="claude-sonnet-5-5", max_tokens=10,
        messages=[{"role": "user", "content": "hi"}],
    ) as s:
        s.get_final_message()
    turns, usage, cost = run.totals()
    assert turns == 1 and usage.input_tokens == 100 and usage.cache_read_input_tokens == 200
    assert cost > 0
    assert run.api_failure() is not None


def test_upstream_error_passes_through_not_billed(proxy: MeterProxy,
                                                  upstream: Upstream) -> None:
    upstream.mode = "overloaded"
    run = proxy.open_run("t-r5")
    with pytest.raises(anthropic.APIStatusError) as err:
        _client(run).messages.create(model="claude-sonnet-5-5", max_tokens=5,
                                     messages=[{"role": "user", "content": "x"}])
    assert err.value.status_code == 529
    assert run.totals()[0] == 0
    assert "529 overloaded_error" in (run.api_failure() or "")


def test_stream_is_relayed_event_by_event(proxy: MeterProxy, upstream: Upstream) -> None:
    """The client sees message_start while the upstream is still holding the rest."""
    upstream.mode = "hold"
    run = proxy.open_run("t-r6")
    r = requests.post(f"{run.base_url}/v1/messages", stream=True, timeout=10,
                      headers={"x-api-key": run.token},
                      json={"model": "claude-sonnet-5-5", "max_tokens": 5, "stream": True,
                            "messages": [{"role": "user", "content": "x"}]})
    lines = r.iter_lines()
    first = next(lines)
    assert first == b"event: message_start"
    assert not upstream.release.is_set()
    upstream.release.set()
    rest = b"\n".join(lines)
    assert b"message_stop" in rest
    assert run.totals()[1].output_tokens == 42


def test_auth_token_is_forwarded_as_bearer(upstream: Upstream) -> None:
    with MeterProxy(upstream.url, REAL_KEY, price_table(),
                    credential_header="authorization") as proxy:
        run = proxy.open_run("t-bearer")
        _client(run).messages.create(model="claude-sonnet-5-5", max_tokens=5,
                                     messages=[{"role": "user", "content": "x"}])
    headers = {k.lower(): v for k, v in upstream.seen[-1]["headers"].items()}
    assert headers["authorization"] == f"Bearer {REAL_KEY}" and "x-api-key" not in headers


def test_truncated_json_reply_is_recorded_not_a_traceback(proxy: MeterProxy,
                                                          upstream: Upstream,
                                                          capfd: pytest.CaptureFixture[str]
                                                          ) -> None:
    upstream.mode = "truncated-json"
    run = proxy.open_run("t-trunc")
    with pytest.raises(TRANSPORT_ERRORS):
        _client(run).messages.create(model="claude-sonnet-5-5", max_tokens=5,
                                     messages=[{"role": "user", "content": "x"}])
    run.close()
    assert "response broken" in (run.api_failure() or "")
    assert "Traceback" not in capfd.readouterr().err


@pytest.mark.parametrize("via", ["direct", "proxy"])
def test_a_stream_the_agent_left_mid_way_closes_its_upstream_connection(
        upstream: Upstream, monkeypatch: pytest.MonkeyPatch, via: str) -> None:
    """The rest of an abandoned stream must never be read as the answer to a later request: the
    upstream connection it came on is closed, not kept (directly, each agent connection has
    its own; through a proxy, connections are pooled)."""
    api = upstream.url
    if via == "proxy":  # `upstream` plays the proxy, as in the test above
        for name in ("no_proxy", "ALL_PROXY", "all_proxy"):
            monkeypatch.delenv(name, raising=False)
        monkeypatch.setenv("HTTP_PROXY", upstream.url)
        monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
        api = "http://api.example.invalid"
    upstream.mode = "hold-chunked"
    body = json.dumps({"model": "claude-sonnet-5-5", "max_tokens": 5, "stream": True,
                       "messages": [{"role": "user", "content": "x"}]}).encode()
    with MeterProxy(api, REAL_KEY, price_table()) as proxy:
        run = proxy.open_run("t-gone")
        with _connect(proxy) as sock:
            sock.sendall(_head(run, body=body) + body)
            seen = b""
            while b"message_start" not in seen:
                seen += sock.recv(65536)
            # gone, with a reset: the meter's next write to it fails at once
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        upstream.release.set()  # the rest of the stream is sent on a connection kept alive
        assert upstream.ended.wait(5), "the abandoned stream's upstream connection was kept"
        (req,) = run.requests
    assert req.billed and req.error == "client went away mid-stream"


def test_an_upstream_connection_closed_while_idle_is_replaced(proxy: MeterProxy,
                                                              upstream: Upstream) -> None:
    """The agent keeps its connection to the meter; the upstream closes the meter's idle one
    without notice after each answer. Each next request goes out on a new connection instead
    of failing on the dead one."""
    upstream.mode = "hangup-after"
    run = proxy.open_run("t-idle")
    with requests.Session() as agent:
        for _ in range(3):
            r = agent.post(f"{run.base_url}/v1/messages", data=_MESSAGE, timeout=10,
                           headers={"x-api-key": run.token})
            assert r.status_code == 200, r.text
            time.sleep(0.2)  # the upstream's close reaches the meter
    assert len(upstream.seen) == 3
    assert [(q.status, q.error) for q in run.requests] == [(200, None)] * 3


def test_close_waits_for_a_request_in_flight(proxy: MeterProxy, upstream: Upstream) -> None:
    upstream.mode = "hold"
    run = proxy.open_run("t-flight")
    done = threading.Event()

    def call() -> None:
        with contextlib.suppress(Exception), _client(run).messages.stream(
                model="claude-sonnet-5-5", max_tokens=5,
                messages=[{"role": "user", "content": "x"}]) as s:
            s.get_final_message()
        done.set()

    threading.Thread(target=call, daemon=True).start()
    while not upstream.seen:
        time.sleep(0.01)
    threading.Timer(0.5, upstream.release.set).start()
    run.close(wait=10)  # returns only once the held stream has been counted
    assert run.totals()[0] == 1 and run.totals()[1].output_tokens == 42
    done.wait(5)


@pytest.mark.parametrize("mode,requests_made", [("spend-limit", 1), ("rate-limit", 3)])
def test_builtin_agent_never_retries_a_spend_limit(proxy: MeterProxy, upstream: Upstream,
                                                   mode: str, requests_made: int) -> None:
    from gate.agents._builtin import BuiltinAgent

    upstream.mode = mode
    run = proxy.open_run("t-429")
    agent = BuiltinAgent(model="claude-sonnet-5-5", attempts=3, backoff_s=0.01)
    client = anthropic.Anthropic(base_url=run.base_url, api_key=run.token, max_retries=0)
    with pytest.raises(anthropic.RateLimitError):
        agent._call(client, {"model": "claude-sonnet-5-5", "max_tokens": 5,
                             "messages": [{"role": "user", "content": "x"}]},
                    time.monotonic() + 60)
    assert len(upstream.seen) == requests_made


def _raw(run: Any, method: str, path: str, body: bytes = b"{}") -> tuple[int, dict[str, Any]]:
    """Send ``path`` byte for byte (an HTTP library would normalise dot segments first)."""
    host, port = run.base_url.split("//")[1].split("/")[0].split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=10)
    prefix = "/" + run.base_url.split("/", 3)[3]
    conn.request(method, prefix + path, body=body,
                 headers={"x-api-key": run.token, "content-type": "application/json"})
    resp = conn.getresponse()
    data = resp.read()
    conn.close()
    return resp.status, json.loads(data)


_MESSAGE = json.dumps({"model": "claude-sonnet-5-5", "max_tokens": 5,
                       "messages": [{"role": "user", "content": "x"}]}).encode()


@pytest.mark.parametrize("method,path", [
    ("POST", "/v1/x/../messages"),
    ("POST", "/v1/messages/."),
    ("POST", "/v1/messages/"),
    ("POST", "/./v1/messages"),
    ("POST", "/v1//messages"),
    ("POST", "/v1/%6Dessages"),
    ("POST", "/v1/messages%2F..%2Fmessages"),
    ("POST", "/v1/messages/batches"),
    ("GET", "/v1/messages/batches/msgbatch_1/results"),
    ("POST", "/v1/files"),
    ("GET", "/v1/files/file_1/content"),
    ("PUT", "/v1/messages"),
    ("DELETE", "/v1/models/claude-sonnet-5-5"),
    ("POST", "/v1/messages?beta=true#/../files"),
    ("POST", "/v1/messages?a=b/../../files"),
    ("GET", "/v1/models/../files"),
])
def test_only_allow_listed_endpoints_reach_the_api(proxy: MeterProxy, upstream: Upstream,
                                                   method: str, path: str) -> None:
    run = proxy.open_run("t-refuse")
    status, body = _raw(run, method, path, _MESSAGE)
    assert status == 403
    assert body["type"] == "error" and body["error"]["type"] == "permission_error"
    assert "does not forward" in body["error"]["message"]
    assert upstream.seen == []  # never reached the API with the real key
    assert run.refusals() == [{"method": method, "path": path}]
    assert run.totals()[0] == 0


def test_every_forwarded_messages_request_is_metered(proxy: MeterProxy,
                                                     upstream: Upstream) -> None:
    run = proxy.open_run("t-allowed")
    assert _raw(run, "POST", "/v1/messages", _MESSAGE)[0] == 200
    assert _raw(run, "POST", "/v1/messages?beta=true", _MESSAGE)[0] == 200
    assert _raw(run, "POST", "/v1/messages/count_tokens", _MESSAGE) == (200, {"input_tokens": 7})
    assert _raw(run, "GET", "/v1/models", b"")[0] == 200
    assert _raw(run, "GET", "/v1/models/claude-sonnet-5-5", b"")[0] == 200
    sent = [s["path"] for s in upstream.seen]
    assert sent == ["/v1/messages", "/v1/messages?beta=true", "/v1/messages/count_tokens",
                    "/v1/models", "/v1/models/claude-sonnet-5-5"]
    turns, usage, _ = run.totals()
    assert turns == 2 and usage.output_tokens == 84  # both messages, neither free call
    assert run.refusals() == []


def test_a_refused_request_lands_in_the_transcript(make_task, suite_dir: Path, tmp_path: Path,
                                                   proxy: MeterProxy,
                                                   upstream: Upstream) -> None:
    from gate.agents._command import CommandAgent
    from gate.core.tasks import load_suite
    from gate.execution.runner import RunOptions, run_one
    from gate.sandbox import LocalSandboxProvider

    make_task("t")
    client = (
        "import http.client, os, urllib.parse as u\n"
        "base = u.urlsplit(os.environ['ANTHROPIC_BASE_URL'])\n"
        "c = http.client.HTTPConnection(base.hostname, base.port)\n"
        "c.request('POST', base.path + '/v1/x/../messages', body=b'{}',\n"
        "          headers={'x-api-key': os.environ['ANTHROPIC_API_KEY']})\n"
        "print(c.getresponse().read().decode())\n"
    )
    (tmp_path / "client.py").write_text(client)
    agent = CommandAgent(f"{sys.executable} {tmp_path / 'client.py'}")
    res = run_one(load_suite(suite_dir).get("t"), 0, agent, meter=proxy,
                  provider=LocalSandboxProvider(base_dir=tmp_path / "ws"),
                  options=RunOptions(transcripts_dir=tmp_path / "tr"))
    assert upstream.seen == [] and res.turns == 0
    events = [json.loads(line) for line in
              (tmp_path / "tr" / "t-r0.jsonl").read_text().splitlines()]
    (refused,) = [e for e in events if e["type"] == "meter_refused"]
    assert refused["requests"] == [{"method": "POST", "path": "/v1/x/../messages"}]
    (command,) = [e for e in events if e["type"] == "command"]
    assert "permission_error" in command["stdout"]


def test_an_oversized_request_is_refused_unread(proxy: MeterProxy, upstream: Upstream) -> None:
    from gate.meter import MAX_REQUEST_BYTES

    run = proxy.open_run("t-huge")
    host, port = proxy.url.split("//")[1].split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=10)
    conn.putrequest("POST", "/" + run.base_url.split("/", 3)[3] + "/v1/messages")
    conn.putheader("x-api-key", run.token)
    conn.putheader("content-length", str(100 * MAX_REQUEST_BYTES))
    conn.endheaders(b"{")  # the gate answers without waiting for (or holding) the rest
    resp = conn.getresponse()
    assert resp.status == 413
    assert json.loads(resp.read())["error"]["type"] == "request_too_large"
    assert upstream.seen == []


def test_a_redirect_is_passed_back_never_followed_with_the_key(proxy: MeterProxy,
                                                               upstream: Upstream) -> None:
    other = Upstream()  # where the redirect points: it must never see the real key
    try:
        upstream.mode, upstream.elsewhere = "redirect", other.url
        run = proxy.open_run("t-r1")
        r = requests.post(f"{run.base_url}/v1/messages", data=_MESSAGE, timeout=10,
                          headers={"x-api-key": run.token}, allow_redirects=False)
        assert r.status_code == 307 and r.headers["location"] == f"{other.url}/v1/messages"
        assert other.seen == []
        assert len(upstream.seen) == 1
    finally:
        other.server.shutdown()
        other.server.server_close()


def test_the_environments_proxy_is_used_for_the_upstream(upstream: Upstream,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    # `upstream` plays the proxy: a request for an unresolvable API host can only reach it
    # through the proxy, which sees the absolute URL
    for name in ("no_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HTTP_PROXY", upstream.url)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")  # the client reaches the meter direct
    with MeterProxy("http://api.example.invalid", REAL_KEY, price_table()) as p:
        msg = _client(p.open_run("t-r1")).messages.create(
            model="claude-sonnet-5-5", max_tokens=8, messages=[{"role": "user", "content": "hi"}])
    assert msg.content[0].text == "hello"  # type: ignore[union-attr]
    assert [s["path"] for s in upstream.seen] == ["http://api.example.invalid/v1/messages"]


def test_a_tls_upstream_is_verified_against_the_environments_ca(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ca = trustme.CA()  # a test CA that nobody trusts
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ca.issue_cert("127.0.0.1").configure_cert(ctx)
    up = Upstream(tls=ctx)
    body = {"model": "claude-sonnet-5-5", "max_tokens": 8,
            "messages": [{"role": "user", "content": "hi"}]}
    try:
        for name in ("REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE"):
            monkeypatch.delenv(name, raising=False)
        # a certificate the default CAs do not vouch for: refused, never sent the key
        with MeterProxy(up.url, REAL_KEY, price_table()) as p:
            run = p.open_run("t-r1")
            r = requests.post(f"{run.base_url}/v1/messages", json=body, timeout=10,
                              headers={"x-api-key": run.token})
            assert r.status_code == 502 and up.seen == []
        # the environment's CA bundle (as requests reads it) makes it trusted
        bundle = tmp_path / "ca.pem"
        ca.cert_pem.write_to_path(str(bundle))
        monkeypatch.setenv("REQUESTS_CA_BUNDLE", str(bundle))
        with MeterProxy(up.url, REAL_KEY, price_table()) as p:
            run = p.open_run("t-r1")
            r = requests.post(f"{run.base_url}/v1/messages", json=body, timeout=10,
                              headers={"x-api-key": run.token})
            assert r.status_code == 200 and r.json()["content"][0]["text"] == "hello"
            assert run.totals()[0] == 1 and len(up.seen) == 1
    finally:
        up.server.shutdown()
        up.server.server_close()


# ----- the request head: read by the meter's own parser ---------------------------------------

def _head(run: Any, *lines: str, body: bytes = _MESSAGE) -> bytes:
    """A request for ``/v1/messages`` of ``run`` with the token, and ``lines`` as further
    header lines (``content-length`` of ``body`` unless ``lines`` say otherwise)."""
    path = "/" + run.base_url.split("/", 3)[3] + "/v1/messages"
    fields = [f"POST {path} HTTP/1.1", "host: 127.0.0.1", f"x-api-key: {run.token}",
              "content-type: application/json", *lines]
    if not any(x.lower().startswith(("content-length", "transfer-encoding")) for x in lines):
        fields.append(f"content-length: {len(body)}")
    return ("\r\n".join(fields) + "\r\n\r\n").encode("latin-1")


def _until_closed(sock: socket.socket) -> bytes:
    data = b""
    while chunk := sock.recv(65536):
        data += chunk
    return data


def _connect(proxy: MeterProxy) -> socket.socket:
    host, port = proxy.url.split("//")[1].split(":")
    return socket.create_connection((host, int(port)), timeout=10)


@pytest.mark.parametrize("lines,body,status", [
    # a body framed two ways, or not by a length: the meter reads exactly content-length bytes
    (["transfer-encoding: chunked"], b"5\r\nhello\r\n0\r\n\r\n", 411),
    (["content-length: 2", "content-length: 3"], b"{}", 400),
    (["content-length: +2"], b"{}", 400),
    # header lines a lenient parser would read differently
    (["x-note: a", " folded: continuation"], _MESSAGE, 400),
    (["x-api-key : other"], _MESSAGE, 400),
    (["x-note: a\rinjected: yes"], _MESSAGE, 400),
    ([f"x-h{i}: v" for i in range(101)], _MESSAGE, 431),
])
def test_a_request_head_that_could_be_read_two_ways_is_refused_and_the_connection_closed(
        proxy: MeterProxy, upstream: Upstream, lines: list[str], body: bytes,
        status: int) -> None:
    run = proxy.open_run("t-head")
    with _connect(proxy) as sock:
        # a second, valid request behind it on the same connection is never answered
        sock.sendall(_head(run, *lines) + body + _head(run) + _MESSAGE)
        data = _until_closed(sock)
    assert data.startswith(f"HTTP/1.1 {status} ".encode()), data[:200]
    head, _, rest = data.partition(b"\r\n\r\n")
    assert b"\r\nconnection: close" in head
    assert json.loads(rest)["type"] == "error" and b"HTTP/1.1" not in rest
    assert upstream.seen == [] and run.requests == []


@pytest.mark.parametrize("line", ["GET", "POST /r/x", "POST /r/x HTTP/2.0", "POST /r/x  HTTP/1.1",
                                  "POST /r/x HTTP/1.1 extra"])
def test_a_bad_request_line_is_refused(proxy: MeterProxy, upstream: Upstream, line: str) -> None:
    with _connect(proxy) as sock:
        sock.sendall(line.encode() + b"\r\ncontent-length: 0\r\n\r\n")
        data = _until_closed(sock)
    assert data.split(b" ", 2)[1] in (b"400", b"505"), data[:200]
    assert upstream.seen == []


def test_keep_alive_expect_100_continue_and_http_1_0(proxy: MeterProxy,
                                                     upstream: Upstream) -> None:
    """Two requests on one connection (the second asks for 100-continue first, as curl does
    for a larger body); then an HTTP/1.0 request, answered and closed."""
    run = proxy.open_run("t-keep")
    with _connect(proxy) as sock:
        reader = sock.makefile("rb")
        sock.sendall(_head(run) + _MESSAGE)
        status = reader.readline()
        fields = dict(line.decode().rstrip("\r\n").lower().split(": ", 1)
                      for line in iter(reader.readline, b"\r\n"))
        assert status == b"HTTP/1.1 200 OK\r\n" and "connection" not in fields
        body = json.loads(reader.read(int(fields["content-length"])))
        assert body["usage"]["output_tokens"] == 42
        sock.sendall(_head(run, "expect: 100-continue", "connection: close"))
        assert reader.readline() == b"HTTP/1.1 100 Continue\r\n"
        assert reader.readline() == b"\r\n"
        sock.sendall(_MESSAGE)  # the body only once the meter asked for it
        rest = reader.read()
    assert rest.startswith(b"HTTP/1.1 200 OK\r\n") and b"connection: close" in rest.lower()
    with _connect(proxy) as sock:
        sock.sendall(_head(run).replace(b"HTTP/1.1\r\n", b"HTTP/1.0\r\n", 1) + _MESSAGE)
        old = _until_closed(sock)  # closed after the one answer
    assert old.startswith(b"HTTP/1.1 200 OK\r\n") and old.count(b"HTTP/1.1 ") == 1
    assert len(run.requests) == 3 and len(upstream.seen) == 3
    assert all(s["headers"]["x-api-key"] == REAL_KEY for s in upstream.seen)


@pytest.mark.parametrize("who", ["wrong token", "unknown run"])
def test_a_refused_request_s_unread_body_is_never_read_as_a_request(
        proxy: MeterProxy, upstream: Upstream, who: str) -> None:
    """Refused before its body is read: the connection closes, so a body that reads as a
    request (here, one with the right token) is never answered or forwarded."""
    run = proxy.open_run("t-unread")
    smuggled = _head(run) + _MESSAGE
    refused = _head(run, body=smuggled)
    if who == "wrong token":
        refused = refused.replace(run.token.encode(), b"gate-run-wrong")
    else:
        refused = refused.replace(f"/r/{run.run_id}/".encode(), b"/r/nobody/")
    with _connect(proxy) as sock:
        sock.sendall(refused + smuggled)
        data = _until_closed(sock)
    assert data.startswith(b"HTTP/1.1 401 " if who == "wrong token" else b"HTTP/1.1 404 ")
    assert data.count(b"HTTP/1.1 ") == 1 and b"connection: close" in data
    assert upstream.seen == [] and run.requests == []
