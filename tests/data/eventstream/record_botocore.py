"""Records the event-stream fixture ``bedrock-stream-botocore.json``: a Bedrock
InvokeModelWithResponseStream answer as the simulator frames it (the Messages stream events of
one short answer, each in a ``chunk`` frame, then a ``throttlingException`` frame), decoded by
botocore's own ``EventStreamBuffer`` — the AWS SDK's decoder — which records each frame's
headers, payload and both CRCs. Not a test: tests/unit/test_eventstream.py checks the gate's
decoder and encoder against what botocore recorded.

    python3 tests/data/eventstream/record_botocore.py \
        > tests/data/eventstream/bedrock-stream-botocore.json
"""

from __future__ import annotations

import base64
import json

import botocore
from botocore.eventstream import EventStreamBuffer

from gate.upstream import chunk_frame, exception_frame

EVENTS = [
    {"type": "message_start", "message": {
        "id": "msg_bdrk_01", "type": "message", "role": "assistant",
        "model": "claude-sonnet-4-5-20250929", "content": [], "stop_reason": None,
        "stop_sequence": None,
        "usage": {"input_tokens": 12, "cache_creation_input_tokens": 2048,
                  "cache_read_input_tokens": 0, "output_tokens": 1,
                  "cache_creation": {"ephemeral_5m_input_tokens": 2048,
                                     "ephemeral_1h_input_tokens": 0}}}},
    {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
    {"type": "ping"},
    {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hi"}},
    {"type": "content_block_stop", "index": 0},
    {"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": None},
     "usage": {"input_tokens": 12, "cache_creation_input_tokens": 2048,
               "cache_read_input_tokens": 0, "output_tokens": 5}},
    {"type": "message_stop"},
]


def main() -> None:
    stream = b"".join(chunk_frame(e) for e in EVENTS)
    stream += exception_frame("throttlingException", "Too many requests, please wait.")
    buf = EventStreamBuffer()
    buf.add_data(stream)
    frames = [{"headers": m.headers, "payload_b64": base64.b64encode(m.payload).decode(),
               "prelude_crc": m.prelude.crc, "message_crc": m.crc,
               "total_length": m.prelude.total_length,
               "headers_length": m.prelude.headers_length} for m in buf]
    print(json.dumps({
        "source": f"decoded by botocore {botocore.__version__}'s EventStreamBuffer (the AWS "
                  "SDK's event-stream decoder); the bytes framed as the gate's simulator frames "
                  "a Bedrock stream (tests/data/eventstream/record_botocore.py)",
        "stream_b64": base64.b64encode(stream).decode(), "events": EVENTS,
        "frames": frames}, indent=1))


if __name__ == "__main__":
    main()
