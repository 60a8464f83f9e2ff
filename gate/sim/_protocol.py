"""The Messages API's error shapes and request checks, as the real API reports them."""

from __future__ import annotations

import re
from typing import Any

from gate.meter import offered_server_tools
from gate.upstream import SERVER_TOOLS

ERROR_STATUS: dict[str, int] = {
    "invalid_request_error": 400,
    "authentication_error": 401,
    "permission_error": 403,
    "not_found_error": 404,
    "request_too_large": 413,
    "rate_limit_error": 429,
    "api_error": 500,
    "overloaded_error": 529,
}


class ApiError(Exception):
    """An error the server answers with ``{"type":"error","error":{type,message},request_id}``."""

    def __init__(self, error_type: str, message: str, headers: dict[str, str] | None = None):
        super().__init__(message)
        self.error_type = error_type
        self.message = message
        self.status = ERROR_STATUS[error_type]
        self.headers = headers or {}


def invalid(message: str) -> ApiError:
    return ApiError("invalid_request_error", message)


def error_body(error_type: str, message: str, request_id: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": error_type, "message": message},
            "request_id": request_id}


_TAG = re.compile(r"[a-z][a-z0-9_]{0,63}")  # what a content block's type can be


def server_tool_use(req: dict[str, Any]) -> dict[str, Any]:
    """``usage.server_tool_use`` of an answer to ``req``: each server tool it offers that is
    billed per use is used ``max_uses`` times (1 if it sets none), as a model that searched
    as often as it was let; nothing when it offers none."""
    counts: dict[str, int] = {}
    for server, named in offered_server_tools(req, SERVER_TOOLS):
        if server.price_key is None:
            continue
        tool = next(t for t in req["tools"] if isinstance(t, dict) and t.get("type") == named)
        uses = tool.get("max_uses")
        counts[server.price_key] = counts.get(server.price_key, 0) + (
            uses if isinstance(uses, int) and not isinstance(uses, bool) and uses > 0 else 1)
    return {"server_tool_use": counts} if counts else {}


def check_messages_request(body: Any, *, count_only: bool = False) -> dict[str, Any]:
    """Reject what the API rejects; tolerate (ignore) fields the simulator does not model."""
    if not isinstance(body, dict):
        raise invalid("request body must be a JSON object")
    model = body.get("model")
    if not isinstance(model, str) or not model:
        raise invalid("model: Field required")
    if not count_only:
        mt = body.get("max_tokens")
        if isinstance(mt, bool) or not isinstance(mt, int):
            raise invalid("max_tokens: Field required")
        if mt < 1:
            raise invalid("max_tokens: Input should be greater than or equal to 1")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise invalid("messages: at least one message is required")
    for i, m in enumerate(messages):
        # "system" mid-conversation is a beta Claude Code uses; tolerate it like the API does
        if not isinstance(m, dict) or m.get("role") not in ("user", "assistant", "system"):
            raise invalid(f"messages.{i}.role: Input should be 'user' or 'assistant'")
        content = m.get("content")
        if isinstance(content, list):
            for j, b in enumerate(content):
                if not isinstance(b, dict) or not isinstance(b.get("type"), str):
                    raise invalid(f"messages.{i}.content.{j}.type: Field required")
                if not _TAG.fullmatch(b["type"]):  # quoted back, as the API quotes it
                    raise invalid(f"messages.{i}.content.{j}: Input tag {b['type'][:200]!r} "
                                  "found using 'type' does not match any of the expected tags")
        elif not isinstance(content, str):
            raise invalid(f"messages.{i}.content: Input should be a valid string or list")
    system = body.get("system")
    if system is not None and not isinstance(system, str | list):
        raise invalid("system: Input should be a valid string or list")
    tools = body.get("tools")
    if tools is not None:
        if not isinstance(tools, list) or not all(isinstance(t, dict) for t in tools):
            raise invalid("tools: Input should be a valid list")
        for i, t in enumerate(tools):
            if not isinstance(t.get("name"), str):
                raise invalid(f"tools.{i}.name: Field required")
    return body
