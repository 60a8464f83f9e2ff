"""AWS event-stream framing (``application/vnd.amazon.eventstream``), as Bedrock's
``InvokeModelWithResponseStream`` answers: an encoder and an incremental decoder, both CRCs
checked.

A frame (a *message*) is a 12-byte prelude — total length, headers length (both big-endian
uint32) and the CRC32 of those 8 bytes — then the headers, the payload, and the CRC32 of
everything before it. A header is a 1-byte name length, the name, a 1-byte type and the value
(type 7, a string: a 2-byte length and UTF-8 bytes; the others have fixed sizes or a 2-byte
length). Bedrock sends ``:message-type`` ``event`` with ``:event-type`` ``chunk`` and a JSON
payload ``{"bytes": "<base64 of one Messages-API stream event's JSON>"}`` (other keys
tolerated), or ``:message-type`` ``exception`` with ``:exception-type`` (``throttlingException``,
``modelStreamErrorException``, ...) and a JSON payload ``{"message": ...}``.

The layout is the AWS SDKs' (botocore's ``botocore/eventstream.py`` decodes it; the tests check
this module against frames botocore decoded). A frame whose CRC does not match is refused:
``EventStreamError``.
"""

from __future__ import annotations

import base64
import binascii
import json
import struct
import uuid
import zlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

PRELUDE = 12  # total length, headers length, prelude CRC
TRAILER = 4  # message CRC
#: what a frame may be at most (botocore's limits: 16 MB of payload, 128 kB of headers)
MAX_PAYLOAD = 16 * 1024 ** 2
MAX_HEADERS = 128 * 1024
CONTENT_TYPE = "application/vnd.amazon.eventstream"

HeaderValue = bool | int | bytes | str | uuid.UUID


class EventStreamError(ValueError):
    """Bytes that are not a valid event-stream frame (a CRC that does not match, a length out
    of bounds, a header of an unknown type)."""


@dataclass(frozen=True)
class Frame:
    """One decoded message: its headers (name → value) and its payload."""

    headers: Mapping[str, HeaderValue]
    payload: bytes

    @property
    def message_type(self) -> str:
        return str(self.headers.get(":message-type", ""))


def _crc(data: bytes, start: int = 0) -> int:
    return zlib.crc32(data, start) & 0xFFFFFFFF


# header value types (the spec's numbers): fixed-size ones as struct formats
_FIXED = {2: ">b", 3: ">h", 4: ">i", 5: ">q", 8: ">q"}


def _encode_header(name: str, value: HeaderValue) -> bytes:
    raw = name.encode("utf-8")
    if not 0 < len(raw) < 256:
        raise EventStreamError(f"header name {name[:40]!r}: 1 to 255 bytes")
    out = bytes([len(raw)]) + raw
    if isinstance(value, bool):
        return out + bytes([0 if value else 1])
    if isinstance(value, int):
        return out + bytes([4]) + struct.pack(">i", value)
    if isinstance(value, uuid.UUID):
        return out + bytes([9]) + value.bytes
    data, kind = (value, 6) if isinstance(value, bytes) else (value.encode("utf-8"), 7)
    if len(data) > 0x7FFF:
        raise EventStreamError(f"header {name[:40]!r}: value over 32 kB")
    return out + bytes([kind]) + struct.pack(">H", len(data)) + data


def encode(headers: Mapping[str, HeaderValue], payload: bytes) -> bytes:
    """One frame of ``headers`` (strings as type 7, ints as type 4, bools, bytes, UUIDs) and
    ``payload``, with both CRCs."""
    head = b"".join(_encode_header(k, v) for k, v in headers.items())
    total = PRELUDE + len(head) + len(payload) + TRAILER
    prelude = struct.pack(">II", total, len(head))
    prelude += struct.pack(">I", _crc(prelude))
    body = prelude + head + payload
    return body + struct.pack(">I", _crc(body))


def _decode_headers(data: bytes) -> dict[str, HeaderValue]:
    out: dict[str, HeaderValue] = {}
    i = 0
    try:
        while i < len(data):
            n = data[i]
            name = data[i + 1:i + 1 + n].decode("utf-8")
            i += 1 + n
            kind = data[i]
            i += 1
            value: HeaderValue
            if kind in (0, 1):
                value = kind == 0
            elif kind in _FIXED:
                size = struct.calcsize(_FIXED[kind])
                value = struct.unpack(_FIXED[kind], data[i:i + size])[0]
                i += size
            elif kind in (6, 7):
                (size,) = struct.unpack(">H", data[i:i + 2])
                raw = data[i + 2:i + 2 + size]
                if len(raw) != size:
                    raise EventStreamError("a header's value runs past the headers")
                value = raw if kind == 6 else raw.decode("utf-8")
                i += 2 + size
            elif kind == 9:
                value = uuid.UUID(bytes=data[i:i + 16])
                i += 16
            else:
                raise EventStreamError(f"header {name[:40]!r}: unknown value type {kind}")
            out[name] = value
    except (IndexError, struct.error, UnicodeDecodeError, ValueError) as exc:
        if isinstance(exc, EventStreamError):
            raise
        raise EventStreamError(f"malformed headers: {exc}") from None
    if i != len(data):
        raise EventStreamError("a header's value runs past the headers")
    return out


class Decoder:
    """Frames from bytes as they arrive: ``feed`` a chunk, get the frames it completes."""

    def __init__(self) -> None:
        self._buf = bytearray()

    @property
    def pending(self) -> int:
        """Bytes of a frame not yet complete."""
        return len(self._buf)

    def feed(self, chunk: bytes) -> list[Frame]:
        self._buf += chunk
        frames: list[Frame] = []
        while len(self._buf) >= PRELUDE:
            total, head_len, prelude_crc = struct.unpack(">III", self._buf[:PRELUDE])
            if _crc(bytes(self._buf[:8])) != prelude_crc:
                raise EventStreamError("prelude CRC does not match: not an event-stream frame")
            if head_len > MAX_HEADERS or total - PRELUDE - TRAILER - head_len > MAX_PAYLOAD \
                    or total < PRELUDE + TRAILER + head_len:
                raise EventStreamError(f"frame lengths out of bounds ({total}, {head_len})")
            if len(self._buf) < total:
                break
            frame = bytes(self._buf[:total])
            del self._buf[:total]
            (message_crc,) = struct.unpack(">I", frame[-TRAILER:])
            if _crc(frame[:-TRAILER]) != message_crc:
                raise EventStreamError("message CRC does not match: the frame was damaged")
            headers = _decode_headers(frame[PRELUDE:PRELUDE + head_len])
            frames.append(Frame(headers, frame[PRELUDE + head_len:-TRAILER]))
        return frames


def decode_all(data: bytes) -> list[Frame]:
    """Every frame of ``data``, which must hold whole frames only."""
    decoder = Decoder()
    frames = decoder.feed(data)
    if decoder.pending:
        raise EventStreamError(f"{decoder.pending} bytes of an unfinished frame at the end")
    return frames


# -- Bedrock's use of it ------------------------------------------------------------------------
CHUNK_HEADERS: Mapping[str, HeaderValue] = {
    ":event-type": "chunk", ":content-type": "application/json", ":message-type": "event"}


def chunk_frame(event: Mapping[str, Any]) -> bytes:
    """The frame Bedrock wraps one Messages stream event in."""
    data = json.dumps(event, separators=(",", ":")).encode()
    return encode(CHUNK_HEADERS, json.dumps({"bytes": base64.b64encode(data).decode()}).encode())


def exception_frame(exception_type: str, message: str) -> bytes:
    """The frame of an error in the stream (``throttlingException``, ...)."""
    return encode({":exception-type": exception_type, ":content-type": "application/json",
                   ":message-type": "exception"}, json.dumps({"message": message}).encode())


def chunk_event(frame: Frame) -> dict[str, Any] | None:
    """The Messages stream event a ``chunk`` frame carries (None: a frame of another kind);
    ``EventStreamError`` when its payload is not what Bedrock sends."""
    if frame.message_type != "event" or frame.headers.get(":event-type") != "chunk":
        return None
    try:
        wrapped = json.loads(frame.payload)
        event = json.loads(base64.b64decode(wrapped["bytes"], validate=True))
    except (ValueError, KeyError, TypeError, binascii.Error) as exc:
        raise EventStreamError(f"a chunk frame's payload is not base64 JSON: {exc}") from None
    if not isinstance(event, dict):
        raise EventStreamError("a chunk frame's event is not a JSON object")
    return event


def frames_as_sse(frames: list[Frame]) -> Iterator[bytes]:
    """The Messages API's SSE for Bedrock frames: a chunk's event as ``event: <type>``, an
    exception as an ``error`` event (its ``:exception-type`` as the error's type)."""
    for frame in frames:
        if frame.message_type == "exception" or frame.message_type == "error":
            kind = str(frame.headers.get(":exception-type") or frame.headers.get(":error-code")
                       or "error")
            try:
                message = str(json.loads(frame.payload).get("message", ""))
            except (ValueError, AttributeError):
                message = ""
            event: dict[str, Any] = {"type": "error", "error": {"type": kind, "message": message}}
        else:
            found = chunk_event(frame)
            if found is None:
                continue
            event = found
        yield (f"event: {event.get('type', 'message')}\n"
               f"data: {json.dumps(event, separators=(',', ':'))}\n\n").encode()
