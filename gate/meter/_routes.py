"""What the meter forwards: the allow-list of endpoints, matched on the path exactly as it will
be sent, and the headers it drops or replaces."""

from __future__ import annotations

import json
import re
from typing import Any

PUBLIC_API = "https://api.anthropic.com"
_HOP_BY_HOP = {
    "connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te", "trailers",
    "transfer-encoding", "upgrade", "host", "content-length", "accept-encoding",
    "x-api-key", "authorization",
}
_RESPONSE_DROP = {"connection", "keep-alive", "transfer-encoding", "content-length",
                  "content-encoding"}
MAX_REQUEST_BYTES = 64 * 1024 * 1024  # the Messages API takes at most 32 MB
MESSAGES = "v1/messages"  # the one billable endpoint: every forwarded request to it is metered
COUNT_TOKENS = "v1/messages/count_tokens"  # free: what a request's prompt would count
# (method, path relative to the API root) the meter forwards; the rest is refused with a 403
ENDPOINTS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("POST", re.compile(r"v1/messages")),
    ("POST", re.compile(r"v1/messages/count_tokens")),
    ("GET", re.compile(r"v1/models")),
    ("GET", re.compile(r"v1/models/[A-Za-z0-9][A-Za-z0-9._-]{0,127}")),
)
_QCHAR = r"(?:[A-Za-z0-9._~+-]|%[0-9A-Fa-f]{2})"
_QUERY = re.compile(rf"{_QCHAR}+(?:={_QCHAR}*)?")  # one key=value pair of a plain query


def route(method: str, rest: str, query: str) -> str | None:
    """The endpoint (path relative to the API root) to forward to, or ``None`` to refuse.

    ``rest`` must already be exactly an allowed path: the meter decides on the very string it
    sends, so nothing an HTTP library normalises (``..``, ``.``, ``%6d``, ``//``) can turn a
    refused path into an allowed one or the other way round. The query string may only hold
    plain ``key=value`` pairs (``beta=true``).
    """
    if query and not all(_QUERY.fullmatch(part) for part in query.split("&")):
        return None
    for allowed_method, pattern in ENDPOINTS:
        if method == allowed_method and pattern.fullmatch(rest):
            return rest
    return None


#: the gate's own header namespace: what an agent sends in it is dropped, never forwarded
#: next to (or instead of) what the meter sets
GATE_HEADER_PREFIX = "x-gate-"


def forwarded_headers(header_list: list[tuple[str, str]]) -> dict[str, str]:
    """The agent's headers that go upstream: hop-by-hop ones, the credential's and the gate's
    own (``X-Gate-*``, in any case) dropped; the meter adds its own after this."""
    return {k: v for k, v in header_list
            if (low := k.lower()) not in _HOP_BY_HOP and not low.startswith(GATE_HEADER_PREFIX)}


class AmbiguousBody(ValueError):
    """A request body the meter will not forward: not JSON, or JSON with a repeated key."""


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise AmbiguousBody(f"duplicate key {key[:60]!r} in the JSON body")
            seen.add(key)
    return obj


def parse_body(body: bytes) -> Any:
    """The request body as the meter meters it: strict UTF-8 JSON in which no object repeats
    a key, at any depth. Parsers differ on a repeated key (Python's keeps the last, others the
    first or refuse), so a body that holds one could be priced as one model and run as another;
    such a body, or one that is not JSON at all, is ``AmbiguousBody``. Empty: ``{}``."""
    if not body:
        return {}
    try:
        return json.loads(body.decode("utf-8"), object_pairs_hook=_unique_keys)
    except AmbiguousBody:
        raise
    except ValueError as exc:  # UnicodeDecodeError and JSONDecodeError are ValueErrors
        raise AmbiguousBody(f"the body is not valid UTF-8 JSON ({str(exc)[:80]})") from None
