"""The meter's HTTP server side: a strict, lean request-head parser and one-write responses."""

from __future__ import annotations

import contextlib
import http
import http.client
import json
import re
from http.server import BaseHTTPRequestHandler
from typing import Any

_REASONS = {int(s): s.phrase for s in http.HTTPStatus}
_TOKEN = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")  # a header name (RFC 9110 token)
_MAX_HEADERS = 100  # as http.client


class _Handler(BaseHTTPRequestHandler):
    """The meter's side of an agent's connection: HTTP/1.1 keep-alive, the request head read
    by a lean parser (the standard library's goes through the ``email`` package, a large part
    of the meter's time per request), and each response head written in one piece with its
    body when the body is known.

    Stricter than ``http.server`` where leniency would let a request mean two things: folded
    header lines, a header name with spaces, a body with ``Transfer-Encoding`` (the meter
    reads exactly ``Content-Length`` bytes) or two different ``Content-Length`` values are
    refused and the connection closed."""

    protocol_version = "HTTP/1.1"
    # a stream's head and its events are separate writes: without this, Nagle + delayed ACK
    # add ~40 ms to every request (bench/bench_scale.py measures it)
    disable_nagle_algorithm = True
    raw_requestline: bytes
    header_list: list[tuple[str, str]]
    content_length: int
    # the upstream connection this agent connection's requests go out on (no proxy): opened on
    # first use, checked before each reuse, closed with the agent's connection
    upstream_conn: http.client.HTTPConnection | None = None

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            if self.upstream_conn is not None:
                self.upstream_conn.close()
                self.upstream_conn = None

    def log_message(self, format: str, *args: Any) -> None:
        pass  # request lines would carry run ids; keep logs quiet

    def header(self, name: str) -> str:
        """The first value of header ``name`` (lower case), or ''."""
        for k, v in self.header_list:
            if k.lower() == name:
                return v
        return ""

    def parse_request(self) -> bool:
        self.command = ""
        self.close_connection = True
        self.header_list = []
        self.content_length = 0
        line = self.raw_requestline.decode("iso-8859-1").rstrip("\r\n")
        self.requestline = line
        words = line.split(" ")
        if len(words) != 3 or not words[2].startswith("HTTP/1."):
            self.request_version = "HTTP/1.0"
            self._refuse(400, "bad request line")
            return False
        self.command, self.path, self.request_version = words
        if self.request_version not in ("HTTP/1.0", "HTTP/1.1"):
            self._refuse(505, "HTTP/1.0 or HTTP/1.1 only")
            return False
        lengths: set[str] = set()
        conn = expect = ""
        while True:
            raw = self.rfile.readline(65537)
            if len(raw) > 65536 or len(self.header_list) > _MAX_HEADERS:
                self._refuse(431, "request header fields too large")
                return False
            if raw in (b"\r\n", b"\n", b""):
                break
            name, colon, value = raw.decode("iso-8859-1").partition(":")
            if not colon or not _TOKEN.fullmatch(name):  # no folding, no space before ':'
                self._refuse(400, "bad header line")
                return False
            value = value.strip(" \t\r\n")
            if "\r" in value or "\0" in value:  # (a bare LF ends the line)
                self._refuse(400, "bad header line")
                return False
            self.header_list.append((name, value))
            low = name.lower()
            if low == "content-length":
                lengths.add(value)
            elif low == "transfer-encoding":
                self._refuse(411, "a request body needs a content-length (the gate's meter)")
                return False
            elif low == "connection":
                conn = value.lower()
            elif low == "expect":
                expect = value.lower()
        if len(lengths) > 1 or (lengths and not next(iter(lengths)).isdigit()):
            self._refuse(400, "bad content-length")
            return False
        self.content_length = int(next(iter(lengths))) if lengths else 0
        self.close_connection = conn == "close" or (
            self.request_version == "HTTP/1.0" and conn != "keep-alive")
        if expect == "100-continue" and self.request_version == "HTTP/1.1":
            self.wfile.write(b"HTTP/1.1 100 Continue\r\n\r\n")
        return True

    def _refuse(self, status: int, msg: str) -> None:
        self.close_connection = True
        body = json.dumps({"type": "error", "error": {
            "type": "invalid_request_error", "message": msg}, "request_id": None}).encode()
        with contextlib.suppress(OSError):
            self.respond(status, [("content-type", "application/json")], body)

    def respond(self, status: int, headers: list[tuple[str, str]],
                body: bytes | None = None) -> None:
        """Write the status line and ``headers`` (plus ``content-length`` when ``body`` is
        given, and ``connection: close`` when the connection ends after this) in one write,
        with ``body``."""
        head = [f"{self.protocol_version} {status} {_REASONS.get(status, '')}\r\n"]
        head += [f"{k}: {v}\r\n" for k, v in headers]
        if body is not None:
            head.append(f"content-length: {len(body)}\r\n")
        if self.close_connection:
            head.append("connection: close\r\n")
        head.append("\r\n")
        self.wfile.write("".join(head).encode("latin-1") + (body or b""))
