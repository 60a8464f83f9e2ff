"""The meter reads usage from SSE streams split anywhere, and relays them without buffering.

Streams are recorded from the simulator, then rewritten with CRLF, CR-only and mixed line
endings (all legal SSE), and fed to the meter's reader cut at every byte and at random places.
The relay tests put the real ``MeterProxy`` between a client and a scripted loopback upstream.
"""

from __future__ import annotations

import json
import random
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
import requests

from gate.core.cost import price_table
from gate.meter import MeterProxy, _SSELines, _SSEUsage
from gate.sim import Simulator

KEY = "sk-ant-upstream-key"
MODEL = "claude-sonnet-5-5"


def _record(sim: Simulator, body: dict[str, Any]) -> bytes:
    r = requests.post(f"{sim.base_url}/v1/messages", json={**body, "stream": True},
                      headers={"x-api-key": "k", "anthropic-version": "2023-06-01"},
                      stream=True, timeout=10)
    assert r.status_code == 200
    assert "text/event-stream" in r.headers["content-type"]
    return r.raw.read()


@pytest.fixture(scope="module")
def recorded() -> dict[str, bytes]:
    """Real simulator streams: a cache write, then a cache read with a tool call."""
    system = [{"type": "text", "text": "You fix small bugs. " * 300,
               "cache_control": {"type": "ephemeral"}}]
    tool = {"name": "bash", "description": "Run a shell command.",
            "input_schema": {"type": "object", "properties": {"command": {"type": "string"}}}}
    body = {"model": MODEL, "max_tokens": 300, "system": system, "tools": [tool],
            "messages": [{"role": "user", "content": "List the files, then say hi."}]}
    with Simulator() as sim:
        write, read = _record(sim, body), _record(sim, body)
    return {"write": write, "read": read}


def _endings(stream: bytes) -> dict[str, bytes]:
    assert b"\r" not in stream  # the simulator writes LF
    lines = stream.split(b"\n")
    mixed, prev = b"", b""
    for i, ln in enumerate(lines[:-1]):
        eol = (b"\r\n", b"\r", b"\n")[i % 3]
        if prev == b"\r" and not ln and eol == b"\n":
            eol = b"\r\n"  # CR then a bare LF would be one CRLF, not a blank line
        mixed, prev = mixed + ln + eol, eol
    return {"lf": stream, "crlf": stream.replace(b"\n", b"\r\n"),
            "cr": stream.replace(b"\n", b"\r"), "mixed": mixed + lines[-1]}


def _read(pieces: list[bytes]) -> _SSEUsage:
    t = _SSEUsage()
    for p in pieces:
        t.feed(p)
    return t


def _summary(t: _SSEUsage) -> tuple[Any, ...]:
    return t.started, t.stopped, t.error, t.usage


def test_recorded_streams_carry_usage(recorded: dict[str, bytes]) -> None:
    """The reference reading (one piece, LF) is the stream's own usage, so it is worth matching."""
    for name, stream in recorded.items():
        t = _read([stream])
        assert t.started and t.stopped and t.error is None, name
        assert t.usage is not None and t.usage["output_tokens"] > 1, name
    assert _read([recorded["write"]]).usage["cache_creation_input_tokens"] > 0  # type: ignore[index]
    assert _read([recorded["read"]]).usage["cache_read_input_tokens"] > 0  # type: ignore[index]


@pytest.mark.parametrize("ending", [  # quadratic: one ending in the quick loop
    "lf", *(pytest.param(e, marks=pytest.mark.slow) for e in ("crlf", "cr", "mixed"))])
def test_split_at_every_byte_reads_the_same_usage(recorded: dict[str, bytes],
                                                  ending: str) -> None:
    for name, lf in recorded.items():
        expected = _summary(_read([lf]))
        stream = _endings(lf)[ending]
        assert _summary(_read([stream])) == expected, (name, ending)
        for i in range(len(stream) + 1):
            got = _summary(_read([stream[:i], stream[i:]]))
            assert got == expected, f"{name}/{ending} split at byte {i}: {stream[i-3:i+3]!r}"


@pytest.mark.parametrize("ending", ["lf", "crlf", "cr", "mixed"])
def test_random_three_way_and_byte_by_byte_splits(recorded: dict[str, bytes],
                                                  ending: str) -> None:
    rng = random.Random(20261201)
    for name, lf in recorded.items():
        expected = _summary(_read([lf]))
        stream = _endings(lf)[ending]
        assert _summary(_read([bytes([b]) for b in stream])) == expected, (name, ending)
        for _ in range(500):
            i, j = sorted(rng.randrange(len(stream) + 1) for _ in range(2))
            got = _summary(_read([stream[:i], stream[i:j], stream[j:]]))
            assert got == expected, f"{name}/{ending} split at {i}, {j}"


def test_a_cr_ending_a_chunk_is_not_followed_by_a_blank_line() -> None:
    """CR | LF is one line ending; CR | LF | LF is a line ending and then a blank line."""
    lines = _SSELines()
    assert lines.feed(b"data: 1\r") == [b"data: 1"]
    assert lines.feed(b"\n") == []
    assert lines.feed(b"") == []
    assert lines.feed(b"\n") == [b""]
    assert lines.feed(b"a\r\r\nb") == [b"a", b""]
    assert lines.feed(b"\n") == [b"b"]


def test_spec_field_rules() -> None:
    """One space after the colon is dropped, data lines join with LF, comments and other
    fields are ignored, a BOM opens the stream, an event without a blank line is discarded."""
    start = {"type": "message_start", "message": {"usage": {"input_tokens": 7}}}
    text = json.dumps(start, indent=1)  # multi-line JSON: several data lines
    data = "".join(f"data:{line}\n" if i % 2 else f"data: {line}\n"
                   for i, line in enumerate(text.split("\n")))
    stream = ("\ufeff: a comment\nevent: message_start\nid: 1\n" + data + "\n").encode()
    t = _read([stream])
    assert t.started and t.usage == {"input_tokens": 7}
    t.feed(b'data: {"type": "message_stop"}')  # no blank line yet: not dispatched
    assert not t.stopped
    t.feed(b"\r\n\r\n")
    assert t.stopped


# -- through the real proxy ---------------------------------------------------------------


class Upstream:
    """A loopback Messages API that writes a scripted stream in the given pieces.

    With ``hold`` set it writes the first piece, then waits for ``release`` (set by the test
    once its client has read that piece through the meter) before writing the rest.
    """

    def __init__(self) -> None:
        self.pieces: list[bytes] = []
        self.hold = False
        self.release = threading.Event()
        self.released_in_time: bool | None = None
        up = self

        class H(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a: Any) -> None:
                pass

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers["content-length"]))
                assert self.headers.get("x-api-key") == KEY
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.end_headers()  # close-delimited body
                for i, piece in enumerate(up.pieces):
                    if i == 1 and up.hold:
                        up.released_in_time = up.release.wait(30)
                    elif i:
                        time.sleep(0.05)  # separate reads on the meter's side
                    self.wfile.write(piece)
                    self.wfile.flush()
                self.close_connection = True

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"


@pytest.fixture
def upstream() -> Iterator[Upstream]:
    up = Upstream()
    yield up
    up.release.set()
    up.server.shutdown()
    up.server.server_close()


@pytest.fixture
def proxy(upstream: Upstream) -> Iterator[MeterProxy]:
    with MeterProxy(upstream.url, KEY, price_table()) as p:
        yield p


def _post(run: Any, timeout: float = 10) -> requests.Response:
    return requests.post(f"{run.base_url}/v1/messages", stream=True, timeout=timeout,
                         headers={"x-api-key": run.token},
                         json={"model": MODEL, "max_tokens": 5, "stream": True,
                               "messages": [{"role": "user", "content": "x"}]})


def test_relay_counts_a_stream_whose_chunks_split_crlf(proxy: MeterProxy, upstream: Upstream,
                                                       recorded: dict[str, bytes]) -> None:
    """Arriving in pieces cut between CR and LF, the stream is still billed in full and the
    client gets it byte for byte."""
    stream = _endings(recorded["write"])["crlf"]
    expected = _read([recorded["write"]]).usage
    assert expected is not None
    cuts = [i + 1 for i in range(len(stream) - 1) if stream[i:i + 2] == b"\r\n"]
    for n, cut in enumerate(cuts[:4] + cuts[-4:]):  # around message_start and message_delta
        upstream.pieces = [stream[:cut], stream[cut:]]
        run = proxy.open_run(f"t-split-{n}")
        r = _post(run)
        assert r.content == stream
        turns, usage, cost = run.totals()
        assert turns == 1, f"cut at byte {cut}: not billed"
        assert usage.output_tokens == expected["output_tokens"]
        assert usage.cache_creation_input_tokens == expected["cache_creation_input_tokens"]
        assert cost > 0


def test_stream_reaches_the_client_before_the_upstream_finishes(
        proxy: MeterProxy, upstream: Upstream, recorded: dict[str, bytes]) -> None:
    """The upstream will not send the rest until the client has read message_start through
    the meter. A meter that buffered the stream would leave the client waiting: it times out."""
    stream = recorded["read"]
    first_end = stream.index(b"\n\n") + 2
    upstream.pieces = [stream[:first_end], stream[first_end:]]
    upstream.hold = True
    run = proxy.open_run("t-unbuffered")
    r = _post(run, timeout=5)
    lines = r.iter_lines()
    try:
        first = next(lines), next(lines)
    except requests.exceptions.ConnectionError as exc:  # the read timed out
        pytest.fail(f"message_start did not reach the client while the upstream held: {exc}")
    assert first[0] == b"event: message_start"
    assert b'"message_start"' in first[1]
    upstream.release.set()
    rest = b"\n".join(lines)
    assert b"message_stop" in rest
    assert upstream.released_in_time is True
    assert run.totals()[1].output_tokens == _read([stream]).usage["output_tokens"]  # type: ignore[index]
