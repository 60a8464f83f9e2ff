"""What the meter forwards: the allow-list of endpoints, matched on the path exactly as it will
be sent, and the headers it drops or replaces."""

from __future__ import annotations

import re

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
