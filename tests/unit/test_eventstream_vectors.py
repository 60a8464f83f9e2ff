"""The gate's AWS event-stream decoder against AWS's own published test vectors (the AWS SDK
for Go's ``private/protocol/eventstream/testdata``, copied unchanged into
tests/fixtures/eventstream-aws-sdk-go with their source): frames recorded by another SDK than
botocore, every header type, CRCs included. Each positive frame decodes to what AWS says it
holds; each negative one (a damaged length, header length, headers or payload) is refused for
the CRC AWS names."""

from __future__ import annotations

import base64
import json
import struct
import uuid
from pathlib import Path

import pytest

from gate.upstream import EventStreamError, decode_all

VECTORS = Path(__file__).resolve().parents[1] / "fixtures" / "eventstream-aws-sdk-go"
POSITIVE = sorted(p.name for p in (VECTORS / "encoded" / "positive").iterdir())
NEGATIVE = sorted(p.name for p in (VECTORS / "encoded" / "negative").iterdir())


def _u32(signed: int) -> int:
    return signed & 0xFFFFFFFF


def _expected_header(h: dict[str, object]) -> object:
    kind, value = h["type"], h["value"]
    if kind == 7:
        return base64.b64decode(str(value)).decode()
    if kind == 6:
        return base64.b64decode(str(value))
    if kind == 9:
        return uuid.UUID(bytes=base64.b64decode(str(value)))
    return value


def test_the_vectors_are_there() -> None:
    assert POSITIVE == ["all_headers", "empty_message", "int32_header", "payload_no_headers",
                        "payload_one_str_header"]
    assert NEGATIVE == ["corrupted_header_len", "corrupted_headers", "corrupted_length",
                        "corrupted_payload"]


@pytest.mark.parametrize("name", POSITIVE)
def test_each_positive_vector_decodes_as_aws_says(name: str) -> None:
    raw = (VECTORS / "encoded" / "positive" / name).read_bytes()
    want = json.loads((VECTORS / "decoded" / "positive" / name).read_text(encoding="utf-8"))
    total, head_len, prelude_crc = struct.unpack(">III", raw[:12])
    assert (total, head_len, prelude_crc) == (want["total_length"], want["headers_length"],
                                              _u32(want["prelude_crc"]))
    assert struct.unpack(">I", raw[-4:])[0] == _u32(want["message_crc"])
    (frame,) = decode_all(raw)
    assert frame.payload == base64.b64decode(want["payload"])
    assert dict(frame.headers) == {h["name"]: _expected_header(h) for h in want["headers"]}
    for h in want["headers"]:  # the types, not only the values (a bool is an int in Python)
        assert type(frame.headers[h["name"]]) is type(_expected_header(h))


@pytest.mark.parametrize("name", NEGATIVE)
def test_each_negative_vector_is_refused_for_the_crc_aws_names(name: str) -> None:
    raw = (VECTORS / "encoded" / "negative" / name).read_bytes()
    why = (VECTORS / "decoded" / "negative" / name).read_text(encoding="utf-8").strip()
    which = {"Prelude checksum mismatch": "prelude CRC",
             "Message checksum mismatch": "message CRC"}[why]
    with pytest.raises(EventStreamError, match=which):
        decode_all(raw)
