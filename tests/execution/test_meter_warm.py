"""Metering ``warm-prefix-v1``: each run is measured as if its shared prefix had been warm.

The meter in front of the simulator (its prompt cache is real), driven by the real SDK: a cold
run's first request and a warm sibling's measure the same; what was billed is kept as billed;
the write premium is overhead; a prefix that changes inside a conversation is still paid for.

And what is billed: the first request of each prefix family is single-flighted suite-wide, so
concurrent first requests read the shared prefix instead of each writing it again.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import anthropic
import pytest

from gate.core.cost import price_table
from gate.meter import MeteredRequest, MeterProxy, RunMeter, prefix_family, warm
from gate.sim import Latency, Simulator
from gate.usage import Usage
from tests.helpers.suites import long_text

MODEL = "claude-sonnet-5-5"
EPH = {"type": "ephemeral"}
TOOLS = [{"name": "bash", "description": "Run a shell command.",
          "input_schema": {"type": "object", "properties": {"command": {"type": "string"}}},
          "cache_control": EPH}]


@pytest.fixture
def proxy() -> Iterator[MeterProxy]:
    with Simulator() as sim, MeterProxy(sim.base_url, "sim-key", price_table()) as p:
        yield p


def _system(text: str) -> list[dict[str, Any]]:
    return [{"type": "text", "text": text, "cache_control": EPH}]


def _opening(prompt: str = "Fix the bug.") -> list[dict[str, Any]]:
    return [{"role": "user", "content": [{"type": "text", "text": prompt,
                                          "cache_control": EPH}]}]


def _later(prompt: str = "Fix the bug.") -> list[dict[str, Any]]:
    return [{"role": "user", "content": prompt},
            {"role": "assistant", "content": "Looking at the files."},
            {"role": "user", "content": [{"type": "text", "text": "Go on.",
                                          "cache_control": EPH}]}]


def _ask(run: RunMeter, system: str, messages: list[dict[str, Any]],
         stream: bool = True) -> Usage:
    client = anthropic.Anthropic(base_url=run.base_url, api_key=run.token, max_retries=0)
    if not stream:
        reply = client.messages.create(model=MODEL, max_tokens=64, tools=TOOLS,  # type: ignore[arg-type]
                                       system=_system(system), messages=messages)  # type: ignore[arg-type]
        return Usage.from_api(reply.usage.model_dump())
    with client.messages.stream(model=MODEL, max_tokens=64, tools=TOOLS,  # type: ignore[arg-type]
                                system=_system(system), messages=messages) as s:  # type: ignore[arg-type]
        return Usage.from_api(s.get_final_message().usage.model_dump())


def _fields(u: Usage) -> tuple[int, int, int, int]:
    return (u.input_tokens, u.output_tokens, u.cache_creation_input_tokens,
            u.cache_read_input_tokens)


def test_cold_first_request_measures_as_a_warm_one(proxy: MeterProxy) -> None:
    system = long_text(2000)
    cold = proxy.open_run("t-r0")
    billed_first = _ask(cold, system, _opening())
    assert billed_first.cache_creation_input_tokens > 0  # nobody warmed the prefix
    sibling = proxy.open_run("t-r1")
    warm_first = _ask(sibling, system, _opening())
    assert warm_first.cache_creation_input_tokens == 0  # the cold run warmed it

    t = cold.measured()
    assert _fields(t.billed_usage) == _fields(billed_first)  # what was billed stays billed
    assert _fields(t.usage) == _fields(warm_first)  # measured as the warm sibling was billed
    assert t.usage.cache_creation_5m == 0 and t.usage.prompt_tokens == billed_first.prompt_tokens
    prices = price_table()
    assert t.billed_cost_usd == pytest.approx(prices.cost(MODEL, billed_first))
    assert t.cost_usd == pytest.approx(prices.cost(MODEL, warm_first))
    assert t.overhead_usd > 0
    assert t.cost_usd + t.overhead_usd == pytest.approx(t.billed_cost_usd)
    s = sibling.measured()
    assert _fields(s.usage) == _fields(s.billed_usage) and s.overhead_usd == 0
    assert cold.totals() == (1, t.billed_usage, t.billed_cost_usd)  # totals() stay as billed


def test_only_the_first_opening_of_a_family_is_warmed(proxy: MeterProxy) -> None:
    run = proxy.open_run("t-r0")
    _ask(run, long_text(2000), _opening())
    # the conversation goes on: writing its new turn is the agent's own cost
    later = _ask(run, long_text(2000), _later())
    assert later.cache_creation_input_tokens > 0
    # a second opening of the same family in the run (e.g. a retry after the first finished)
    again = _ask(run, long_text(2000), _opening("Another question."))
    assert again.cache_creation_input_tokens > 0  # the new first message is written
    measured = [r.measured_usage for r in run.requests]
    assert measured[0] is not None and measured[1] is None and measured[2] is None


def test_a_side_request_with_its_own_system_prompt_is_its_own_family(
        proxy: MeterProxy) -> None:
    """Claude Code sends side requests (titles, summaries) with other system prompts: each
    family's first opening is measured warm, not only the run's first request."""
    run = proxy.open_run("t-r0")
    _ask(run, long_text(2000), _opening())
    side = _ask(run, long_text(1500, "summarise"), _opening("Title for this session?"))
    assert side.cache_creation_input_tokens > 0
    assert all(r.measured_usage is not None for r in run.requests)
    assert run.measured().usage.cache_creation_input_tokens == 0


def test_a_prefix_that_changes_inside_the_conversation_is_still_paid_for(
        proxy: MeterProxy) -> None:
    """``{{ now }}`` in the system prompt: every request is a new family, but only the opening
    one is measured warm; each later request writes its whole system and history again."""
    run = proxy.open_run("t-r0")
    _ask(run, "Current time: 10:00:00\n" + long_text(2000), _opening())
    later = _ask(run, "Current time: 10:00:07\n" + long_text(2000), _later())
    assert later.cache_creation_input_tokens > 2000
    t = run.measured()
    assert t.usage.cache_creation_input_tokens == later.cache_creation_input_tokens
    assert run.requests[1].measured_usage is None


def test_concurrent_openings_of_one_family_are_all_measured_warm() -> None:
    """Two openings of a family in flight at once: neither could have found the other's
    write, so both are measured warm; one started after the first completed is not."""
    prices = price_table()
    run = RunMeter(run_id="t-r0", token="x", base_url="http://127.0.0.1:1/r/t-r0")
    body = {"model": MODEL, "system": "s", "tools": [], "messages": [
        {"role": "user", "content": "hi"}]}
    first, second = run.prefix(body), run.prefix(body)  # both started before either ended
    billed = Usage(input_tokens=3, output_tokens=5, cache_creation_input_tokens=1000,
                   cache_creation_5m=1000)
    for p in (first, second):
        run.add(MeteredRequest(MODEL, 200, True, billed, prices.cost(MODEL, billed),
                               billed=True, prefix=p), prices.cost)
    third = run.prefix(body)
    run.add(MeteredRequest(MODEL, 200, True, billed, prices.cost(MODEL, billed),
                           billed=True, prefix=third), prices.cost)
    assert [r.measured_usage is not None for r in run.requests] == [True, True, False]
    assert run.requests[0].measured_usage == warm(billed)
    assert warm(billed).cache_read_input_tokens == 1000


def test_unbilled_requests_do_not_use_up_the_warm_start() -> None:
    """A 429 before anything was billed: the retry is still the family's first request."""
    prices = price_table()
    run = RunMeter(run_id="t-r0", token="x", base_url="http://127.0.0.1:1/r/t-r0")
    body = {"model": MODEL, "messages": [{"role": "user", "content": "hi"}]}
    run.add(MeteredRequest(MODEL, 429, True, Usage(), 0.0, error="429",
                           prefix=run.prefix(body)))
    billed = Usage(cache_creation_input_tokens=10, cache_creation_5m=10)
    run.add(MeteredRequest(MODEL, 200, True, billed, prices.cost(MODEL, billed), billed=True,
                           prefix=run.prefix(body)), prices.cost)
    assert run.requests[1].measured_usage is not None


def test_prefix_family_is_model_tools_and_system_as_sent() -> None:
    base = {"model": MODEL, "system": "s", "tools": [{"name": "a"}],
            "messages": [{"role": "user", "content": "one"}]}
    fam, opening = prefix_family(base)
    assert opening and fam is not None and fam.startswith(f"{MODEL}:")
    assert prefix_family({**base, "messages": [{"role": "user", "content": "two"}]})[0] == fam
    assert prefix_family({**base, "system": "t"})[0] != fam
    assert prefix_family({**base, "tools": []})[0] != fam
    assert prefix_family({**base, "model": "claude-haiku-5-5"})[0] != fam
    assert prefix_family({**base, "messages": [*base["messages"],  # type: ignore[list-item]
                                               {"role": "assistant", "content": "x"}]})[1] is False
    assert prefix_family(None) == (None, False)
    assert prefix_family({"model": MODEL}) == (None, False)


# -- single-flight of each family's first request (what is billed) -------------------------

N = 4
PROMPTS = [f"Task {i}: fix bug number {i} in module {i}." for i in range(N)]


def _all_at_once(n: int) -> Callable[[str, bytes], None]:
    """A meter observer that holds each request on arrival until ``n`` are at the meter."""
    barrier = threading.Barrier(n, timeout=30)
    return lambda _run, _body: barrier.wait()


def _threads(fns: list[Callable[[], Any]]) -> list[Any]:
    """Run each in its own thread; their results (or exceptions), in order; none may hang."""
    out: list[Any] = [None] * len(fns)

    def go(i: int) -> None:
        try:
            out[i] = fns[i]()
        except Exception as exc:  # the test looks at it
            out[i] = exc

    ts = [threading.Thread(target=go, args=(i,), daemon=True) for i in range(len(fns))]
    for t in ts:
        t.start()
    for t in ts:
        t.join(timeout=60)
    assert not any(t.is_alive() for t in ts), "a request hung"
    return out


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "json"])
def test_concurrent_first_requests_of_a_family_write_its_prefix_once(stream: bool) -> None:
    """Four runs (four tasks) open conversations with the same tools + system at the same
    moment: one writes the shared part, the others wait for its response to begin and read
    it. Billed cache writes are those of the same requests sent one after another, and every
    run measures what it measures then."""
    system = long_text(2000)
    # a model latency: without the single flight all four would reach the simulator's cache
    # before the first one's write is visible
    latency = Latency(fixed_ms=300)
    with Simulator(latency=latency) as sim, \
            MeterProxy(sim.base_url, "sim-key", price_table()) as p:
        runs = [p.open_run(f"t{i}-r0") for i in range(N)]
        alone = [_ask(run, system, _opening(prompt), stream)
                 for run, prompt in zip(runs, PROMPTS, strict=True)]
        alone_measured = [run.measured().usage for run in runs]
    with Simulator(latency=latency) as sim, \
            MeterProxy(sim.base_url, "sim-key", price_table(), observer=_all_at_once(N)) as p:
        runs = [p.open_run(f"t{i}-r0") for i in range(N)]
        together = _threads([lambda r=run, q=prompt: _ask(r, system, _opening(q), stream)
                             for run, prompt in zip(runs, PROMPTS, strict=True)])
        assert all(isinstance(u, Usage) for u in together), together
        together_measured = [run.measured().usage for run in runs]

    shared = alone[0].cache_creation_input_tokens - alone[1].cache_creation_input_tokens
    assert shared > 2000  # tools + system: written by the first request only
    assert all(u.cache_read_input_tokens == shared for u in alone[1:])
    writers = [u for u in together if u.cache_read_input_tokens == 0]
    assert len(writers) == 1 and writers[0].cache_creation_input_tokens > shared
    assert sorted(u.cache_read_input_tokens for u in together) == [0] + [shared] * (N - 1)
    assert sum(u.cache_creation_input_tokens for u in together) \
        == sum(u.cache_creation_input_tokens for u in alone)
    # measured usage does not depend on the schedule (warm-prefix-v1)
    assert [_fields(u) for u in together_measured] == [_fields(u) for u in alone_measured]


class _Upstream:
    """A tiny Messages API on 127.0.0.1 whose answers the test scripts.

    Each request is answered by ``answer(n, body)`` (``n``: its arrival order), which returns
    (status, JSON body) or None to drop the connection without an answer. ``in_flight`` and
    ``most_in_flight`` count the requests it is answering."""

    def __init__(self, answer: Callable[[int, dict[str, Any]], tuple[int, dict[str, Any]] | None]
                 ) -> None:
        self.arrivals: list[dict[str, Any]] = []
        self.in_flight = 0
        self.most_in_flight = 0
        self.cond = threading.Condition()
        up = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["content-length"])))
                with up.cond:
                    n = len(up.arrivals)
                    up.arrivals.append(body)
                    up.in_flight += 1
                    up.most_in_flight = max(up.most_in_flight, up.in_flight)
                    up.cond.notify_all()
                try:
                    reply = answer(n, body)
                finally:
                    with up.cond:
                        up.in_flight -= 1
                if reply is None:
                    self.close_connection = True
                    return
                status, obj = reply
                data = json.dumps(obj).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def __enter__(self) -> _Upstream:
        threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()

    def wait_for(self, arrived: int) -> None:
        with self.cond:
            assert self.cond.wait_for(lambda: len(self.arrivals) >= arrived, timeout=30)


def _message(text: str = "ok") -> dict[str, Any]:
    return {"id": "msg_1", "type": "message", "role": "assistant", "model": MODEL,
            "content": [{"type": "text", "text": text}], "stop_reason": "end_turn",
            "stop_sequence": None,
            "usage": {"input_tokens": 5, "output_tokens": 1, "cache_creation_input_tokens": 0,
                      "cache_read_input_tokens": 0}}


OVERLOADED = (529, {"type": "error", "error": {"type": "overloaded_error",
                                               "message": "Overloaded"}, "request_id": "r"})


def _create(run: RunMeter, system: str = "the system prompt") -> int:
    """A non-streaming opening request through the meter; the HTTP status it got."""
    client = anthropic.Anthropic(base_url=run.base_url, api_key=run.token, max_retries=0)
    try:
        client.messages.create(model=MODEL, max_tokens=8, system=system,
                               messages=[{"role": "user", "content": "hi"}])
    except anthropic.APIStatusError as exc:
        return exc.status_code
    return 200


@pytest.mark.parametrize("failure", ["529", "dropped"])
def test_a_failed_leader_hands_the_lead_to_the_next_request(failure: str) -> None:
    """The family's first request fails (an overloaded answer, or a connection dropped with no
    answer): the waiting requests are released, one of them leads, and the rest still wait for
    its response — the upstream never has two of them at once, and nothing hangs."""
    def answer(n: int, body: dict[str, Any]) -> tuple[int, dict[str, Any]] | None:
        # hold each request a moment in case others arrive alongside it (they must not)
        with up.cond:
            up.cond.wait_for(lambda: up.in_flight > 1, timeout=0.3)
        if n == 0:
            return OVERLOADED if failure == "529" else None
        return 200, _message()

    with _Upstream(answer) as up, \
            MeterProxy(up.url, "key", price_table(), observer=_all_at_once(3)) as p:
        runs = [p.open_run(f"t{i}-r0") for i in range(3)]
        statuses = _threads([lambda r=run: _create(r) for run in runs])
    assert sorted(statuses) == [200, 200, 529 if failure == "529" else 502]
    assert len(up.arrivals) == 3 and up.most_in_flight == 1


def test_other_families_do_not_wait_for_a_slow_leader() -> None:
    """Family A's first request is held upstream; a request of family B (another system
    prompt) goes through and is answered meanwhile."""
    release_a = threading.Event()

    def answer(n: int, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        if body["system"] == "A":
            assert release_a.wait(timeout=30)
        return 200, _message()

    with _Upstream(answer) as up, MeterProxy(up.url, "key", price_table()) as p:
        a, b = p.open_run("a-r0"), p.open_run("b-r0")
        a_status: list[int] = []
        a_thread = threading.Thread(target=lambda: a_status.append(_create(a, "A")),
                                    daemon=True)
        a_thread.start()
        up.wait_for(1)  # A's leader is upstream, and held there
        try:
            assert _threads([lambda: _create(b, "B")]) == [200]
            assert a_thread.is_alive() and not a_status  # B was answered while A was held
        finally:
            release_a.set()
        a_thread.join(timeout=30)
        assert a_status == [200]
    assert [r["system"] for r in up.arrivals] == ["A", "B"]


def test_a_stalled_leader_holds_its_family_only_so_long() -> None:
    """The family's first request stalls upstream (a hung connection): the family's other
    requests wait at most the meter's ``first_flight_wait``, then go anyway, and are answered
    while the leader is still stalled."""
    release = threading.Event()

    def answer(n: int, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        if n == 0:
            assert release.wait(timeout=30)
        return 200, _message()

    with _Upstream(answer) as up, \
            MeterProxy(up.url, "key", price_table(), first_flight_wait=0.2) as p:
        leader, other = p.open_run("t0-r0"), p.open_run("t1-r0")
        got: list[int] = []
        t_leader = threading.Thread(target=lambda: got.append(_create(leader)), daemon=True)
        t_leader.start()
        up.wait_for(1)  # the leader is upstream, and stalled there
        try:
            assert _threads([lambda: _create(other)]) == [200]
            assert t_leader.is_alive() and not got  # answered while the leader stalls
        finally:
            release.set()
        t_leader.join(timeout=30)
        assert got == [200]
    assert len(up.arrivals) == 2


def test_a_run_closed_while_its_request_waits_stops_waiting() -> None:
    """A request waiting for its family's leader belongs to a run that is closed (its agent
    was stopped): it is answered at once and never forwarded; the leader is unaffected."""
    release = threading.Event()
    arrived = threading.Semaphore(0)

    def answer(n: int, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        assert release.wait(timeout=30)
        return 200, _message()

    with _Upstream(answer) as up, \
            MeterProxy(up.url, "key", price_table(),
                       observer=lambda _run, _body: arrived.release()) as p:
        leader, waiter = p.open_run("t0-r0"), p.open_run("t1-r0")
        got: dict[str, int] = {}
        t_leader = threading.Thread(target=lambda: got.update(leader=_create(leader)),
                                    daemon=True)
        t_leader.start()
        up.wait_for(1)
        t_waiter = threading.Thread(target=lambda: got.update(waiter=_create(waiter)),
                                    daemon=True)
        t_waiter.start()
        assert arrived.acquire(timeout=30) and arrived.acquire(timeout=30)  # both at the meter
        try:
            waiter.close(wait=30)  # returns once the waiting request has ended
            t_waiter.join(timeout=30)
            assert got == {"waiter": 404}  # answered while the leader is still held
        finally:
            release.set()
        t_leader.join(timeout=30)
        assert got == {"waiter": 404, "leader": 200}
        assert len(up.arrivals) == 1 and waiter.requests == []


def test_a_request_past_its_turn_cap_is_refused_without_waiting() -> None:
    """The turn cap is checked on arrival: a capped run's request of a family whose first
    request is still outstanding is refused at once, not after the wait."""
    release = threading.Event()

    def answer(n: int, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        assert release.wait(timeout=30)
        return 200, _message()

    with _Upstream(answer) as up, MeterProxy(up.url, "key", price_table()) as p:
        leader, capped = p.open_run("t0-r0"), p.open_run("t1-r0", max_turns=0)
        got: list[int] = []
        t = threading.Thread(target=lambda: got.append(_create(leader)), daemon=True)
        t.start()
        up.wait_for(1)
        try:
            refused: list[int] = []
            c = threading.Thread(target=lambda: refused.append(_create(capped)), daemon=True)
            c.start()
            c.join(timeout=10)  # the leader is held for up to 30 s
            assert refused == [400] and t.is_alive() and capped.capped is not None
        finally:
            release.set()
        t.join(timeout=30)
        assert got == [200] and len(up.arrivals) == 1
