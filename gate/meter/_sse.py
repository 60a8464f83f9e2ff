"""Usage read from a server-sent-event stream as it passes, without changing a byte of it."""

from __future__ import annotations

import json
import re
from typing import Any


class _Broken(Exception):
    pass


#: characters of streamed content per output token, for a stream cut short (an estimate)
CHARS_PER_TOKEN = 4

#: the fields of a ``content_block_delta`` whose text the model generated
_DELTA_TEXT = ("text", "partial_json", "thinking")


class _SSELines:
    """Splits an SSE byte stream into lines as it arrives, chunk boundaries anywhere.

    Lines end with CRLF, LF or CR (the SSE spec's ``end-of-line``). A CR that ends a chunk
    already ends its line; an LF that starts the next chunk is then the rest of that CRLF,
    not a blank line. (The splitters in the SSE client libraries we looked at recognise an
    event's end only as two equal line endings, so mixed ones hold an event back.)
    """

    _EOL = re.compile(rb"\r\n|\r|\n")

    def __init__(self) -> None:
        self._partial = b""
        self._after_cr = False

    def feed(self, chunk: bytes) -> list[bytes]:
        if self._after_cr and chunk:
            self._after_cr = False
            if chunk[:1] == b"\n":
                chunk = chunk[1:]
        buf = self._partial + chunk
        lines: list[bytes] = []
        start = 0
        for m in self._EOL.finditer(buf):
            lines.append(buf[start:m.start()])
            start = m.end()
            self._after_cr = m.group() == b"\r" and start == len(buf)
        self._partial = buf[start:]
        return lines


class _SSEUsage:
    """Follows usage through an SSE byte stream without changing it.

    Events are read per the SSE spec's interpretation rules: a blank line dispatches the
    event, ``data`` lines join with LF, a single space after the colon is dropped, comment
    lines (``:``) and a leading BOM are ignored, and an event cut off by the end of the
    stream is discarded.
    """

    def __init__(self) -> None:
        self._lines = _SSELines()
        self._data: list[bytes] = []
        self._first = True
        self.usage: dict[str, Any] | None = None
        self.started = False
        self.error: str | None = None
        self.stopped = False
        self.delta_usage = False  # a message_delta carried output_tokens: the output is known
        self.content_chars = 0  # characters of content deltas seen (text, tool input, thinking)

    def output_estimate(self) -> int | None:
        """Output tokens of a stream the agent cut short, from what passed: the last
        ``output_tokens`` a ``message_delta`` carried (exact), else ~4 characters a token of
        the content deltas (never below ``message_start``'s value); None before it."""
        if self.usage is None:
            return None
        said = int(self.usage.get("output_tokens") or 0)
        if self.delta_usage:
            return said
        return max(said, -(-self.content_chars // CHARS_PER_TOKEN))

    def feed(self, chunk: bytes) -> None:
        for line in self._lines.feed(chunk):
            self._line(line)

    def _line(self, line: bytes) -> None:
        if self._first:
            self._first = False
            line = line.removeprefix(b"\xef\xbb\xbf")
        if not line:
            data, self._data = self._data, []
            if data:
                self._event(b"\n".join(data))
            return
        name, _, value = line.partition(b":")
        if name == b"data":
            self._data.append(value[1:] if value[:1] == b" " else value)

    def _event(self, data: bytes) -> None:
        try:
            ev = json.loads(data)
        except ValueError:
            return
        if not isinstance(ev, dict):
            return
        kind = ev.get("type")
        if kind == "message_start":
            self.started = True
            self.usage = dict((ev.get("message") or {}).get("usage") or {})
        elif kind == "message_delta" and self.usage is not None:
            for k, v in (ev.get("usage") or {}).items():
                if v is not None:  # cumulative: each delta replaces the fields it carries
                    self.usage[k] = v
                    self.delta_usage = self.delta_usage or k == "output_tokens"
        elif kind == "content_block_delta":
            delta = ev.get("delta")
            if isinstance(delta, dict):
                self.content_chars += sum(len(v) for k in _DELTA_TEXT
                                          if isinstance(v := delta.get(k), str))
        elif kind == "message_stop":
            self.stopped = True
        elif kind == "error":
            err = ev.get("error") or {}
            self.error = f"{err.get('type', 'error')} (mid-stream): {err.get('message', '')}"
