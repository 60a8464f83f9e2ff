"""One execution session: a plan of runs over one or more arms, run through one pool.

A plain ``gate run``, a run of skill conditions and a same-job A/B are *plans* for the same
session; the session owns what they share, once:

- the sandboxes (one provider, one ``cancel`` event that stops every running sandbox),
- the model upstream and the metering proxy in front of it (one simulator under ``--sim``),
- the results file of each arm, written at the start marked incomplete so a killed run's file
  is never promoted, and rewritten whole when the plan is done,
- where a landed run goes first (the fsync'd journal of ``gate run``, or memory for an A/B),
- the budget (``--max-cost``) that may refuse to start a run, and its record in every file
  (at the start with its forecast, at a stop, at the end),
- the interruption rule: on Ctrl-C, SIGTERM or a crash every file says so and lists the runs
  that are missing, and the exception goes on.

A plan (:class:`SessionPlan`) is frozen data built by :mod:`gate.execution.run` or
:mod:`gate.execution.ab`; the session never decides what runs, only how.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
from collections.abc import Callable, Collection, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from gate._files import printable
from gate.agents import Agent, AgentKind, agent_kind, agent_kind_names
from gate.core.config import GateConfig
from gate.core.cost import PriceTable
from gate.core.results import (
    Interruption,
    Journal,
    MissingRun,
    Results,
    RunKey,
    RunResult,
    SuiteInfo,
    TaskInfo,
    read_journal,
    runs_by_task,
    write_results,
)
from gate.core.tasks import Suite, Task, task_format
from gate.errors import BadInput
from gate.execution.runner import Arm, RunOptions, run_many
from gate.meter import MeterProxy
from gate.sandbox import SandboxProvider
from gate.upstream import Endpoint, Upstream, get_upstream

SIM_CREDENTIAL = "gate-simulator-key"

Item = tuple[Task, int] | tuple[Task, int, Arm]
Work = list[tuple[Task, int]] | list[tuple[Task, int, Arm]]


def suite_info(suite: Suite, net_raw: Collection[str] = ()) -> SuiteInfo:
    """The suite as the results record it; ``net_raw``: the tasks ``[suite].net_raw`` names
    (marked where their long-lived container keeps NET_RAW: Harbor's format)."""
    return SuiteInfo(
        digest=suite.digest,
        tasks={t.id: TaskInfo(digest=t.digest, difficulty=t.difficulty,
                              net_raw=True if t.id in net_raw and
                              task_format(t).lifecycle == "per_run" else None)
               for t in suite.tasks},
    )


def resolve_names(cfg: GateConfig, kind: str) -> AgentKind:
    """The agent kind and the sandbox backend ``cfg`` names, checked where the session looks
    them up (config validates no registry name): an unknown one is exit 2 naming the file and
    the field, before anything starts; so is an ``[agent] install`` the configured kind
    ignores (only a command agent is installed into each task's image)."""
    from gate.sandbox import backend_names

    if cfg.suite.sandbox not in backend_names():
        raise BadInput(f"{cfg.where('suite.sandbox')}: unknown sandbox "
                       f"{printable(cfg.suite.sandbox)!r} (known: {', '.join(backend_names())})")
    spec = agent_kind(kind, where=cfg.where("agent.kind"))
    # `[agent] install` is the configured agent's: a kind that ignores it would run without
    # what it names (an overriding `--agent oracle` runs the suite's own solutions instead)
    if cfg.agent.install and kind == cfg.agent.kind and spec.configured \
            and not spec.installs(cfg):
        honour = " or ".join(f"kind = {json.dumps(n)}" for n in agent_kind_names()
                             if agent_kind(n).in_sandbox)
        raise BadInput(f"{cfg.where('agent.install')}: the {kind} agent ignores it (only "
                       f"{honour} installs into each task's image): remove it, or set {honour}")
    return spec


def resolve_upstream(cfg: GateConfig) -> Upstream:
    """The upstream ``[agent] upstream`` names (an unknown one is exit 2 naming the file and
    the field, before anything starts)."""
    return get_upstream(cfg.agent.upstream, where=cfg.where("agent.upstream"))


def server_tools(cfg: GateConfig, upstream: Upstream | None = None) -> frozenset[str]:
    """The server tools ``[suite].server_tools`` lets a run's requests offer, checked by name
    against the upstream's (an unknown one is exit 2 naming the file and the field, before
    anything starts)."""
    known = [t.name for t in (upstream or resolve_upstream(cfg)).server_tools]
    for name in cfg.suite.server_tools:
        if name not in known:
            raise BadInput(f"{cfg.where('suite.server_tools')}: unknown server tool "
                           f"{printable(name)!r} (known: {', '.join(known) or 'none'})")
    return frozenset(cfg.suite.server_tools)


def build_agent(cfg: GateConfig, kind: str, model: str, label: str) -> Agent:
    """The agent of registered kind ``kind`` (bad configuration: exit 2, before any run)."""
    return agent_kind(kind).build(cfg, model, label)


@contextlib.contextmanager
def open_upstream(*, sim: bool, suite: Suite, ledger: Path, seed: int | None,
                  sim_options: dict[str, Any], upstream: Upstream | None = None
                  ) -> Iterator[Endpoint]:
    """The model API this session talks to, as ``upstream`` (the Messages API direct unless
    named) reaches it: the built-in simulator speaking its protocol and checking its
    authentication (``--sim``), else the upstream the environment configures (never a silent
    fall-back to the simulator)."""
    api = upstream or get_upstream("anthropic")
    if sim:
        from gate.sim import Simulator

        with Simulator(tasks_dir=suite.root, seed=seed or 0, ledger_path=ledger,
                       auth=api.simulator_auth(), credential=SIM_CREDENTIAL,
                       **sim_options) as simulator:
            yield api.simulated(simulator.base_url, SIM_CREDENTIAL)
        return
    yield api.open(os.environ)


def item_key(item: Item) -> RunKey:
    """The key of the run a plan item makes."""
    return RunKey(item[0].id, item[2].options.condition if len(item) == 3 else None, item[1])


def missing_runs(work: Sequence[Item], landed: set[RunKey] | None = None) -> list[MissingRun]:
    return [MissingRun(task=k.task, replication=k.replication, condition=k.condition)
            for k in map(item_key, work) if landed is None or k not in landed]


def mark_interrupted(results: Results, work: Sequence[Item], exc: BaseException) -> None:
    """The file says the run was stopped, why, and which of ``work``'s runs are missing."""
    missing = missing_runs(work, {r.key for r in results.runs})
    reason = ("interrupted: Ctrl-C or SIGTERM" if isinstance(exc, KeyboardInterrupt)
              else f"stopped by an error: {type(exc).__name__}")
    results.interrupted = Interruption(reason=reason, missing=missing)


def spend(run: RunResult) -> float:
    """What a run really cost: measured cost plus its share of suite overhead."""
    return run.cost_usd + (run.overhead_usd or 0.0)


class Budget:
    """``--max-cost``: forecast from the baseline's per-task mean spend; a run starts only if
    spent + the forecast of the runs in flight + its own forecast stays within the limit.
    Once one run is refused none starts after it (the plan order is kept; what did not run
    is listed as missing). Without a baseline a run is forecast at the mean spend of the
    runs landed so far."""

    def __init__(self, limit: float, baseline: Results | None,
                 work: Sequence[Item], kept: list[RunResult]) -> None:
        self.limit = limit
        self._lock = threading.Lock()
        per_task = runs_by_task(baseline.runs if baseline is not None else [])
        self.per_task = {t: sum(spend(r) for r in rs) / len(rs) for t, rs in per_task.items()}
        self.typical = (sum(self.per_task.values()) / len(self.per_task)
                        if self.per_task else None)
        self.basis = "baseline per-task mean spend" if self.per_task else None
        self.spent = sum(spend(r) for r in kept)
        self.landed_runs = len(kept)
        self.in_flight: dict[RunKey, float] = {}
        self.forecast = (self.spent + sum(self._forecast(item[0].id) for item in work)
                         if self.per_task else None)
        self.stopped: str | None = None
        self.skipped = 0

    def _forecast(self, task: str) -> float:
        if task in self.per_task:
            return self.per_task[task]
        if self.typical is not None:
            return self.typical
        return self.spent / self.landed_runs if self.landed_runs else 0.0

    def admit(self, task: Task, replication: int, condition: str | None = None) -> bool:
        with self._lock:
            if self.stopped is None:
                f = self._forecast(task.id)
                committed = self.spent + sum(self.in_flight.values())
                # a run with no forecast yet (no baseline, nothing landed) needs budget left
                if committed + f <= self.limit and (f > 0 or committed < self.limit):
                    self.in_flight[RunKey(task.id, condition, replication)] = f
                    return True
                self.stopped = (f"--max-cost ${self.limit:.4f} reached: ${self.spent:.4f} "
                                f"spent + ${committed - self.spent:.4f} in flight + "
                                f"${f:.4f} forecast for "
                                f"{RunKey(task.id, condition, replication)} would pass "
                                "it; no further run was started")
            self.skipped += 1
            return False

    def landed(self, run: RunResult) -> None:
        with self._lock:
            self.in_flight.pop(run.key, None)
            self.spent += spend(run)
            self.landed_runs += 1

    def record(self) -> dict[str, Any]:
        """What the results file (and a comment) shows of the budget."""
        with self._lock:
            return {"max_cost_usd": self.limit,
                    "forecast_usd": None if self.forecast is None else round(self.forecast, 6),
                    "forecast_basis": self.basis, "spent_usd": round(self.spent, 6),
                    "skipped_runs": self.skipped, "stopped": self.stopped}


# ---- the plan -----------------------------------------------------------------------------


@dataclass(frozen=True)
class ArmFile:
    """One results file of a session: the runs of arm ``arm`` (``None``: every run of the
    plan, a session of one arm). ``header(endpoint)`` makes the file's header (the upstream
    is known only once the meter is up; None: no agent uses a model); ``incomplete`` is what
    the file says until the session ends."""

    arm: str | None
    path: Path
    header: Callable[[Endpoint | None], Results]
    incomplete: str
    #: the part of the arm's requests every turn shares and caches (``Agent.cache_prefix``):
    #: counted once the upstream is up and recorded as the file's ``cache_prefix``
    prefix: dict[str, Any] | None = None

    def items(self, work: Sequence[Item]) -> list[Item]:
        if self.arm is None:
            return list(work)
        return [i for i in work if len(i) == 3 and i[2].name == self.arm]


@dataclass(frozen=True)
class JournalSpec:
    """``gate run``'s journal: a fresh one with the identity and the runs kept, or the killed
    run's, continued (``--resume``)."""

    path: Path
    identity: dict[str, Any]
    kept: list[RunResult]
    resume: bool


class _Sink(Protocol):
    """Where a landed run goes first, and where the final file's runs are read from."""

    def append(self, run: RunResult) -> None: ...

    def runs(self, file: ArmFile) -> list[RunResult]: ...

    def close(self) -> None: ...


class _JournalSink:
    def __init__(self, spec: JournalSpec) -> None:
        self.path = spec.path
        self._journal = (Journal(spec.path, {}, resume=True) if spec.resume else
                         Journal(spec.path, {"identity": spec.identity}, spec.kept))

    def append(self, run: RunResult) -> None:
        self._journal.append(run)  # O(1) per run, on disk before anything else hears of it

    def runs(self, file: ArmFile) -> list[RunResult]:
        self.close()
        return read_journal(self.path)[1]

    def close(self) -> None:
        self._journal.close()


class _MemorySink:
    def __init__(self, results: dict[str | None, Results]) -> None:
        self._results = results
        self._lock = threading.Lock()

    def append(self, run: RunResult) -> None:
        with self._lock:
            self._results[run.arm].runs.append(run)

    def runs(self, file: ArmFile) -> list[RunResult]:
        return self._results[file.arm].runs

    def close(self) -> None:
        pass


@dataclass(frozen=True)
class SessionPlan:
    """Everything a session runs, decided before it starts.

    ``work`` is what is left to run, ``planned`` the whole plan (a resumed run's runs that
    landed before are in neither ``work``'s missing list nor run again). An item with an arm
    runs the arm's agent and options; one without runs ``agent`` with ``options``.
    ``upstream``: opens the model API (``None``: no agent of the plan uses a model)."""

    work: Work
    planned: Work
    files: list[ArmFile]
    provider: SandboxProvider
    cancel: threading.Event
    prices: PriceTable
    jobs: int
    agent: Agent | None = None
    options: RunOptions | None = None
    upstream: Callable[[], contextlib.AbstractContextManager[Endpoint]] | None = None
    request_observer: Callable[[str, bytes], None] | None = None
    journal: JournalSpec | None = None
    budget: Budget | None = None
    on_start: Callable[[Results, int], None] | None = field(default=None)
    on_result: Callable[[RunResult], None] | None = field(default=None)
    server_tools: frozenset[str] = frozenset()  # [suite].server_tools: what the meter admits


def _open_meter(stack: contextlib.ExitStack, plan: SessionPlan
                ) -> tuple[MeterProxy | None, Endpoint | None]:
    if plan.upstream is None:
        return None, None
    endpoint = stack.enter_context(plan.upstream())
    run_header: str | None = None
    if endpoint.simulated:  # the simulator draws each run's randomness by name
        from gate.sim import RUN_HEADER

        run_header = RUN_HEADER
    meter = stack.enter_context(MeterProxy(
        endpoint, None, plan.prices, observer=plan.request_observer, run_header=run_header,
        server_tools=plan.server_tools))
    return meter, endpoint


#: the one message a prefix is counted with, and then without (count_tokens needs one)
_PROBE = [{"role": "user", "content": "."}]


def prefix_record(meter: MeterProxy, prefix: dict[str, Any]) -> dict[str, Any] | None:
    """What a results file records of an arm's shared prefix (tools + system): its tokens,
    by the upstream's own count (the count with the prefix less the count without it), the
    model's minimum cacheable length, and whether it reaches it (below it the API caches
    none of it, and says nothing). None when the upstream gives no count: nothing guessed."""
    from gate.sim import min_cacheable_tokens  # the API's minimums, which the simulator keeps

    model = str(prefix["model"])
    with_it = meter.count_tokens({**prefix, "messages": _PROBE})
    without = meter.count_tokens({"model": model, "messages": _PROBE})
    if with_it is None or without is None:
        return None
    tokens, minimum = max(with_it - without, 0), min_cacheable_tokens(model)
    return {"model": model, "tokens": tokens, "minimum": minimum, "cached": tokens >= minimum}


def _with_budget(results: Results, budget: Budget | None) -> Results:
    """The one place a results file gets the budget's record (the session's, every arm's
    runs counted): as the run starts (its forecast), and as it ends or is stopped."""
    if budget is not None:
        results.budget = budget.record()  # type: ignore[attr-defined]
    return results


def _finish(results: Results, file: ArmFile, plan: SessionPlan, meter: MeterProxy | None,
            runs: list[RunResult]) -> None:
    results.runs = runs
    results.interrupted = None
    budget = plan.budget
    _with_budget(results, budget)
    if budget is not None and budget.skipped:
        results.interrupted = Interruption(
            reason=f"budget: {budget.stopped}",
            missing=missing_runs(file.items(plan.planned), {r.key for r in runs}))
    if meter is not None and meter.unpriced:
        results.unpriced_models = sorted(meter.unpriced)  # type: ignore[attr-defined]
    results.runs.sort(key=lambda r: r.key.order)
    write_results(file.path, results)


def execute(plan: SessionPlan) -> dict[str | None, Results]:
    """Run ``plan``: each arm's results file, complete, by arm (``None`` for a session of
    one arm). On any escape every file is rewritten as interrupted and the exception goes
    on."""
    with contextlib.ExitStack() as stack:
        stack.callback(plan.provider.close)
        meter, upstream = _open_meter(stack, plan)
        results: dict[str | None, Results] = {}
        for file in plan.files:
            res = _with_budget(file.header(upstream), plan.budget)
            if meter is not None and file.prefix is not None and (
                    record := prefix_record(meter, file.prefix)):
                res.cache_prefix = record  # type: ignore[attr-defined]
            # until the last run lands the file says it is incomplete: a killed run's file
            # can be read, never promoted
            res.interrupted = Interruption(reason=file.incomplete,
                                           missing=missing_runs(file.items(plan.work)))
            write_results(file.path, res)
            results[file.arm] = res
        sink: _Sink = (_JournalSink(plan.journal) if plan.journal is not None
                       else _MemorySink(results))
        stack.callback(sink.close)
        if plan.on_start:
            plan.on_start(results[plan.files[0].arm], len(plan.work))
        budget, on_result = plan.budget, plan.on_result

        def land(run: RunResult) -> None:
            sink.append(run)
            if budget is not None:
                budget.landed(run)
            if on_result:
                on_result(run)

        try:
            run_many(plan.work, plan.agent, jobs=plan.jobs, provider=plan.provider,
                     meter=meter, options=plan.options, on_result=land, cancel=plan.cancel,
                     admit=budget.admit if budget is not None else None)
        except BaseException as exc:
            # Ctrl-C, SIGTERM (raised as KeyboardInterrupt) or a crash: each file says so,
            # and which runs are missing, so it can never be promoted into the baseline
            for file in plan.files:
                res = results[file.arm]
                res.runs = sink.runs(file)
                mark_interrupted(_with_budget(res, budget), file.items(plan.planned), exc)
                write_results(file.path, res)
            raise
        for file in plan.files:
            _finish(results[file.arm], file, plan, meter, sink.runs(file))
    return results


__all__ = ["SIM_CREDENTIAL", "ArmFile", "Budget", "JournalSpec", "SessionPlan",
           "build_agent", "execute", "item_key", "mark_interrupted",
           "missing_runs", "open_upstream", "prefix_record", "resolve_names",
           "resolve_upstream", "spend", "suite_info"]
