"""The simulator speaks Amazon Bedrock: InvokeModel as the SDK's ``AnthropicBedrock`` and Claude
Code call it (docs/upstreams.md), in front of the Messages simulator.

A loopback server takes ``POST /model/{id}/invoke`` and ``/invoke-with-response-stream``,
checks the request's SigV4 signature with the simulator's own check (``_sigv4check.py``:
hashlib and hmac from the specification, never the botocore the meter signs with) or its
Bedrock API key (a bearer token), checks the body as Bedrock does (``anthropic_version``
required; ``model`` and ``stream`` are not Bedrock's keys), and asks the Messages simulator
behind it the same question: the model named by the ID (``model_name``), the body's
``anthropic_beta`` as the ``anthropic-beta`` header. So the model's behaviour, its prompt cache
(``cache_control``: ephemeral, ``ttl`` 5m or 1h, as the Messages API takes them) and its usage
fields are the Messages simulator's, token for token. The answer comes back as Bedrock gives it:
the JSON as is, with Bedrock's token-count headers; a stream as AWS event-stream frames (each
Messages event, base64, in a ``chunk`` frame; the last event carries
``amazon-bedrock-invocationMetrics``); an error as a status, an ``x-amzn-ErrorType`` and
``{"message"}`` (a stream's as an ``exception`` frame). Faults the Messages simulator injects
come through as Bedrock's (a 429 as ``ThrottlingException``, a 529 as
``ServiceUnavailableException``, a dropped connection as a dropped connection).

Claude Code's first request, ``GET /inference-profiles``, gets an empty list.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import logging
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

from gate.errors import GateError
from gate.sim._model import RUN_HEADER
from gate.sim._sigv4check import SignatureError, verify
from gate.upstream import (
    BEDROCK,
    CREDIT_MESSAGE,
    SIM_ACCESS_KEY,
    chunk_frame,
    exception_frame,
    model_name,
)

log = logging.getLogger("gate.sim")

MAX_BODY = 20 * 1024 * 1024  # Bedrock's request limit for InvokeModel
_NAMESPACE = ":http://internal.amazon.com/coral/com.amazon.bedrock/"
#: the Messages API's error type → Bedrock's (status, x-amzn-ErrorType)
ERRORS: Mapping[str, tuple[int, str]] = {
    "invalid_request_error": (400, "ValidationException"),
    "request_too_large": (400, "ValidationException"),
    "not_found_error": (404, "ResourceNotFoundException"),
    "authentication_error": (403, "UnrecognizedClientException"),
    "permission_error": (403, "AccessDeniedException"),
    "rate_limit_error": (429, "ThrottlingException"),
    "api_error": (500, "InternalServerException"),
    "overloaded_error": (503, "ServiceUnavailableException"),
}
#: ... and in a stream (an ``exception`` frame's ``:exception-type``)
STREAM_ERRORS: Mapping[str, str] = {
    "rate_limit_error": "throttlingException",
    "overloaded_error": "serviceUnavailableException",
    "api_error": "internalServerException",
}
_BODY_KEYS_REFUSED = ("model", "stream")
#: the secret of ``SIM_ACCESS_KEY`` when the simulator is given no credential
DEFAULT_SECRET = "gate-simulator"


class BedrockError(Exception):
    def __init__(self, status: int, kind: str, message: str) -> None:
        super().__init__(message)
        self.status, self.kind, self.message = status, kind, message


class _Dropped(Exception):
    """The Messages simulator dropped the connection: drop the client's too."""


class BedrockFront(ThreadingHTTPServer):
    """Bedrock's InvokeModel on loopback, in front of the Messages simulator at ``inner``
    (reached with ``inner_key``). ``credential``: the secret of the simulator's AWS key
    (``SIM_ACCESS_KEY``), and the Bedrock API key it accepts as a bearer token; None: any
    bearer token, and SigV4 with ``DEFAULT_SECRET``."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, inner: str, inner_key: str, credential: str | None,
                 clock: Callable[[], float] = time.time, host: str = "127.0.0.1",
                 port: int = 0) -> None:
        super().__init__((host, port), _Handler)
        self.inner = urlsplit(inner)
        self.inner_key = inner_key
        self.credential = credential
        self.clock = clock
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host!s}:{port}"

    def secret(self, access_key: str) -> tuple[str, str | None] | None:
        secret = self.credential or DEFAULT_SECRET
        return (secret, None) if access_key == SIM_ACCESS_KEY else None

    def start(self) -> BedrockFront:
        self._thread = threading.Thread(target=self.serve_forever, args=(0.05,),
                                        name="gate-simulator-bedrock", daemon=True)
        self._thread.start()
        log.info("simulator: serving Bedrock's InvokeModel at %s", self.base_url)
        return self

    def close(self) -> None:
        self.shutdown()
        self.server_close()
        if self._thread is not None:
            self._thread.join(5)

    def handle_error(self, request: Any, client_address: Any) -> None:
        log.debug("simulator (bedrock): connection error from %s", client_address,
                  exc_info=True)


def start_front(inner: str, inner_key: str, credential: str | None,
                clock: Callable[[], float], host: str, port: int) -> BedrockFront:
    """The Bedrock front of a started Messages simulator at ``inner``."""
    try:
        return BedrockFront(inner, inner_key, credential, clock, host, port).start()
    except OSError as exc:
        raise GateError(f"simulator: cannot listen on {host}:{port}: {exc}") from None


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "gate-simulator-bedrock"
    sys_version = ""
    disable_nagle_algorithm = True
    server: BedrockFront

    def log_message(self, format: str, *args: Any) -> None:
        log.debug("simulator (bedrock): " + format, *args)

    def do_GET(self) -> None:
        self._serve()

    def do_POST(self) -> None:
        self._serve()

    def _serve(self) -> None:
        request_id = str(uuid.uuid4())
        try:
            body = self._read_body()
            self._authenticate(body)
            path = self.path.split("?", 1)[0]
            matched = BEDROCK.match(self.command, path[1:])
            if matched is None:
                raise BedrockError(404, "UnknownOperationException",
                                   f"Unknown operation {self.command} {path}")
            if matched.route.kind == "models":
                self._send(200, {"inferenceProfileSummaries": []}, request_id)
                return
            self._invoke(str(matched.model), bool(matched.route.stream), body, request_id)
        except BedrockError as err:
            self._send(err.status, {"message": err.message}, request_id,
                       {"x-amzn-ErrorType": err.kind + _NAMESPACE})
        except _Dropped:
            self.close_connection = True
            with contextlib.suppress(OSError):
                self.connection.shutdown(2)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    # -- the request ------------------------------------------------------------------------
    def _read_body(self) -> bytes:
        length = int(self.headers.get("content-length") or 0)
        if length > MAX_BODY:
            self.close_connection = True
            raise BedrockError(400, "ValidationException", "Input is too long for requested model.")
        return self.rfile.read(length) if length else b""

    def _authenticate(self, body: bytes) -> None:
        auth = self.headers.get("authorization") or ""
        if auth.lower().startswith("bearer "):
            given = auth[7:].strip()
            if not given or given != (self.server.credential or given):
                raise BedrockError(403, "UnrecognizedClientException",
                                   "The security token included in the request is invalid.")
            return
        try:
            verify(self.command, self.path, list(self.headers.items()), body,
                   self.server.secret, now=_utc(time.time()), service="bedrock")
        except SignatureError as err:
            raise BedrockError(403, err.kind, err.message) from None

    def _invoke(self, model_id: str, stream: bool, raw: bytes, request_id: str) -> None:
        try:
            body = json.loads(raw)
        except (ValueError, UnicodeDecodeError):
            raise BedrockError(400, "ValidationException", "Malformed input request, "
                               "please reformat your input and try again.") from None
        if not isinstance(body, dict):
            raise BedrockError(400, "ValidationException", "Malformed input request: "
                               "expected type: JSONObject")
        if not isinstance(body.get("anthropic_version"), str):
            raise BedrockError(400, "ValidationException", "Malformed input request: "
                               "#: required key [anthropic_version] not found")
        for key in _BODY_KEYS_REFUSED:
            if key in body:
                raise BedrockError(400, "ValidationException", "Malformed input request: "
                                   f"#: extraneous key [{key}] is not permitted")
        betas = body.pop("anthropic_beta", None)
        body.pop("anthropic_version")
        request = {**body, "model": model_name(model_id), "stream": stream}
        headers = {"content-type": "application/json", "x-api-key": self.server.inner_key,
                   "anthropic-version": "2023-06-01"}
        if isinstance(betas, list) and betas:
            headers["anthropic-beta"] = ",".join(str(b) for b in betas)
        if self.headers.get(RUN_HEADER):
            headers[RUN_HEADER] = str(self.headers.get(RUN_HEADER))
        inner = self.server.inner
        conn = http.client.HTTPConnection(inner.hostname or "127.0.0.1", inner.port or 80,
                                          timeout=600)
        started = time.monotonic()
        try:
            try:
                conn.request("POST", "/v1/messages", json.dumps(request).encode(), headers)
                answer = conn.getresponse()
            except (OSError, http.client.HTTPException):
                raise _Dropped from None
            if answer.status >= 400:
                self._inner_error(answer.status, answer.read(), request_id)
            elif stream:
                self._relay_stream(answer, request_id, started)
            else:
                self._relay_json(answer, request_id, started)
        finally:
            conn.close()

    # -- the answer -------------------------------------------------------------------------
    def _inner_error(self, status: int, raw: bytes, request_id: str) -> None:
        try:
            err = json.loads(raw)["error"]
            kind, message = str(err["type"]), str(err.get("message", ""))
        except (ValueError, KeyError, TypeError):
            kind, message = "api_error", f"HTTP {status}"
        if kind == "invalid_request_error" and message.startswith(CREDIT_MESSAGE):
            code, name = 403, "AccessDeniedException"  # Bedrock bills the AWS account
        else:
            code, name = ERRORS.get(kind, (500, "InternalServerException"))
        raise BedrockError(code, name, message)

    def _relay_json(self, answer: http.client.HTTPResponse, request_id: str,
                    started: float) -> None:
        try:
            raw = answer.read()
        except (OSError, http.client.HTTPException):
            raise _Dropped from None
        usage = json.loads(raw).get("usage") or {}
        self._send_raw(200, raw, request_id, {
            "X-Amzn-Bedrock-Input-Token-Count": str(usage.get("input_tokens", 0)),
            "X-Amzn-Bedrock-Output-Token-Count": str(usage.get("output_tokens", 0)),
            "X-Amzn-Bedrock-Cache-Read-Input-Token-Count":
                str(usage.get("cache_read_input_tokens") or 0),
            "X-Amzn-Bedrock-Cache-Write-Input-Token-Count":
                str(usage.get("cache_creation_input_tokens") or 0),
            "X-Amzn-Bedrock-Invocation-Latency": str(int((time.monotonic() - started) * 1000)),
        })

    def _relay_stream(self, answer: http.client.HTTPResponse, request_id: str,
                      started: float) -> None:
        self.send_response(200)
        self.send_header("content-type", "application/vnd.amazon.eventstream")
        self.send_header("x-amzn-bedrock-content-type", "application/json")
        self.send_header("x-amzn-requestid", request_id)
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        usage: dict[str, Any] = {}
        first: float | None = None
        buf = b""
        while True:
            try:
                chunk = answer.read1(65536)
            except (OSError, http.client.HTTPException):
                chunk = b""
            if not chunk:
                raise _Dropped  # the Messages simulator's stream ended without message_stop
            buf += chunk
            while b"\n\n" in buf:
                block, buf = buf.split(b"\n\n", 1)
                event = _sse_data(block)
                if event is None:
                    continue
                first = first if first is not None else time.monotonic()
                kind = event.get("type")
                if kind == "message_start":
                    usage.update(event.get("message", {}).get("usage") or {})
                elif kind == "message_delta":
                    usage.update(event.get("usage") or {})
                elif kind == "message_stop":
                    event["amazon-bedrock-invocationMetrics"] = _metrics(usage, started, first)
                if kind == "error":
                    err = event.get("error") or {}
                    self._chunk(exception_frame(
                        STREAM_ERRORS.get(str(err.get("type")), "modelStreamErrorException"),
                        str(err.get("message", ""))))
                    self._chunk(b"")
                    return
                self._chunk(chunk_frame(event))
                if kind == "message_stop":
                    self._chunk(b"")
                    return

    def _send(self, status: int, body: dict[str, Any], request_id: str,
              headers: Mapping[str, str] | None = None) -> None:
        self._send_raw(status, json.dumps(body).encode(), request_id, headers)

    def _send_raw(self, status: int, data: bytes, request_id: str,
                  headers: Mapping[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.send_header("x-amzn-requestid", request_id)
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)
        self.wfile.flush()

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()


def _sse_data(block: bytes) -> dict[str, Any] | None:
    data = b"\n".join(line[5:].lstrip() for line in block.split(b"\n")
                      if line.startswith(b"data:"))
    if not data:
        return None
    found = json.loads(data)
    return found if isinstance(found, dict) else None


def _metrics(usage: Mapping[str, Any], started: float, first: float | None) -> dict[str, int]:
    now = time.monotonic()
    return {"inputTokenCount": int(usage.get("input_tokens") or 0),
            "outputTokenCount": int(usage.get("output_tokens") or 0),
            "invocationLatency": int((now - started) * 1000),
            "firstByteLatency": int(((first or now) - started) * 1000),
            "cacheReadInputTokenCount": int(usage.get("cache_read_input_tokens") or 0),
            "cacheWriteInputTokenCount": int(usage.get("cache_creation_input_tokens") or 0)}


def _utc(seconds: float) -> Any:
    import datetime as _dt

    return _dt.datetime.fromtimestamp(seconds, _dt.UTC)
