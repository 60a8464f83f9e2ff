"""One run's slice of the meter: what its model requests cost, as billed and as measured
(``warm-prefix-v1``: see the package docstring), and its caps."""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from gate.upstream import ANTHROPIC, Upstream
from gate.usage import Usage


class _Registry(Protocol):
    """What a run's meter asks of the proxy it is registered with (the proxy, one layer up)."""

    def _forget(self, run_id: str) -> None: ...

@dataclass(frozen=True)
class RefusedRequest:
    """A request the meter did not forward (an endpoint outside its allow-list)."""

    method: str
    path: str


#: who caused a metering problem or a failed model request: the agent under test (a model with
#: no price, a request refused or left in flight, a stream it cut, its own malformed request),
#: which counts against its run; or the provider and the machine (5xx, overload, a rate limit,
#: a stream the upstream cut, no connection), which is infra
Cause = Literal["agent", "provider"]


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
    by: Cause | None = None  # who caused ``error``
    estimated: bool = False  # a stream cut short: its output tokens are an estimate
    tool_fee_usd: float = 0.0  # of ``cost_usd``: its server tools' fees (web searches)

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
    #: why these totals may miss what the upstream billed (a request still in flight when the
    #: run closed, a billed model with no price, a stream cut before it began); ``None``:
    #: every billed request is in them
    unmetered: str | None = None
    unmetered_by: Cause | None = None  # who caused it (``agent``: the run fails)
    estimated: int = 0  # billed requests whose output tokens are an estimate (cut streams)

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
    _proxy: _Registry | None = field(default=None, repr=False)
    run_name: str = ""
    #: the upstream the meter forwards the run's requests to (what an agent's environment
    #: holds to reach the meter is its answer)
    api: Upstream = ANTHROPIC
    _families: set[str] = field(default_factory=set, repr=False)  # billed and completed
    # the run's caps: past them the meter answers model requests with an API error instead of
    # forwarding them, so they bind every agent kind (a command agent counts no turns itself)
    max_turns: int | None = None
    max_cost_usd: float | None = None
    capped: str | None = None  # why the meter stopped answering, once it did
    _messages_in_flight: int = 0
    _billed: int = 0  # billed requests so far, and what they cost: the caps read these
    _billed_cost: float = 0.0
    _forwarded: int = 0  # messages requests begun (forwarded or about to be), not yet ended
    unmetered: str | None = None  # why the run's totals may miss a billed request, once known
    unmetered_by: Cause | None = None
    #: billed to the gate's account for the run but not by the agent (the meter's own check of
    #: the account's credit): in the billed cost, so in the run's overhead
    _own_usd: float = 0.0
    # the newest ended request's failure and who caused it (None: it succeeded)
    _last: tuple[Cause, str] | None = field(default=None, repr=False)

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

    def begin(self, billable: bool = False) -> bool:
        """A request of the run is about to be forwarded; ``False`` (do not forward it) once
        the run is closed: a request that passed the run lookup just before the close must
        not go out after the run's totals were taken."""
        with self._lock:
            if self._closed:
                return False
            self._in_flight += 1
            self._forwarded += billable
            return True

    def end(self, billable: bool = False) -> None:
        with self._lock:
            self._in_flight -= 1
            self._forwarded -= billable
            self._idle.notify_all()

    def not_metered(self, why: str, by: Cause = "agent") -> None:
        """Mark the run's totals incomplete (the first reason is kept, an agent's first)."""
        with self._lock:
            if self.unmetered is None or (by == "agent" and self.unmetered_by != "agent"):
                self.unmetered, self.unmetered_by = why, by

    def overhead(self, usd: float) -> None:
        """A cost of the meter's own for this run (never the agent's measured cost)."""
        with self._lock:
            self._own_usd += usd

    def agent_fault(self, why: str) -> None:
        """The meter refused a request of the agent's (never forwarded): its newest failure."""
        with self._lock:
            self._last = ("agent", why)

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
                req.measured_cost_usd = cost(req.model, req.measured_usage) + req.tool_fee_usd
        with self._lock:
            if req.billed and req.prefix is not None and req.prefix.family is not None:
                self._families.add(req.prefix.family)
            if req.billed:
                self._billed += 1
                self._billed_cost += req.cost_usd
            self.requests.append(req)
            self._last = None if req.error is None else (req.by or "provider", req.error)

    def refuse(self, req: RefusedRequest) -> None:
        with self._lock:
            self._last = ("agent", f"the gate's meter refused {req.method} {req.path[:120]}")
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
            billed_cost_usd=sum(r.cost_usd for r in billed) + self._own_usd,
            unmetered=self.unmetered, unmetered_by=self.unmetered_by,
            estimated=sum(1 for r in billed if r.estimated),
        )

    def api_failure(self) -> str | None:
        """Why the model API last failed, if the run's newest request failed by the provider's
        or the machine's doing (infra)."""
        with self._lock:
            last = self._last
        return f"model API failed: {last[1]}" if last and last[0] == "provider" else None

    def agent_error(self) -> str | None:
        """Why the run's newest model request failed, if the agent caused it (a request the
        meter refused, one the API refused as malformed, a stream the agent cut)."""
        with self._lock:
            last = self._last
        return (f"the agent's own model request failed: {last[1]}"
                if last and last[0] == "agent" else None)

    @property
    def closed(self) -> bool:
        return self._closed

    def close(self, wait: float = 10.0) -> None:
        """Stop accepting this run's requests; give those in flight (an agent killed
        mid-stream, a child it left behind) up to ``wait`` seconds to be counted. A model
        request still in flight after that may yet be billed, and would not be in the run's
        totals: the run is then marked not fully metered (``unmetered``), never under-counted
        in silence."""
        with self._lock:
            first = not self._closed
            self._closed = True
        if first and self._proxy is not None:
            self._proxy._forget(self.run_id)
        with self._lock:
            self._idle.wait_for(lambda: self._in_flight == 0, timeout=wait)
            if self._forwarded and self.unmetered_by != "agent":
                self.unmetered, self.unmetered_by = (
                    f"not fully metered: {self._forwarded} model request(s) still in flight "
                    f"{wait:g} s after the run ended (a process of the agent outlived it); "
                    "what they are billed is not in this run's totals"), "agent"

    def __repr__(self) -> str:  # the token stays out of logs
        return f"RunMeter(run_id={self.run_id!r}, requests={len(self.requests)})"
