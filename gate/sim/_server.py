"""The HTTP side: a real loopback server that speaks the Messages API (JSON and SSE).

Responses follow the API's shapes: error bodies with ``request_id``, a ``request-id`` header on
everything, SSE with ``message_start`` → content-block events → ``message_delta`` (cumulative
usage) → ``message_stop``, and ``ping``s. Streams use chunked transfer encoding, so a dropped
connection reaches the client as a broken body, not as a clean end.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import importlib.util
import itertools
import json
import logging
import socket
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Protocol

from gate.sim._cache import CachePlan, PromptCache, flatten, prompt_tokens
from gate.sim._families import sim_label
from gate.sim._faults import FaultConfig, Latency
from gate.sim._ledger import Ledger, key_id
from gate.sim._model import RUN_HEADER, SimModel, apply_stop_sequences, fit_max_tokens
from gate.sim._protocol import (
    ApiError,
    check_messages_request,
    error_body,
    invalid,
    server_tool_use,
)
from gate.upstream import ANTHROPIC, CREDIT_MESSAGE, Upstream, upstream_names

log = logging.getLogger("gate.sim")

MAX_BODY = 32 * 1024 * 1024
TEXT_CHUNK = 48  # characters per text_delta / input_json_delta


class _Dropped(Exception):
    """The simulator dropped the connection on purpose (a ``disconnect`` fault)."""


@dataclass
class Engine:
    """Everything a request needs, shared by the handler threads."""

    model: SimModel
    cache: PromptCache
    faults: FaultConfig
    latency: Latency
    ledger: Ledger | None
    seed: int
    clock: Callable[[], float]

    def __post_init__(self) -> None:
        self._counter = itertools.count()
        self._lock = threading.Lock()

    def next_n(self) -> int:
        with self._lock:
            return next(self._counter)

    def record(self, entry: dict[str, Any]) -> None:
        entry["time"] = datetime.fromtimestamp(self.clock(), UTC).isoformat()
        if self.ledger is not None:
            self.ledger.record(entry)


class SimServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, address: tuple[str, int], engine: Engine, auth: Upstream = ANTHROPIC,
                 credential: str | None = None) -> None:
        super().__init__(address, _Handler)
        self.engine = engine
        self.auth = auth  # the upstream whose authentication it checks
        self.credential = credential

    def handle_error(self, request: Any, client_address: Any) -> None:
        log.debug("simulator: connection error from %s", client_address, exc_info=True)


class Dialect(Protocol):
    """An upstream's wire format the server speaks besides the Messages API (its module:
    ``gate/sim/_<upstream>.py``, with ``DIALECT``): the paths it takes, how it answers one
    (the same model behind it: ``_Handler._messages``) and its error shape."""

    def serves(self, path: str) -> bool: ...

    def handle(self, h: _Handler, engine: Engine, path: str, request_id: str,
               entry: dict[str, Any]) -> None: ...

    def error(self, err: ApiError) -> tuple[int, dict[str, Any]]: ...


@functools.cache
def _dialects() -> tuple[Dialect, ...]:
    """The dialects of the registered upstreams that have one, found by their names (no
    module here names a provider: the port does)."""
    found = []
    for name in upstream_names():
        module = f"gate.sim._{name}"
        if importlib.util.find_spec(module) is not None:
            dialect = getattr(importlib.import_module(module), "DIALECT", None)
            if dialect is not None:
                found.append(dialect)
    return tuple(found)


def _dialect_for(path: str) -> Dialect | None:
    return next((d for d in _dialects() if d.serves(path)), None)


def _header(headers: Any) -> Callable[[str], str]:
    return lambda name: str(headers.get(name) or "")


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "gate-simulator"
    sys_version = ""
    disable_nagle_algorithm = True  # headers and body are separate writes: avoid 40 ms stalls
    server: SimServer

    # -- plumbing -------------------------------------------------------------------------
    def log_message(self, format: str, *args: Any) -> None:
        log.debug("simulator: " + format, *args)

    def _send_json(self, status: int, body: dict[str, Any], request_id: str,
                   headers: dict[str, str] | None = None) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.send_header("request-id", request_id)
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)
        self.wfile.flush()

    def _record(self, entry: dict[str, Any]) -> None:
        """Write the ledger line once, before the response's last byte, so a client that has
        its answer can already read what it was billed."""
        if not getattr(self, "_recorded", False):
            self._recorded = True
            self.server.engine.record(entry)

    def _send_error(self, err: ApiError, request_id: str) -> None:
        dialect = getattr(self, "_dialect", None)
        if dialect is not None:  # an upstream's own error shape
            status, body = dialect.error(err)
            self._send_json(status, body, request_id, err.headers)
            return
        self._send_json(err.status, error_body(err.error_type, err.message, request_id),
                        request_id, err.headers)

    def _read_body(self) -> Any:
        if "chunked" in (self.headers.get("transfer-encoding") or "").lower():
            raw = self._read_chunked()
        else:
            length = int(self.headers.get("content-length") or 0)
            if length > MAX_BODY:
                self.close_connection = True  # the unread body makes the connection unusable
                raise ApiError("request_too_large", "Request exceeds the maximum allowed size")
            raw = self.rfile.read(length) if length else b""
        try:
            return json.loads(raw or b"null")
        except (json.JSONDecodeError, UnicodeDecodeError):
            raise invalid("The request body is not valid JSON") from None

    def _read_chunked(self) -> bytes:
        parts: list[bytes] = []
        size = 0
        while True:
            n = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
            if n == 0:
                while self.rfile.readline().strip():  # trailers
                    pass
                return b"".join(parts)
            size += n
            if size > MAX_BODY:
                self.close_connection = True
                raise ApiError("request_too_large", "Request exceeds the maximum allowed size")
            parts.append(self.rfile.read(n))
            self.rfile.readline()

    def _drop(self, entry: dict[str, Any]) -> None:
        self._record(entry)
        self.close_connection = True
        try:
            self.wfile.flush()
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        raise _Dropped

    # -- routes ---------------------------------------------------------------------------
    def do_GET(self) -> None:
        self._route()

    def do_HEAD(self) -> None:
        """Clients probe connectivity with ``HEAD /``: answer the headers, no body."""
        self.send_response(404)
        self.send_header("content-length", "0")
        self.send_header("request-id", "req_sim_" + uuid.uuid4().hex[:24])
        self.end_headers()

    def do_POST(self) -> None:
        self._route()

    def do_PUT(self) -> None:
        self._route()

    def do_DELETE(self) -> None:
        self._route()

    def _route(self) -> None:
        engine = self.server.engine
        self._recorded = False
        request_id = "req_sim_" + uuid.uuid4().hex[:24]
        path = self.path.split("?", 1)[0].rstrip("/")
        entry: dict[str, Any] = {"request_id": request_id, "endpoint": path, "model": None,
                                 "stream": False, "status": None, "usage": None,
                                 "key_id": None, "task": None, "episode": None}
        try:
            self._dialect = _dialect_for(path)
            if self._dialect is not None:  # another upstream's wire format
                self._dialect.handle(self, engine, path, request_id, entry)
                return
            matched = ANTHROPIC.match(self.command, path[1:])
            if matched is None or matched.route.kind == "models":
                self._read_body_quietly()
                raise ApiError("not_found_error", f"Not found: {self.command} {path}")
            body = self._read_body()
            refused = self.server.auth.simulator_refusal(_header(self.headers),
                                                         self.server.credential)
            if refused is not None:
                raise ApiError("authentication_error", refused)
            entry["key_id"] = key_id(ANTHROPIC.run_token(_header(self.headers)))
            if matched.route.kind == "count_tokens":
                req = check_messages_request(body, count_only=True)
                entry["model"] = req["model"]
                n = prompt_tokens(flatten(req))
                entry["status"] = 200
                self._record(entry)
                self._send_json(200, {"input_tokens": n}, request_id)
                return
            self._messages(engine, body, request_id, entry)
        except ApiError as err:
            entry["status"] = err.status
            entry["error"] = err.error_type
            self._record(entry)
            self._send_error(err, request_id)
        except _Dropped:
            pass
        except (BrokenPipeError, ConnectionResetError):
            entry["fault"] = entry.get("fault") or "client_disconnected"
            self.close_connection = True
        except Exception as exc:  # a simulator bug: answer like the API's 500, and say so
            log.exception("simulator: internal error on %s", request_id)
            entry.update(status=500, error="api_error")
            self.close_connection = True
            with contextlib.suppress(OSError):
                self._send_error(ApiError("api_error", f"simulator internal error: {exc}"),
                                 request_id)
        finally:
            if entry["status"] is not None or entry.get("fault"):
                self._record(entry)

    def _read_body_quietly(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        if 0 < length <= MAX_BODY:
            self.rfile.read(length)

    def _messages(self, engine: Engine, body: Any, request_id: str,
                  entry: dict[str, Any]) -> None:
        req = check_messages_request(body)
        stream = bool(req.get("stream"))
        entry.update(model=req["model"], stream=stream)
        blocks = flatten(req)
        n = engine.next_n()
        fault = engine.faults.pick(engine.seed, n, stream)
        # the lookup happens on arrival; its writes become visible only when the response begins,
        # so a concurrent request in the meantime misses, like the API
        scope = entry.get("cache_scope") or entry["key_id"]  # a key's cache, or a dialect's scope
        plan = engine.cache.plan(scope, str(req["model"]), blocks)
        time.sleep(engine.latency.first_byte_s(engine.seed, n))
        if fault in ("429", "529", "500", "credit"):
            entry["fault"] = fault
            raise {
                "credit": ApiError("invalid_request_error", CREDIT_MESSAGE + " Please go to "
                                   "Plans & Billing to upgrade or purchase credits."),
                "429": ApiError("rate_limit_error", "Number of request tokens has exceeded your "
                                "per-minute rate limit (simulated)",
                                {"retry-after": _fmt_seconds(engine.faults.retry_after)}),
                "529": ApiError("overloaded_error", "Overloaded (simulated)"),
                "500": ApiError("api_error", "Internal server error (simulated)"),
            }[fault]
        if fault == "disconnect" and not stream:
            entry["fault"] = fault
            entry["status"] = 0
            self._drop(entry)
        reply = engine.model.reply(req, run=self.headers.get(RUN_HEADER))
        content, stop, seq = apply_stop_sequences(reply.content, reply.stop_reason,
                                                  req.get("stop_sequences"))
        content, stop, out_tokens = fit_max_tokens(content, stop, int(req["max_tokens"]))
        entry.update(task=reply.task, episode=reply.episode, turn=reply.turn,
                     outcome=reply.outcome, reported_model=sim_label(str(req["model"])))
        message = {
            "id": "msg_sim_" + uuid.uuid4().hex[:24], "type": "message", "role": "assistant",
            "model": sim_label(str(req["model"])), "content": content, "stop_reason": stop,
            "stop_sequence": seq if stop == "stop_sequence" else None,
            "usage": {**plan.usage.as_api(out_tokens), **server_tool_use(req)},
        }
        log.info("simulator: %s %s task=%s episode=%s turn=%s -> %s", request_id,
                 message["model"], reply.task, reply.episode, reply.turn, stop)
        if stream:
            self._stream(engine, message, plan, fault, entry)
            return
        engine.cache.commit(plan)  # the response has begun: its cache entries become visible
        time.sleep(engine.latency.tokens_s(out_tokens))
        entry.update(status=200, usage=message["usage"])
        self._record(entry)
        self._send_json(200, message, entry["request_id"])

    def _stream(self, engine: Engine, message: dict[str, Any], plan: CachePlan,
                fault: str | None, entry: dict[str, Any]) -> None:
        final_usage = message["usage"]
        start_usage = {**final_usage, "output_tokens": 1}
        self.send_response(200)
        self.send_header("content-type", "text/event-stream; charset=utf-8")
        self.send_header("cache-control", "no-cache")
        self.send_header("transfer-encoding", "chunked")
        self.send_header("request-id", entry["request_id"])
        self.end_headers()
        engine.cache.commit(plan)
        entry.update(status=200, usage=start_usage)  # billed for its input from here on
        head = {**message, "content": [], "stop_reason": None, "usage": start_usage}
        self._event("message_start", {"type": "message_start", "message": head})
        self._event("ping", {"type": "ping"})
        tps = engine.latency.tokens_per_second
        for index, block in enumerate(message["content"]):
            if block["type"] == "text":
                self._event("content_block_start", {"type": "content_block_start", "index": index,
                                                    "content_block": {"type": "text", "text": ""}})
                pieces = _chunks(block["text"])
                deltas = [{"type": "text_delta", "text": p} for p in pieces]
            else:
                self._event("content_block_start", {
                    "type": "content_block_start", "index": index,
                    "content_block": {"type": "tool_use", "id": block["id"],
                                      "name": block["name"], "input": {}}})
                raw = json.dumps(block["input"])
                deltas = [{"type": "input_json_delta", "partial_json": p}
                          for p in ["", *_chunks(raw)]]
            for i, delta in enumerate(deltas):
                if index == 0 and i == 1 and fault in ("stream_error", "disconnect"):
                    self._fail_stream(fault, entry)
                    return
                self._event("content_block_delta", {"type": "content_block_delta",
                                                    "index": index, "delta": delta})
                if tps:
                    text = delta.get("text") or delta.get("partial_json") or ""
                    time.sleep(max(1, len(text) // 4) / tps)
            self._event("content_block_stop", {"type": "content_block_stop", "index": index})
        if fault in ("stream_error", "disconnect"):  # an answer too short to cut mid-block
            self._fail_stream(fault, entry)
            return
        delta_usage = {k: final_usage[k] for k in ("input_tokens", "cache_creation_input_tokens",
                                                   "cache_read_input_tokens", "output_tokens")}
        self._event("message_delta", {"type": "message_delta",
                                      "delta": {"stop_reason": message["stop_reason"],
                                                "stop_sequence": message["stop_sequence"]},
                                      "usage": delta_usage})
        entry["usage"] = final_usage
        self._record(entry)
        self._event("message_stop", {"type": "message_stop"})
        self._chunk(b"")

    def _fail_stream(self, fault: str, entry: dict[str, Any]) -> None:
        entry["fault"] = fault
        if fault == "stream_error":
            self._event("error", {"type": "error", "error": {
                "type": "overloaded_error", "message": "Overloaded (simulated)"},
                "request_id": entry["request_id"]})
            self._record(entry)
            self._chunk(b"")
            return
        self._drop(entry)

    def _event(self, name: str, data: dict[str, Any]) -> None:
        self._chunk(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode())

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()


def _chunks(text: str) -> list[str]:
    return [text[i:i + TEXT_CHUNK] for i in range(0, len(text), TEXT_CHUNK)] or [""]


def _fmt_seconds(s: float) -> str:
    return str(int(s)) if float(s).is_integer() else f"{s:g}"
