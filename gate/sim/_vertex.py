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

from gate.sim._protocol import ApiError, invalid
from gate.upstream import VertexCall, parse_vertex_call

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
