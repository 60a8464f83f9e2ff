"""The simulator's Vertex AI dialect: the same model behind Vertex's paths, its bearer token and
its error shapes (what the clients send: docs/upstreams.md, "Google Vertex AI").

``POST /v1/projects/{project}/locations/{region}/publishers/anthropic/models/{model}:rawPredict``
answers JSON, ``…:streamRawPredict`` the Messages API's SSE events, ``…/models/count-tokens:
rawPredict`` a count. The model is the path's; the body must carry ``anthropic_version`` (and
need not carry ``model``). A request needs ``Authorization: Bearer`` (an ``x-api-key`` is not
how Google authenticates: ``Vertex.simulator_refusal`` in gate/upstream). Errors come in
Google's error JSON (``{"error": {"code", "message", "status"}}``): a request refused as made
is ``400 INVALID_ARGUMENT``, a rate limit ``429 RESOURCE_EXHAUSTED``, an overload ``503
UNAVAILABLE``; a stream that fails after it began carries the Messages API's ``error`` event,
as Vertex relays the model's stream.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gate.sim._cache import flatten, prompt_tokens
from gate.sim._ledger import key_id
from gate.sim._protocol import ApiError, check_messages_request, invalid
from gate.sim._server import Engine, _Handler, _header
from gate.upstream import VERTEX, VertexCall, parse_vertex_call

#: where every Vertex path starts
ROOT = "/v1/projects/"

#: the Messages API's error type → Google's (HTTP status, canonical status)
GOOGLE_ERRORS: Mapping[str, tuple[int, str]] = {
    "invalid_request_error": (400, "INVALID_ARGUMENT"),
    "request_too_large": (400, "INVALID_ARGUMENT"),
    "authentication_error": (401, "UNAUTHENTICATED"),
    "permission_error": (403, "PERMISSION_DENIED"),
    "not_found_error": (404, "NOT_FOUND"),
    "rate_limit_error": (429, "RESOURCE_EXHAUSTED"),
    "api_error": (500, "INTERNAL"),
    "overloaded_error": (503, "UNAVAILABLE"),
}


def vertex_call(method: str, path: str) -> VertexCall | None:
    """The Vertex call a request names (``None``: not a Vertex path). A Vertex path that is
    no call the simulator serves is a 404 ``NOT_FOUND``."""
    if not path.startswith(ROOT):
        return None
    call = parse_vertex_call(path[1:]) if method == "POST" else None
    if call is None:
        raise ApiError("not_found_error", f"Not found: {method} {path[:200]}")
    return call


def messages_request(call: VertexCall, body: Any) -> dict[str, Any]:
    """The Messages request a Vertex body is: the path's model, ``anthropic_version`` checked
    and dropped. A count's model is the body's."""
    if not isinstance(body, dict):
        raise invalid("request body must be a JSON object")
    version = body.get("anthropic_version")
    if not isinstance(version, str) or not version:
        raise invalid("anthropic_version: Field required")
    req = {k: v for k, v in body.items() if k != "anthropic_version"}
    if not call.count:
        req["model"] = call.model
        if call.stream and not req.get("stream"):
            raise invalid("streamRawPredict needs \"stream\": true in the body")
    return req


def google_error(err: ApiError) -> tuple[int, dict[str, Any]]:
    """(HTTP status, body) of ``err`` as Vertex answers it."""
    status, word = GOOGLE_ERRORS.get(err.error_type, (err.status, "UNKNOWN"))
    return status, {"error": {"code": status, "message": err.message, "status": word}}


class VertexDialect:
    """What the simulator's server asks of Vertex's wire format (``gate/sim/_server.py``,
    ``Dialect``)."""

    def serves(self, path: str) -> bool:
        return path.startswith(ROOT)

    def handle(self, h: _Handler, engine: Engine, path: str, request_id: str,
               entry: dict[str, Any]) -> None:
        """Answer a Vertex request: checked as Vertex checks it (the path, the bearer token:
        the simulator's own credential when it stands in for Vertex), then the same model."""
        call = vertex_call(h.command, path)  # a Vertex path it does not serve: 404
        assert call is not None
        body = h._read_body()
        header = _header(h.headers)
        refused = VERTEX.simulator_refusal(header, h.server.credential
                                           if h.server.auth is VERTEX else None)
        if refused is not None:
            raise ApiError("authentication_error", refused)
        entry["key_id"] = key_id(VERTEX.run_token(header))
        # Vertex caches per project, whatever access token a request carries (one an hour)
        entry["cache_scope"] = f"vertex:{call.project}"
        req = messages_request(call, body)
        if not call.count:
            h._messages(engine, req, request_id, entry)
            return
        req = check_messages_request(req, count_only=True)
        entry.update(model=req["model"], status=200)
        h._record(entry)
        h._send_json(200, {"input_tokens": prompt_tokens(flatten(req))}, request_id)

    def error(self, err: ApiError) -> tuple[int, dict[str, Any]]:
        return google_error(err)


DIALECT = VertexDialect()
