"""The metering proxy: the single point every model request of every agent kind goes through.

Each run gets its own base URL (``http://127.0.0.1:PORT/r/<run-id>``) and its own token.
The proxy checks the token, swaps in the real credential (which only this process holds),
forwards the request upstream unchanged (path, query string, ``anthropic-*`` headers, body),
and passes the response back byte for byte — streams event by event, without buffering —
while parsing ``usage`` on the side (``message_start``, then each ``message_delta`` replaces
the fields it carries). A redirect is passed back, never followed, so the credential goes to the
configured API only; the environment's proxy and CA settings are honoured (read once). Without a
proxy, each agent connection has its own kept-alive upstream connection (``http.client``),
checked before each reuse and closed with the agent's; through a proxy, urllib3 pools them. A
stream that breaks after ``message_start`` still counts the input it was billed for. ``turns`` =
model requests of the run that the upstream answered.

Only an allow-list of endpoints is forwarded (``ENDPOINTS``: messages, count_tokens, the model
list), matched on the path exactly as it will be sent — no dot segments, percent-escapes or
doubled slashes that an HTTP library would normalise into something else — with a plain query
string. Anything else (batches, files, ``/v1/x/../messages``) gets a 403 in the API's error
shape and is recorded with the run, so it lands in the transcript; it never reaches the API
with the real key.

Measured vs billed (metering definition ``warm-prefix-v1``, docs/statistics.md): every run is
measured as if its shared prefix had been warm when it started, whatever the schedule. Each
messages request belongs to a *prefix family* (model + the ``tools`` and ``system`` it sends);
the first billed request of a family in a run that opens a conversation (no assistant turn yet)
has its cache writes counted as cache reads in the run's *measured* usage and cost, and the
write premium goes to the run's ``overhead_usd`` (suite overhead). What was billed is kept as
it was billed.

What is billed: the first messages request of each prefix family is single-flighted across
the suite (every run of a suite shares one meter). A cache entry is visible only once the
response that writes it has begun, so concurrent first requests (``--jobs N``) would each write
the shared tools + system. Instead the first request of a family that is not yet warm leads
and is forwarded at once; the family's other requests wait until the leader's response has
begun (``message_start`` of a stream; the whole answer of a JSON 2xx), then go and read it.
So a request may wait, once per family per suite. A leader that fails (an error status, a
connection error, a stream with no ``message_start``) hands the lead to the next request; a
wait ends, at the latest, after ``FIRST_FLIGHT_WAIT_S`` (the request then goes anyway) or when
the request's run is closed (answered with an error, not forwarded). Warm families, other
families and other endpoints never wait; the turn cap is checked before any wait. The
measurement (``warm-prefix-v1``) is unchanged: a request's standing (first of its family in its
run or not) is taken on arrival, before it waits, and a warm-start request measures the same
whether it wrote the shared part or read it.
"""

from __future__ import annotations

import contextlib
import hashlib
import http
import http.client
import json
import os
import re
import secrets
import ssl
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import certifi
import requests
import urllib3
from requests.adapters import HTTPAdapter
from urllib3.util.wait import wait_for_read

from gate.cost import PriceTable
from gate.errors import BadInput
from gate.usage import Usage

PUBLIC_API = "https://api.anthropic.com"
_HOP_BY_HOP = {
    "connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te", "trailers",
    "transfer-encoding", "upgrade", "host", "content-length", "accept-encoding",
    "x-api-key", "authorization",
}
_RESPONSE_DROP = {"connection", "keep-alive", "transfer-encoding", "content-length",
                  "content-encoding"}
CONNECT_TIMEOUT_S = 10.0  # to reach the upstream; the answer may take the run's timeout
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


@dataclass(frozen=True)
class RefusedRequest:
    """A request the meter did not forward (an endpoint outside its allow-list)."""

    method: str
    path: str


#: the longest a request waits for its prefix family's first response to begin: a leader that
#: stalls (a hung connection) must not hold every run of the suite for the upstream timeout;
#: past it the request goes anyway, and at worst pays a cache write of the prefix again
FIRST_FLIGHT_WAIT_S = 60.0

#: the id of how a run's usage is measured (recorded in every results file's ``schedule``);
#: two results files whose ids differ do not compare cache-hit rate and cost
METERING = "warm-prefix-v1"


@dataclass(frozen=True)
class Prefix:
    """Where a messages request stands in its run's cache accounting, taken when it starts."""

    family: str | None  # "<model>:<sha256 of tools + system as sent>"; None: not a messages body
    opening: bool  # no assistant turn in ``messages``: the first request of a conversation
    seen: bool  # a billed request of this family had already completed in the run

    @property
    def warm_start(self) -> bool:
        """Measured as if its prefix had been warm: its cache writes count as reads."""
        return self.family is not None and self.opening and not self.seen


def prefix_family(payload: Any) -> tuple[str | None, bool]:
    """(family, opening) of a messages request body; (None, False) for anything else."""
    if not isinstance(payload, dict) or not isinstance(payload.get("messages"), list):
        return None, False
    shared = {"tools": payload.get("tools"), "system": payload.get("system")}
    digest = hashlib.sha256(json.dumps(shared, sort_keys=True, separators=(",", ":"),
                                       ensure_ascii=False).encode()).hexdigest()
    opening = not any(isinstance(m, dict) and m.get("role") == "assistant"
                      for m in payload["messages"])
    return f"{payload.get('model')}:{digest}", opening


def warm(usage: Usage) -> Usage:
    """``usage`` as if every token it wrote to the cache had been read from it."""
    return usage.model_copy(update={
        "cache_read_input_tokens": usage.cache_read_input_tokens
        + usage.cache_creation_input_tokens,
        "cache_creation_input_tokens": 0, "cache_creation_5m": 0, "cache_creation_1h": 0})


@dataclass
class MeteredRequest:
    """What one model request of a run cost: as billed, and as measured (``measured_*``:
    differs from the billed values only on a warm-start request, see the module doc)."""

    model: str
    status: int
    stream: bool
    usage: Usage
    cost_usd: float
    error: str | None = None
    request_id: str | None = None
    billed: bool = False  # the upstream started a message (billed input)
    prefix: Prefix | None = None
    measured_usage: Usage | None = None  # None: as billed
    measured_cost_usd: float | None = None

    @property
    def overhead_usd(self) -> float:
        """The cache-write premium of a warm-start request: billed minus measured cost."""
        if self.measured_cost_usd is None:
            return 0.0
        return self.cost_usd - self.measured_cost_usd


@dataclass(frozen=True)
class RunTotals:
    """A run's model requests, measured (what is compared) and as billed."""

    turns: int
    usage: Usage
    cost_usd: float
    billed_usage: Usage
    billed_cost_usd: float

    @property
    def overhead_usd(self) -> float:
        return self.billed_cost_usd - self.cost_usd


@dataclass
class RunMeter:
    """One run's slice of the meter. Thread-safe: an agent may send requests concurrently."""

    run_id: str
    token: str
    base_url: str
    requests: list[MeteredRequest] = field(default_factory=list)
    refused: list[RefusedRequest] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _idle: threading.Condition = field(init=False, repr=False)
    _in_flight: int = 0
    _closed: bool = False
    _proxy: MeterProxy | None = field(default=None, repr=False)
    run_name: str = ""
    _families: set[str] = field(default_factory=set, repr=False)  # billed and completed
    # the run's caps: past them the meter answers model requests with an API error instead of
    # forwarding them, so they bind every agent kind (a command agent counts no turns itself)
    max_turns: int | None = None
    max_cost_usd: float | None = None
    capped: str | None = None  # why the meter stopped answering, once it did
    _messages_in_flight: int = 0
    _billed: int = 0  # billed requests so far, and what they cost: the caps read these
    _billed_cost: float = 0.0

    def admit_message(self) -> str | None:
        """Reserve a messages request against the caps; the refusal message past them.

        A request in flight counts toward the turn cap (parallel requests cannot overshoot
        it); the cost cap binds on what the finished requests were billed."""
        with self._lock:
            if self.max_turns is not None \
                    and self._billed + self._messages_in_flight >= self.max_turns:
                self.capped = f"turn cap reached (max_turns = {self.max_turns})"
            elif self.max_cost_usd is not None and self._billed_cost >= self.max_cost_usd:
                self.capped = f"cost cap reached (max run cost ${self.max_cost_usd:g})"
            else:
                self._messages_in_flight += 1
                return None
            return (f"the gate's meter: this run's {self.capped}; no further model requests "
                    "are answered")

    def message_done(self) -> None:
        with self._lock:
            self._messages_in_flight -= 1

    def __post_init__(self) -> None:
        self._idle = threading.Condition(self._lock)

    def begin(self) -> None:
        with self._lock:
            self._in_flight += 1

    def end(self) -> None:
        with self._lock:
            self._in_flight -= 1
            self._idle.notify_all()

    def prefix(self, payload: Any) -> Prefix:
        """The request's prefix family, and whether the run has already completed a billed
        request of it (called when the request starts, before it is forwarded)."""
        family, opening = prefix_family(payload)
        with self._lock:
            return Prefix(family, opening, family in self._families)

    def add(self, req: MeteredRequest, cost: Callable[[str, Usage], float] | None = None) -> None:
        """Record a finished request. A billed warm-start request gets its measured usage (and,
        given ``cost``, the price function, its measured cost)."""
        if req.billed and req.prefix is not None and req.prefix.warm_start \
                and req.usage.cache_creation_input_tokens:
            req.measured_usage = warm(req.usage)
            if cost is not None:
                req.measured_cost_usd = cost(req.model, req.measured_usage)
        with self._lock:
            if req.billed and req.prefix is not None and req.prefix.family is not None:
                self._families.add(req.prefix.family)
            if req.billed:
                self._billed += 1
                self._billed_cost += req.cost_usd
            self.requests.append(req)

    def refuse(self, req: RefusedRequest) -> None:
        with self._lock:
            if len(self.refused) < 100:  # bounded: a looping agent cannot grow it without end
                self.refused.append(req)

    def refusals(self) -> list[dict[str, str]]:
        """The requests refused so far, for the run's transcript."""
        with self._lock:
            return [{"method": r.method, "path": r.path} for r in self.refused]

    def totals(self) -> tuple[int, Usage, float]:
        """(model requests, usage, cost) as billed."""
        t = self.measured()
        return t.turns, t.billed_usage, t.billed_cost_usd

    def measured(self) -> RunTotals:
        with self._lock:
            billed = [r for r in self.requests if r.billed]
        return RunTotals(
            turns=len(billed),
            usage=sum((r.measured_usage or r.usage for r in billed), Usage()),
            cost_usd=sum(r.cost_usd if r.measured_cost_usd is None else r.measured_cost_usd
                         for r in billed),
            billed_usage=sum((r.usage for r in billed), Usage()),
            billed_cost_usd=sum(r.cost_usd for r in billed),
        )

    def api_failure(self) -> str | None:
        """Why the model API last failed, if the run's newest request failed."""
        with self._lock:
            if not self.requests or self.requests[-1].error is None:
                return None
            last = self.requests[-1]
        return f"model API failed: {last.error}"

    @property
    def closed(self) -> bool:
        return self._closed

    def close(self, wait: float = 10.0) -> None:
        """Stop accepting this run's requests; give those in flight (an agent killed
        mid-stream) up to ``wait`` seconds to be counted."""
        if self._proxy is not None and not self._closed:
            self._closed = True
            self._proxy._forget(self.run_id)
        with self._lock:
            self._idle.wait_for(lambda: self._in_flight == 0, timeout=wait)

    def __repr__(self) -> str:  # the token stays out of logs
        return f"RunMeter(run_id={self.run_id!r}, requests={len(self.requests)})"


class _Broken(Exception):
    pass


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
        elif kind == "message_stop":
            self.stopped = True
        elif kind == "error":
            err = ev.get("error") or {}
            self.error = f"{err.get('type', 'error')} (mid-stream): {err.get('message', '')}"


class _FirstFlights:
    """Single-flight of each prefix family's first messages request, suite-wide.

    A family is unseen, has its leader in flight, or is warm. The first request of a family
    that is not warm leads and goes at once; the family's other requests wait (never holding a
    lock while they do) until the leader's response has begun, then go and read the prefix
    it wrote. A leader that fails hands the lead to the next request. A wait is bounded, and
    ends when the waiting request's run is closed.
    """

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._warm: set[str] = set()
        self._leading: set[str] = set()

    def enter(self, family: str, run: RunMeter, timeout: float) -> bool | None:
        """True: this request leads (then ``done`` must follow); False: go (the family is warm,
        or the wait timed out); None: the run was closed while waiting."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                if family in self._warm:
                    return False
                if family not in self._leading:
                    self._leading.add(family)
                    return True
                if run.closed:
                    return None
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._cond.wait(left)

    def done(self, family: str, began: bool) -> None:
        """The leader's response began (the family is warm) or the leader failed."""
        with self._cond:
            self._leading.discard(family)
            if began:
                self._warm.add(family)
            self._cond.notify_all()

    def wake(self) -> None:
        """A run was closed: its waiting requests stop waiting."""
        with self._cond:
            self._cond.notify_all()


class _Lead:
    """A leading request's hold on its family: released once, when its response begins or
    (``release``, always called) when it ends without having begun."""

    def __init__(self, flights: _FirstFlights, family: str) -> None:
        self._flights = flights
        self._family = family
        self._held = True

    def began(self) -> None:
        if self._held:
            self._held = False
            self._flights.done(self._family, True)

    def release(self) -> None:
        if self._held:
            self._held = False
            self._flights.done(self._family, False)


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


class MeterProxy:
    """A real HTTP server on loopback in front of the upstream API."""

    def __init__(
        self,
        upstream: str,
        credential: str,
        prices: PriceTable,
        *,
        credential_header: str = "x-api-key",
        host: str = "127.0.0.1",
        timeout: float = 600,
        observer: Callable[[str, bytes], None] | None = None,
        run_header: str | None = None,
        first_flight_wait: float = FIRST_FLIGHT_WAIT_S,
    ) -> None:
        """``observer(run_id, body)`` sees each authenticated request body (benchmarks).
        ``first_flight_wait``: how long a request waits at most for its family's first
        response to begin (then it goes anyway, and may write the prefix again).
        ``run_header``: a header naming the run (``<task>-r<replication>``) on every forwarded
        request — for the simulator only, which derives the run's randomness from it."""
        self._run_header = run_header
        self.upstream = upstream.rstrip("/")
        self._credential = credential
        self._credential_header = credential_header
        self.prices = prices
        self.timeout = timeout
        self.first_flight_wait = first_flight_wait
        self._observer = observer
        self._runs: dict[str, RunMeter] = {}
        self._flights = _FirstFlights()
        self.unpriced: set[str] = set()
        self._lock = threading.Lock()
        proxy, verify = upstream_settings(self.upstream)
        url = urllib3.util.parse_url(self.upstream)
        if url.host in ("127.0.0.1", "localhost"):
            proxy = None  # a loopback upstream (the simulator) is never reached through a proxy
        self._origin = (url.scheme or "http", url.host or "", url.port)
        self._base_path = url.path or ""
        self._tls = _tls_context(verify) if url.scheme == "https" else None
        self._timeout = urllib3.Timeout(connect=CONNECT_TIMEOUT_S, read=timeout)
        # through a proxy: urllib3's pool manager (http, https or socks proxies, as requests
        # would use them); without one, each agent connection gets its own upstream connection
        # (http.client, kept alive): urllib3's layers were a quarter of the meter's time
        self._pool = upstream_pool(proxy, verify) if proxy else None
        self._server = ThreadingHTTPServer((host, 0), self._handler_class())
        self._server.daemon_threads = True
        self._thread: threading.Thread | None = None

    def __repr__(self) -> str:
        return f"MeterProxy(upstream={self.upstream!r}, url={self.url!r})"

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self) -> MeterProxy:
        # a short poll: close() (shutdown) returns at once, not after up to half a second
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,),
                                        name="gate-meter", daemon=True)
        self._thread.start()
        return self

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        if self._pool is not None:
            self._pool.clear()

    def __enter__(self) -> MeterProxy:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def open_run(self, run_name: str, *, max_turns: int | None = None,
                 max_cost_usd: float | None = None) -> RunMeter:
        run_id = f"{run_name}-{secrets.token_hex(4)}"
        meter = RunMeter(run_id=run_id, token="gate-run-" + secrets.token_urlsafe(24),
                         base_url=f"{self.url}/r/{run_id}", _proxy=self,
                         max_turns=max_turns, max_cost_usd=max_cost_usd, run_name=run_name)
        with self._lock:
            self._runs[run_id] = meter
        return meter

    def _forget(self, run_id: str) -> None:
        with self._lock:
            self._runs.pop(run_id, None)
        self._flights.wake()

    def _lookup(self, run_id: str) -> RunMeter | None:
        with self._lock:
            return self._runs.get(run_id)

    # -- request handling -----------------------------------------------------------------
    def _handler_class(self) -> type[_Handler]:
        proxy = self

        class Handler(_Handler):
            def do_POST(self) -> None:
                proxy._handle(self)

            do_GET = do_PUT = do_PATCH = do_DELETE = do_POST

        return Handler

    def _send_error(self, h: _Handler, status: int, kind: str, msg: str) -> None:
        body = json.dumps({"type": "error", "error": {"type": kind, "message": msg},
                           "request_id": None}).encode()
        h.respond(status, [("content-type", "application/json")], body)

    def _handle(self, h: _Handler) -> None:
        path, _, query = h.path.partition("?")
        parts = path.split("/", 3)  # "", "r", run_id, rest
        run = self._lookup(parts[2]) if len(parts) == 4 and parts[1] == "r" else None
        if run is None:
            h.close_connection = True  # its body is not read: it must not pass for a request
            self._send_error(h, 404, "not_found_error", "unknown run (the gate's meter)")
            return
        given = h.header("x-api-key")
        auth = h.header("authorization")
        if auth.lower().startswith("bearer "):
            given = given or auth[7:].strip()
        if not secrets.compare_digest(given.encode(), run.token.encode()):
            h.close_connection = True  # as above
            self._send_error(h, 401, "authentication_error", "invalid run token")
            return
        length = h.content_length
        if length > MAX_REQUEST_BYTES:  # the API's own limit is lower; never read it in
            h.close_connection = True
            self._send_error(h, 413, "request_too_large",
                             f"request body over {MAX_REQUEST_BYTES} bytes (the gate's meter)")
            return
        body = h.rfile.read(length) if length > 0 else b""
        endpoint = route(h.command, parts[3], query)
        if endpoint is None:
            shown = h.path.split("/", 3)[3][:300]
            run.refuse(RefusedRequest(h.command, "/" + shown))
            self._send_error(h, 403, "permission_error", (
                f"the gate's meter does not forward {h.command} /{shown[:120]}: only "
                "POST /v1/messages, POST /v1/messages/count_tokens and GET /v1/models are "
                "allowed during a gated run"))
            return
        if endpoint == MESSAGES:
            # a 400 invalid_request_error: clients (the SDKs, Claude Code) do not retry it, and
            # it is never forwarded, so it is neither billed nor counted as an API failure
            refusal = run.admit_message()
            if refusal is not None:
                self._send_error(h, 400, "invalid_request_error", refusal)
                return
        if self._observer is not None:
            self._observer(run.run_id, body)
        payload: Any = None
        with contextlib.suppress(ValueError):
            payload = json.loads(body) if body else {}
        prefix = run.prefix(payload)  # where the request stands on arrival, before any wait
        lead: _Lead | None = None
        run.begin()
        try:
            if endpoint == MESSAGES and prefix.family is not None:
                leads = self._flights.enter(prefix.family, run, self.first_flight_wait)
                if leads is None:
                    with contextlib.suppress(OSError):
                        self._send_error(h, 404, "not_found_error",
                                         "run closed while its request waited (the gate's meter)")
                    return
                if leads:
                    lead = _Lead(self._flights, prefix.family)
            self._forward(h, run, endpoint, query, body, payload, prefix, lead)
        finally:
            if lead is not None:
                lead.release()
            run.end()
            if endpoint == MESSAGES:
                run.message_done()

    def _forward(self, h: _Handler, run: RunMeter, endpoint: str, query: str,
                 body: bytes, payload: Any, prefix: Prefix, lead: _Lead | None) -> None:
        model, stream = "unknown", False
        with contextlib.suppress(AttributeError):
            model = str(payload.get("model") or "unknown")
            stream = bool(payload.get("stream"))
        target = f"/{endpoint}" + (f"?{query}" if query else "")
        headers = {k: v for k, v in h.header_list if k.lower() not in _HOP_BY_HOP}
        headers[self._credential_header] = (
            f"Bearer {self._credential}" if self._credential_header == "authorization"
            else self._credential)
        headers["accept-encoding"] = "identity"  # pass bytes through unchanged
        if self._run_header:
            headers[self._run_header] = run.run_name
        is_messages = endpoint == MESSAGES
        # sent as is: no retry, and a redirect is passed back, never followed with the
        # credential; the body is read as it arrives, never decoded
        try:
            if self._pool is None:
                resp = self._send_direct(h, target, body, headers)
                answer = _Answer(resp.status, resp.msg, resp.read, resp.read1)
            else:
                up = self._pool.urlopen(
                    h.command, self.upstream + target, body=body, headers=headers,
                    preload_content=False, decode_content=False, redirect=False,
                    retries=False, timeout=self._timeout)
                answer = _Answer(up.status, up.headers, up.read, up.read1)
        except _UPSTREAM_ERRORS as exc:
            if is_messages:
                run.add(MeteredRequest(model, 0, stream, Usage(), 0.0,
                                       error=f"connection error: {type(exc).__name__}",
                                       prefix=prefix))
            self._send_error(h, 502, "api_error", "upstream unreachable (the gate's meter)")
            return
        try:
            self._relay(h, answer, run, model, is_messages, prefix, lead)
        finally:
            # a response not read to its end (the agent went away, a broken stream): the
            # upstream may still be sending on that connection; never reuse it
            if self._pool is None:
                if not resp.isclosed() or resp.will_close:
                    self._drop_direct(h)
            else:
                if not up.closed:
                    up.close()
                up.release_conn()

    def _send_direct(self, h: _Handler, target: str, body: bytes,
                     headers: dict[str, str]) -> http.client.HTTPResponse:
        """The request on the agent connection's own upstream connection: reused while the
        upstream keeps it open (idle and not readable: an idle connection that reads as ready
        was closed, or holds bytes nobody asked for), else a new one."""
        conn = h.upstream_conn
        if conn is not None and (conn.sock is None or wait_for_read(conn.sock, timeout=0.0)):
            self._drop_direct(h)
            conn = None
        try:
            if conn is None:
                conn = h.upstream_conn = self._connect()
            conn.request(h.command, self._base_path + target, body=body or None,
                         headers=headers)
            return conn.getresponse()
        except BaseException:
            self._drop_direct(h)
            raise

    def _connect(self) -> http.client.HTTPConnection:
        scheme, host, port = self._origin
        conn = (http.client.HTTPSConnection(host, port, timeout=CONNECT_TIMEOUT_S,
                                            context=self._tls)
                if scheme == "https" else
                http.client.HTTPConnection(host, port, timeout=CONNECT_TIMEOUT_S))
        try:
            conn.connect()
        except BaseException:
            conn.close()
            raise
        assert conn.sock is not None
        conn.sock.settimeout(self.timeout)  # connecting: 10 s; waiting on the model: long
        return conn

    @staticmethod
    def _drop_direct(h: _Handler) -> None:
        if h.upstream_conn is not None:
            h.upstream_conn.close()
            h.upstream_conn = None

    def _relay(self, h: _Handler, up: _Answer, run: RunMeter,
               model: str, is_messages: bool, prefix: Prefix | None = None,
               lead: _Lead | None = None) -> None:
        """Pass the response back; a leading request's family is warm once its message has
        started (``message_start`` of a stream; the whole body of a JSON 2xx answer)."""
        ctype = up.headers.get("content-type", "")
        is_sse = "text/event-stream" in ctype
        head = [(k, v) for k, v in up.headers.items() if k.lower() not in _RESPONSE_DROP]
        request_id = up.headers.get("request-id")
        if is_sse:
            h.respond(up.status, [*head, ("transfer-encoding", "chunked")])
            tracker = _SSEUsage()
            broken: str | None = None
            try:
                for chunk in _chunks(up):
                    tracker.feed(chunk)
                    if lead is not None and tracker.started:
                        lead.began()
                    h.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                    h.wfile.flush()
                if tracker.started and not tracker.stopped and tracker.error is None:
                    raise _Broken("upstream closed the stream before message_stop")
            except _Broken as exc:
                broken = f"stream broken: {exc}"[:200]
            except OSError:  # writing to the agent (reading the upstream raises _Broken)
                broken = "client went away mid-stream"
            if is_messages:  # recorded before the client can see the end of the stream
                usage = Usage.from_api(tracker.usage) if tracker.usage else Usage()
                run.add(MeteredRequest(
                    model, up.status, True, usage,
                    self._cost(model, usage) if tracker.started else 0.0,
                    error=tracker.error or broken, request_id=request_id,
                    billed=tracker.started, prefix=prefix), self._cost)
            if broken:
                h.close_connection = True  # no terminating chunk: the client sees the break
            else:
                with contextlib.suppress(OSError):
                    h.wfile.write(b"0\r\n\r\n")
                    h.wfile.flush()
            return
        try:
            data = up.read()
        except _UPSTREAM_ERRORS as exc:
            if is_messages:
                run.add(MeteredRequest(model, up.status, False, Usage(), 0.0,
                                       error=f"response broken: {type(exc).__name__}",
                                       request_id=request_id, prefix=prefix))
            h.close_connection = True  # nothing was sent: a cut connection tells the client
            return
        if lead is not None and 200 <= up.status < 300:
            lead.began()
        if is_messages:
            metered = self._metered_json(model, up.status, data, request_id)
            metered.prefix = prefix
            run.add(metered, self._cost)
        with contextlib.suppress(OSError):
            h.respond(up.status, head, data)

    def _metered_json(self, model: str, status: int, data: bytes,
                      request_id: str | None) -> MeteredRequest:
        if status == 200:
            try:
                usage = Usage.from_api(json.loads(data).get("usage"))
            except (ValueError, AttributeError):
                usage = Usage()
            return MeteredRequest(model, 200, False, usage, self._cost(model, usage),
                                  request_id=request_id, billed=True)
        try:
            err = json.loads(data).get("error", {})
            why = f"{status} {err.get('type', 'error')}"
        except (ValueError, AttributeError):
            why = f"HTTP {status}"
        return MeteredRequest(model, status, False, Usage(), 0.0, error=why,
                              request_id=request_id)

    def _cost(self, model: str, usage: Usage) -> float:
        """Priced by the model the request asked for (the run checked it has a price up front;
        a model a command agent picks on its own and that has no price costs 0 and is noted)."""
        try:
            return self.prices.cost(model, usage)
        except BadInput:
            with self._lock:
                self.unpriced.add(model)
            return 0.0


def upstream_settings(upstream: str) -> tuple[str | None, bool | str]:
    """(proxy URL or None, TLS verification: False, True for certifi's CAs, or a CA bundle
    file or directory) for ``upstream``, from the environment, read once as requests reads
    them (``HTTPS_PROXY``/``NO_PROXY``, ``REQUESTS_CA_BUNDLE``, ``CURL_CA_BUNDLE``)."""
    with requests.Session() as s:
        found = s.merge_environment_settings(upstream, {}, None, None, None)
        proxy: str | None = requests.utils.select_proxy(upstream, found["proxies"])
        verify: bool | str | None = found["verify"]
    return proxy or None, True if verify is None else verify


def _tls_context(verify: bool | str) -> ssl.SSLContext:
    if verify is False:
        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        return ctx
    if isinstance(verify, str) and os.path.isdir(verify):
        return ssl.create_default_context(capath=verify)
    return ssl.create_default_context(cafile=verify if isinstance(verify, str)
                                      else certifi.where())


def upstream_pool(proxy: str, verify: bool | str) -> urllib3.PoolManager:
    """Connections to the upstream through ``proxy`` (http, https or socks, with the
    credentials of its URL), as requests would make them."""
    tls: dict[str, Any] = {"cert_reqs": "CERT_NONE"} if verify is False else {
        "cert_reqs": "CERT_REQUIRED",
        ("ca_cert_dir" if isinstance(verify, str) and os.path.isdir(verify)
         else "ca_certs"): verify if isinstance(verify, str) else certifi.where()}
    manager: urllib3.PoolManager = HTTPAdapter().proxy_manager_for(proxy, **tls)
    return manager


# what reaching or reading the upstream can raise (urllib3's through a proxy; http.client's and
# the socket's directly)
_UPSTREAM_ERRORS = (urllib3.exceptions.HTTPError, http.client.HTTPException, OSError)


@dataclass(frozen=True)
class _Answer:
    """The upstream's response as the relay reads it, whichever client fetched it."""

    status: int
    headers: Any  # ``get(name, default)`` and ``items()``: http.client's or urllib3's headers
    read: Callable[[], bytes]
    read1: Callable[[int], bytes]


def _chunks(up: _Answer) -> Iterator[bytes]:
    """Bytes as they arrive (no re-chunking to a fixed size, no decoding); a failure to read
    the upstream is ``_Broken`` (an ``OSError`` in the relay is the agent's side)."""
    while True:
        try:
            chunk = up.read1(65536)
        except _UPSTREAM_ERRORS as exc:
            raise _Broken(f"{type(exc).__name__}: {exc}") from exc
        if not chunk:
            return
        yield chunk
