"""AWS event-stream framing (gate/upstream/_eventstream.py) against frames decoded and recorded
by botocore's own EventStreamBuffer (the AWS SDK's decoder; the fixture and the script that
recorded it are in tests/data/eventstream/): the gate's decoder reads every frame as botocore
did, CRCs included; its encoder gives the same bytes back; a frame with a damaged CRC is refused;
and the anthropic SDK's Bedrock stream decoder reads the same bytes as the same Messages events
the meter's decoder turns them into."""

from __future__ import annotations

import base64
import json
import struct
import zlib
from pathlib import Path

import pytest

from gate.upstream import BEDROCK, Decoder, EventStreamError, decode_all, encode

FIXTURE = json.loads((Path(__file__).resolve().parents[1] / "data" / "eventstream"
                      / "bedrock-stream-botocore.json").read_text(encoding="utf-8"))
STREAM = base64.b64decode(FIXTURE["stream_b64"])


def test_the_decoder_reads_each_frame_as_botocore_recorded_it() -> None:
    frames = decode_all(STREAM)
    assert len(frames) == len(FIXTURE["frames"]) == len(FIXTURE["events"]) + 1
    offset = 0
    for got, want in zip(frames, FIXTURE["frames"], strict=True):
        assert dict(got.headers) == want["headers"]
        assert got.payload == base64.b64decode(want["payload_b64"])
        raw = STREAM[offset:offset + want["total_length"]]
        assert struct.unpack(">I", raw[8:12])[0] == want["prelude_crc"]
        assert struct.unpack(">I", raw[-4:])[0] == want["message_crc"]
        assert zlib.crc32(raw[:-4]) == want["message_crc"]
        offset += want["total_length"]
    assert offset == len(STREAM)


def test_the_encoder_gives_botocores_frames_back_byte_for_byte() -> None:
    rebuilt = b"".join(encode(f["headers"], base64.b64decode(f["payload_b64"]))
                       for f in FIXTURE["frames"])
    assert rebuilt == STREAM


def test_bytes_fed_one_at_a_time_give_the_same_frames() -> None:
    decoder = Decoder()
    frames = [f for i in range(len(STREAM)) for f in decoder.feed(STREAM[i:i + 1])]
    assert frames == decode_all(STREAM) and decoder.pending == 0


@pytest.mark.parametrize("where", ["prelude", "payload", "message crc"])
def test_a_frame_with_a_bad_crc_is_refused(where: str) -> None:
    first = FIXTURE["frames"][0]["total_length"]
    frame = bytearray(STREAM[:first])
    at = {"prelude": 2, "payload": first - 10, "message crc": first - 1}[where]
    frame[at] ^= 0x01
    with pytest.raises(EventStreamError, match="CRC"):
        decode_all(bytes(frame))
    from botocore.eventstream import ChecksumMismatch, EventStreamBuffer

    buf = EventStreamBuffer()  # botocore refuses it too
    buf.add_data(bytes(frame))
    with pytest.raises(ChecksumMismatch):
        list(buf)


def test_the_sdks_decoder_and_the_meters_read_the_same_events() -> None:
    from anthropic.lib.bedrock._stream_decoder import AWSEventStreamDecoder

    sdk = list(AWSEventStreamDecoder().iter_bytes(iter([STREAM[:100], STREAM[100:]])))
    assert [json.loads(e.data) for e in sdk[:-1]] == FIXTURE["events"]
    assert sdk[-1].event == "error" and "throttlingException" in sdk[-1].data
    decoder = BEDROCK.stream_decoder("application/vnd.amazon.eventstream")
    assert decoder is not None
    sse = b"".join(decoder.feed(STREAM[i:i + 7]) for i in range(0, len(STREAM), 7))
    blocks = [b for b in sse.decode().split("\n\n") if b]
    events = [json.loads(b.split("data: ", 1)[1]) for b in blocks]
    assert events[:-1] == FIXTURE["events"]
    assert events[-1]["type"] == "error"
    assert events[-1]["error"]["type"] == "throttlingException"
    assert all(b.startswith(f"event: {e['type']}\n") for b, e in zip(blocks, events, strict=True))
