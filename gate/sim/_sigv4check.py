"""The simulator's check of an AWS Signature Version 4, written from the specification with
hashlib and hmac alone — never with botocore, which the meter signs with: a check that shares
the signer's code cannot catch the signer's canonicalisation bug (the ``:`` of a model ID such
as ``anthropic.claude-sonnet-4-5-20250929-v1:0``, which the canonical URI escapes as ``%3A``).

The steps are AWS's ("Create a canonical request for Signature Version 4", and the test suite's
files: ``tests/data/sigv4/``): the canonical request is the method; the path as it came on the
wire with dot segments and empty segments removed and then every byte but the unreserved ones
(``A-Z a-z 0-9 - _ . ~``) and ``/`` percent-encoded (so an escape the client sent is escaped
once more: ``%3A`` → ``%253A``, AWS's rule for every service but S3); the query's pairs, decoded
and encoded again the same way, sorted; each signed header's lower-case name and its values
trimmed, inner spaces collapsed, repeated headers joined by ``,``; the signed header names; and
the body's SHA-256 (``x-amz-content-sha256`` when sent, which must then be the body's). The
string to sign is ``AWS4-HMAC-SHA256``, the ``x-amz-date``, the scope and the canonical
request's SHA-256; the key is HMAC-SHA256 chained over ``AWS4<secret>``, the date, the region,
the service and ``aws4_request``.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import hmac
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from urllib.parse import unquote_to_bytes

ALGORITHM = "AWS4-HMAC-SHA256"
MAX_SKEW = _dt.timedelta(minutes=5)  # AWS refuses a request signed further from its clock
_UNRESERVED = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.~")
_AUTH = re.compile(r"AWS4-HMAC-SHA256\s+Credential=(?P<cred>[^,\s]+),\s*"
                   r"SignedHeaders=(?P<signed>[^,\s]+),\s*Signature=(?P<sig>[0-9a-f]{64})\s*")


class SignatureError(Exception):
    """A request whose signature does not hold. ``kind``: AWS's error type for it."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message


@dataclass(frozen=True)
class Signed:
    """What a valid signature says: whose key, for which region and service, and the
    canonical request it covered."""

    access_key: str
    region: str
    service: str
    canonical_request: str


def uri_encode(data: bytes, keep: bytes = b"") -> str:
    return "".join(chr(b) if b in _UNRESERVED or b in keep else f"%{b:02X}" for b in data)


def canonical_uri(path: str) -> str:
    """The path as received, dot and empty segments removed, each byte percent-encoded but the
    unreserved ones and ``/``."""
    out: list[str] = []
    for seg in path.split("/"):
        if seg in ("", "."):
            continue
        if seg == "..":
            if out:
                out.pop()
            continue
        out.append(seg)
    normal = "/" + "/".join(out) + ("/" if path.endswith("/") and out else "")
    return uri_encode(normal.encode("utf-8"), b"/")


def canonical_query(query: str) -> str:
    pairs = []
    for part in query.split("&") if query else []:
        key, _, value = part.partition("=")
        pairs.append((uri_encode(unquote_to_bytes(key)), uri_encode(unquote_to_bytes(value))))
    return "&".join(f"{k}={v}" for k, v in sorted(pairs))


def canonical_request(method: str, target: str, headers: Sequence[tuple[str, str]],
                      signed: Sequence[str], payload_hash: str) -> str:
    path, _, query = target.partition("?")
    lines = [method.upper(), canonical_uri(path), canonical_query(query)]
    for name in signed:
        values = [" ".join(v.split()) for k, v in headers if k.lower() == name]
        lines.append(f"{name}:{','.join(values)}")
    return "\n".join([*lines, "", ";".join(signed), payload_hash])


def signing_key(secret: str, date: str, region: str, service: str) -> bytes:
    key = ("AWS4" + secret).encode("utf-8")
    for part in (date, region, service, "aws4_request"):
        key = hmac.new(key, part.encode("utf-8"), hashlib.sha256).digest()
    return key


def verify(method: str, target: str, headers: Sequence[tuple[str, str]], body: bytes,
           secrets: Callable[[str], tuple[str, str | None] | None],
           now: _dt.datetime | None = None, service: str | None = None) -> Signed:
    """Check the SigV4 signature of a request as it arrived (``target``: the path and query as
    on the request line). ``secrets(access_key)`` is the key's ``(secret, session token)`` or
    None for a key not known. ``now``: the time to check ``x-amz-date`` against (None: not
    checked). Raises ``SignatureError`` with AWS's error type."""
    found = _header(headers, "authorization")
    match = _AUTH.fullmatch(found or "")
    if match is None:
        raise SignatureError("MissingAuthenticationTokenException",
                             "Missing Authentication Token" if not found else
                             "Authorization header is not AWS4-HMAC-SHA256")
    cred = match["cred"].split("/")
    if len(cred) != 5 or cred[4] != "aws4_request":
        raise SignatureError("IncompleteSignatureException", f"bad credential scope {cred!r}")
    access_key, date, region, scope_service, _ = cred
    if service is not None and scope_service != service:
        raise SignatureError("InvalidSignatureException",
                             f"credential scope names service {scope_service!r}, not {service!r}")
    known = secrets(access_key)
    if known is None:
        raise SignatureError("UnrecognizedClientException",
                             "The security token included in the request is invalid.")
    secret, token = known
    signed = match["signed"].split(";")
    if signed != sorted(signed) or "host" not in signed:
        raise SignatureError("InvalidSignatureException",
                             "SignedHeaders must be sorted and include host")
    stamp = _header(headers, "x-amz-date") or ""
    if "x-amz-date" not in signed or not stamp.startswith(date) or len(stamp) != 16:
        raise SignatureError("IncompleteSignatureException", "x-amz-date missing or unsigned")
    if now is not None:
        when = _dt.datetime.strptime(stamp, "%Y%m%dT%H%M%SZ").replace(tzinfo=_dt.UTC)
        if abs(now - when) > MAX_SKEW:
            raise SignatureError("InvalidSignatureException", "Signature expired: " + stamp)
    if token is not None and (_header(headers, "x-amz-security-token") != token
                              or "x-amz-security-token" not in signed):
        raise SignatureError("UnrecognizedClientException",
                             "The security token included in the request is invalid.")
    body_hash = hashlib.sha256(body).hexdigest()
    sent_hash = _header(headers, "x-amz-content-sha256")
    if sent_hash is not None and sent_hash != body_hash:
        raise SignatureError("InvalidSignatureException", "x-amz-content-sha256 is not the body's")
    creq = canonical_request(method, target, headers, signed, body_hash)
    to_sign = "\n".join([ALGORITHM, stamp, f"{date}/{region}/{scope_service}/aws4_request",
                         hashlib.sha256(creq.encode("utf-8")).hexdigest()])
    want = hmac.new(signing_key(secret, date, region, scope_service), to_sign.encode("utf-8"),
                    hashlib.sha256).hexdigest()
    if not hmac.compare_digest(want, match["sig"]):
        raise SignatureError("InvalidSignatureException",
                             "The request signature we calculated does not match the signature "
                             "you provided. Check your AWS Secret Access Key and signing "
                             "method.")
    return Signed(access_key, region, scope_service, creq)


def _header(headers: Sequence[tuple[str, str]] | Mapping[str, str], name: str) -> str | None:
    items = headers.items() if isinstance(headers, Mapping) else headers
    return next((v for k, v in items if k.lower() == name), None)
