"""``gate run``: the suite against the agent configuration, results written as they land.

Every agent kind except the oracle talks to the model through the metering proxy. Under
``--sim`` the proxy's upstream is the built-in simulator, started in-process on loopback;
otherwise it is ``ANTHROPIC_BASE_URL`` or the public API, and a key is required — the gate
never falls back to the simulator on its own.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gate._git import current_commit
from gate.agents import Agent, agent_kind
from gate.config import GateConfig
from gate.cost import price_table
from gate.errors import BadInput, Unmeasurable
from gate.fingerprint import fingerprint, fingerprint_parts
from gate.meter import METERING, PUBLIC_API, MeterProxy
from gate.results import (
    AgentInfo,
    Interruption,
    MissingRun,
    Results,
    RunKey,
    RunResult,
    Schedule,
    SuiteInfo,
    TaskInfo,
    new_results,
    write_results,
)
from gate.runner import RunOptions, plan, run_many
from gate.sandbox import admit, suite_sandboxes
from gate.tasks import Suite, Task, load_suite

SIM_CREDENTIAL = "gate-simulator-key"
NO_KEY = ("no ANTHROPIC_API_KEY in the environment: set it to run against the API, or pass "
          "--sim (GATE_SIM=1) to run against the built-in simulator")


@dataclass
class RunRequest:
    config: GateConfig
    output: Path = Path("results.json")
    tasks_dir: Path | None = None
    task_ids: list[str] = field(default_factory=list)
    agent_kind: str | None = None
    replications: int | None = None
    jobs: int | None = None
    keep_workspaces: bool = False
    transcripts: bool = True
    sim: bool = False
    model: str | None = None
    seed: int | None = None
    sim_options: dict[str, Any] = field(default_factory=dict)
    # replications first_replication .. first_replication + replications - 1 are run; runs of
    # an earlier stage (``keep_runs``) stay in the results file
    first_replication: int = 0
    keep_runs: list[RunResult] = field(default_factory=list)
    # the replications of each look so far, when `gate ci` runs sequentially (recorded only)
    sequential: list[int] | None = None
    # sees every model request body the meter forwards (run id, raw JSON); for benchmarks
    request_observer: Callable[[str, bytes], None] | None = None


def suite_info(suite: Suite) -> SuiteInfo:
    return SuiteInfo(
        digest=suite.digest,
        tasks={t.id: TaskInfo(digest=t.digest, difficulty=t.difficulty) for t in suite.tasks},
    )


def build_agent(cfg: GateConfig, kind: str, model: str, label: str) -> Agent:
    """The agent of registered kind ``kind`` (bad configuration: exit 2, before any run)."""
    return agent_kind(kind).build(cfg, model, label)


@contextlib.contextmanager
def _upstream(req: RunRequest, suite: Suite,
              ledger: Path) -> Iterator[tuple[str, str, str, str]]:
    """(base URL, credential, its header, label) of the model API this run talks to."""
    if req.sim:
        from gate.sim import Simulator

        with Simulator(tasks_dir=suite.root, seed=req.seed or 0, ledger_path=ledger,
                       **req.sim_options) as sim:
            yield sim.base_url, SIM_CREDENTIAL, "x-api-key", "simulator"
        return
    # An API key goes as x-api-key; an auth token (ANTHROPIC_AUTH_TOKEN) as a bearer token.
    key, header = os.environ.get("ANTHROPIC_API_KEY"), "x-api-key"
    if not key:
        key, header = os.environ.get("ANTHROPIC_AUTH_TOKEN"), "authorization"
    if not key:
        raise Unmeasurable(NO_KEY)
    base = os.environ.get("ANTHROPIC_BASE_URL") or PUBLIC_API
    yield base, key, header, "anthropic-api" if base == PUBLIC_API else "custom-base-url"


def _bypass_proxies_for_loopback() -> None:
    """The agent→meter and meter→simulator hops are on loopback: an HTTP(S)_PROXY set for the
    real API must not capture them (command agents inherit the same NO_PROXY)."""
    for var in ("NO_PROXY", "no_proxy"):
        have = [h for h in os.environ.get(var, "").split(",") if h.strip()]
        missing = [h for h in ("127.0.0.1", "localhost") if h not in have]
        if missing:
            os.environ[var] = ",".join([*have, *missing])


def infra_gate(results: Results, max_rate: float) -> None:
    """Too many infra errors make a run unmeasurable (exit 3), never a quiet pass."""
    runs = len(results.runs)
    errors = results.summary.errors
    if runs and errors / runs > max_rate:
        first = next((r.reason for r in results.runs if r.status == "error"), None)
        raise Unmeasurable(f"{errors} of {runs} runs were infra errors (more than "
                           f"{max_rate:.0%}); first: {first}")


def _mark_interrupted(results: Results, work: list[tuple[Task, int]],
                      exc: BaseException) -> None:
    landed = {r.key for r in results.runs}
    missing = [MissingRun(task=t.id, replication=rep) for t, rep in work
               if RunKey(t.id, rep) not in landed]
    reason = ("interrupted: Ctrl-C or SIGTERM" if isinstance(exc, KeyboardInterrupt)
              else f"stopped by an error: {type(exc).__name__}")
    results.interrupted = Interruption(reason=reason, missing=missing)


def run_suite(req: RunRequest, on_result: Callable[[RunResult], None] | None = None) -> Results:
    cfg = req.config
    tasks_dir = req.tasks_dir or cfg.path(cfg.suite.tasks)
    kind = req.agent_kind or cfg.agent.kind
    spec = agent_kind(kind)
    cancel = threading.Event()
    provider = suite_sandboxes(cfg.suite, keep=req.keep_workspaces, cancel=cancel)
    # tasks this sandbox cannot run (a container task without an engine) are reported
    suite = admit(load_suite(tasks_dir, req.task_ids or None), provider, kind, spec.in_sandbox)
    if not suite.tasks:
        raise BadInput(f"{tasks_dir}: no loadable task"
                       + (f" ({suite.problems[0].name}: {suite.problems[0].reason})"
                          if suite.problems else ""))
    model = req.model or cfg.agent.model
    if req.model:
        cfg = cfg.model_copy(update={"agent": cfg.agent.model_copy(update={"model": model})})
    parts = fingerprint_parts(cfg, kind)
    replications = req.replications or cfg.suite.replications
    jobs = req.jobs or cfg.suite.jobs
    stem = req.output.with_name(req.output.stem)
    transcripts_dir = Path(f"{stem}.transcripts") if req.transcripts else None
    commit = current_commit(cfg.root)
    options = RunOptions(
        verify_timeout=cfg.suite.verify_timeout, task_timeout=cfg.suite.task_timeout,
        max_turns=cfg.agent.max_turns, commit=commit, transcripts_dir=transcripts_dir,
    )
    prices = price_table(cfg.agent.prices)
    if spec.uses_model:
        prices.resolve(model)  # an unknown model is exit 2 before anything runs
    label = f"{model} (simulator)" if req.sim and spec.uses_model else model
    agent = build_agent(cfg, kind, model, label)  # bad config fails before anything starts

    with contextlib.ExitStack() as stack:
        stack.callback(provider.close)
        meter: MeterProxy | None = None
        upstream = "none"
        if spec.uses_model:
            ledger = Path(f"{stem}.sim-ledger.jsonl")
            base, credential, header, upstream = stack.enter_context(
                _upstream(req, suite, ledger))
            _bypass_proxies_for_loopback()
            meter = stack.enter_context(MeterProxy(base, credential, prices,
                                                   credential_header=header,
                                                   observer=req.request_observer))
        extra: dict[str, Any] = {"replications": req.first_replication + replications,
                                 "upstream": upstream,
                                 "price_table": prices.date}
        if suite.problems:
            extra["problems"] = {p.name: p.reason for p in suite.problems}
        if unhonoured := {t.id: t.unhonoured for t in suite.tasks if t.unhonoured}:
            extra["unhonoured"] = unhonoured  # foreign task.toml keys: listed, never dropped
        if req.task_ids:  # a partial run: comparable, but never a baseline refresh
            extra["selected_tasks"] = sorted(req.task_ids)
        if upstream == "simulator":
            extra["simulator"] = {"seed": req.seed or 0, "ledger": str(ledger)}
        results = new_results(
            model=agent.model_label(),
            agent=AgentInfo(kind=kind, fingerprint=fingerprint(parts, kind), parts=parts),
            suite=suite_info(suite), commit=commit, runs=list(req.keep_runs),
            schedule=Schedule(replications=req.first_replication + replications, jobs=jobs,
                              sequential=req.sequential, metering=METERING),
            **extra,
        )
        write_results(req.output, results)  # an empty, valid file from the start

        def land(res: RunResult) -> None:
            results.runs.append(res)
            write_results(req.output, results)
            if on_result:
                on_result(res)

        work = plan(suite.tasks, replications, req.first_replication)
        try:
            run_many(work, agent, jobs=jobs, provider=provider, meter=meter, options=options,
                     on_result=land, cancel=cancel)
        except BaseException as exc:
            # Ctrl-C, SIGTERM (raised as KeyboardInterrupt) or a crash: the file says so, and
            # which runs are missing, so it can never be promoted into the baseline
            _mark_interrupted(results, work, exc)
            write_results(req.output, results)
            raise
        if meter is not None and meter.unpriced:
            results.unpriced_models = sorted(meter.unpriced)  # type: ignore[attr-defined]
    results.runs.sort(key=lambda r: r.key)
    write_results(req.output, results)
    return results
