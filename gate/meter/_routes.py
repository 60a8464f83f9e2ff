"""What the meter forwards: the upstream's allow-list of routes (``Upstream.routes``), matched
on the path exactly as it will be sent, with a plain query string, and the headers it drops or
replaces."""

from __future__ import annotations

import json
import re
from typing import Any

from gate.upstream import Matched, Upstream

_HOP_BY_HOP = {
    "connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te", "trailers",
    "transfer-encoding", "upgrade", "host", "content-length", "accept-encoding",
}
_RESPONSE_DROP = {"connection", "keep-alive", "transfer-encoding", "content-length",
                  "content-encoding"}
MAX_REQUEST_BYTES = 64 * 1024 * 1024  # the model APIs take at most 32 MB
_QCHAR = r"(?:[A-Za-z0-9._~+-]|%[0-9A-Fa-f]{2})"
_QUERY = re.compile(rf"{_QCHAR}+(?:={_QCHAR}*)?")  # one key=value pair of a plain query


def route(upstream: Upstream, method: str, rest: str, query: str) -> Matched | None:
    """The upstream's route of a request (path relative to the run's root), or ``None`` to
    refuse.

    ``rest`` must already be exactly an allowed path: the meter decides on the very string it
    sends, so nothing an HTTP library normalises (``..``, ``.``, ``%6d``, ``//``) can turn a
    refused path into an allowed one or the other way round. The query string may only hold
    plain ``key=value`` pairs (``beta=true``).
    """
    if query and not all(_QUERY.fullmatch(part) for part in query.split("&")):
        return None
    return upstream.match(method, rest)


#: the gate's own header namespace: what an agent sends in it is dropped, never forwarded
#: next to (or instead of) what the meter sets
GATE_HEADER_PREFIX = "x-gate-"


def forwarded_headers(header_list: list[tuple[str, str]], upstream: Upstream
                      ) -> dict[str, str]:
    """The agent's headers that go upstream: hop-by-hop ones, those a credential or the run's
    token may come in (the upstream's) and the gate's own (``X-Gate-*``, in any case)
    dropped; the meter adds its own after this."""
    drop = _HOP_BY_HOP | {h.lower() for h in upstream.credential_headers} \
        | ({upstream.token_header.lower()} if upstream.token_header else set())
    return {k: v for k, v in header_list
            if (low := k.lower()) not in drop and not low.startswith(GATE_HEADER_PREFIX)}


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
