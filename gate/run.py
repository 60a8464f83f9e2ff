"""``gate run``: the suite against the agent configuration.

Each finished run is appended to a journal (``<output stem>.journal.jsonl``, fsync'd per line)
as it lands; the results file is written at the start marked incomplete, and from the journal
once the plan is done (or stopped: Ctrl-C, a budget). ``--resume`` continues from the journal.

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

from gate._files import printable
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
    Journal,
    MissingRun,
    Results,
    RunKey,
    RunResult,
    Schedule,
    SuiteInfo,
    TaskInfo,
    journal_path,
    load_results,
    new_results,
    read_journal,
    write_results,
)
from gate.runner import Arm, RunOptions, condition_plan, plan, run_many
from gate.sandbox import admit, suite_sandboxes
from gate.shards import mean_durations, split
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
    # `gate run --resume`: continue the run the journal next to ``output`` belongs to
    resume: bool = False
    max_cost: float | None = None  # USD for the whole run (--max-cost)
    max_run_cost: float | None = None  # USD per run, enforced by the meter (--max-run-cost)
    shard: tuple[int, int] | None = None  # (I, N): run the I-th of N parts of the suite
    # skill conditions (`gate run --condition`, docs/skills.md): each (task, condition,
    # replication) is a run; empty: one run per (task, replication), no condition
    conditions: list[str] = field(default_factory=list)


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


Work = list[tuple[Task, int]] | list[tuple[Task, int, Arm]]


def _key(item: tuple[Task, int] | tuple[Task, int, Arm]) -> RunKey:
    """The key of the run a plan item makes."""
    return RunKey(item[0].id, item[2].options.condition if len(item) == 3 else None, item[1])


def _missing(work: Work, landed: set[RunKey] | None = None) -> list[MissingRun]:
    return [MissingRun(task=k.task, replication=k.replication, condition=k.condition)
            for k in map(_key, work) if landed is None or k not in landed]


def _mark_interrupted(results: Results, work: Work, exc: BaseException) -> None:
    missing = _missing(work, {r.key for r in results.runs})
    reason = ("interrupted: Ctrl-C or SIGTERM" if isinstance(exc, KeyboardInterrupt)
              else f"stopped by an error: {type(exc).__name__}")
    results.interrupted = Interruption(reason=reason, missing=missing)


@dataclass
class ConditionSetup:
    """The conditions of a run: one :class:`Arm` per (condition) with its agent and options,
    which apply to which task, and what the results file records of them."""

    names: list[str]
    arms: dict[str, Arm]
    applies: dict[str, list[str]]  # task id -> its conditions, in the order asked
    skipped: dict[str, list[str]]  # task id -> the conditions that do not apply to it
    record: dict[str, Any]

    def arms_of(self, task: Task) -> list[Arm]:
        return [self.arms[c] for c in self.applies.get(task.id, [])]


def setup_conditions(names: list[str], cfg: GateConfig, kind: str, model: str, label: str,
                     options: RunOptions, tasks: list[Task], *,
                     resolve_model: Callable[[str], object],
                     selected: list[Task] | None = None) -> ConditionSetup:
    """Resolve ``--condition`` names against the standard set and ``[conditions]`` for
    ``tasks`` (a shard's): an unknown name, a condition none of the ``selected`` tasks (the
    whole run's, every shard's) gets, or a broken overlay is ``BadInput``."""
    import dataclasses

    from gate.fingerprint import fingerprint as fp_of
    from gate.skills import STANDARD_CONDITIONS, config_skills, skills_digest, skills_for

    names = list(dict.fromkeys(names))  # a condition named twice runs once
    for name in names:
        if name not in STANDARD_CONDITIONS and name not in cfg.conditions:
            named = (f"; from gate.toml: {', '.join(sorted(cfg.conditions))}"
                     if cfg.conditions else "; gate.toml has no [conditions]")
            raise BadInput(f"--condition: unknown condition {printable(name)!r} (standard: "
                           f"{', '.join(STANDARD_CONDITIONS)}{named})")
    all_skills = config_skills(cfg)
    per_task: dict[tuple[str, str], list[Any]] = {}
    applies: dict[str, list[str]] = {}
    skipped: dict[str, list[str]] = {}
    for task in tasks:
        for name in names:
            got = skills_for(task, name, all_skills, cfg.conditions)
            if got is None:
                skipped.setdefault(task.id, []).append(name)
            else:
                per_task[(task.id, name)] = got
                applies.setdefault(task.id, []).append(name)
    arms: dict[str, Arm] = {}
    record: dict[str, Any] = {}
    for name in names:
        ran = [t.id for t in tasks if (t.id, name) in per_task]
        if not any(skills_for(t, name, all_skills, cfg.conditions) is not None
                   for t in (tasks if ran or selected is None else selected)):
            raise BadInput(f"--condition {name}: applies to none of the selected tasks (a "
                           "standard condition needs the task's metadata.json to name its "
                           "skills; see docs/skills.md)")
        overlay = cfg.conditions.get(name)
        c_cfg = cfg
        c_model, c_label = model, label
        if overlay is not None and overlay.agent:
            try:
                c_cfg = cfg.model_copy(update={"agent": overlay.agent_config(cfg.agent)})
            except ValueError as exc:  # pydantic's ValidationError is a ValueError
                raise BadInput(f"[conditions.{name}].agent: {exc}") from None
            if "model" in overlay.agent:
                c_model = c_cfg.agent.model
                resolve_model(c_model)
                c_label = label.replace(model, c_model, 1) if model in label else c_model
        c_agent = build_agent(c_cfg, kind, c_model, c_label)
        c_parts = fingerprint_parts(c_cfg, kind)

        def skills_of(task: Task, name: str = name) -> list[Any]:
            return per_task.get((task.id, name), [])

        c_options = dataclasses.replace(options, condition=name, skills=skills_of,
                                        max_turns=c_cfg.agent.max_turns)
        arms[name] = Arm(name=name, agent=c_agent, options=c_options)
        sets = {t: [s.name for s in per_task[(t, name)]] for t in ran}
        record[name] = {
            "standard": name in STANDARD_CONDITIONS,
            "agent_fingerprint": fp_of(c_parts, kind),
            "overlay": sorted(overlay.agent) if overlay is not None else [],
            "skills": sets,
            "skills_digest": {t: skills_digest(per_task[(t, name)]) for t in ran},
        }
        if kind == "builtin":  # what the skills add to its system prompt, on every request
            from gate.agents._builtin import skills_block

            record[name]["skills_block_bytes"] = {
                t: len(skills_block(per_task[(t, name)]).encode()) if per_task[(t, name)]
                else 0 for t in ran}
    return ConditionSetup(names, arms, applies, skipped, record)


def run_suite(req: RunRequest, on_result: Callable[[RunResult], None] | None = None,
              on_start: Callable[[Results, int], None] | None = None) -> Results:
    """Run the suite; ``on_start(results, runs to do)`` is called once before the first run
    starts (the results hold the runs kept by ``--resume``, the budget's forecast)."""
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
        max_run_cost=req.max_run_cost,
    )
    prices = price_table(cfg.agent.prices)
    if spec.uses_model:
        prices.resolve(model)  # an unknown model is exit 2 before anything runs
    label = f"{model} (simulator)" if req.sim and spec.uses_model else model
    agent = build_agent(cfg, kind, model, label)  # bad config fails before anything starts

    baseline = _baseline(cfg) if (req.max_cost is not None or req.shard) else None
    run_tasks = list(suite.tasks)
    shard_info: dict[str, Any] | None = None
    if req.shard:
        index, count = req.shard
        durations = mean_durations(baseline)
        parts_of = split([t.id for t in suite.tasks], count, durations)
        mine = set(parts_of[index - 1])
        run_tasks = [t for t in suite.tasks if t.id in mine]
        shard_info = {"index": index, "count": count, "tasks": sorted(mine),
                      "balanced_by": "baseline mean durations" if durations else "task id",
                      "selected": sorted(req.task_ids) or None}
    conditions: ConditionSetup | None = None
    work: Work
    if req.conditions:
        conditions = setup_conditions(req.conditions, cfg, kind, model, label, options,
                                      run_tasks, resolve_model=prices.resolve,
                                      selected=list(suite.tasks))
        work = condition_plan(run_tasks, replications, conditions.arms_of,
                              req.first_replication)
    else:
        # no condition named: the agent as configured, every skill of [agent].skills in every
        # workspace (the skills `full` gets), as a user of the agent would have them
        from gate.skills import config_skills

        options.skills = config_skills(cfg)
        work = plan(run_tasks, replications, req.first_replication)
    plan_all: Work = work  # resume rebinds work to what is left; this stays the plan
    fp = fingerprint(parts, kind)
    identity: dict[str, Any] = {
        "suite digest": suite.digest, "tasks": sorted(t.id for t in run_tasks),
        "agent kind": kind, "agent fingerprint": fp, "model": label,
        "upstream": "simulator" if req.sim and spec.uses_model else "api",
        "seed": (req.seed or 0) if req.sim else None, "commit": commit,
        "replications": req.first_replication + replications,
        "first replication": req.first_replication, "jobs": jobs,
        "shard": f"{req.shard[0]}/{req.shard[1]}" if req.shard else None,
        "metering": METERING, "max run cost": req.max_run_cost,
        "simulator options": {k: repr(v) for k, v in sorted(req.sim_options.items())}
        if req.sim else None,
        "conditions": ({c: conditions.record[c]["agent_fingerprint"] for c in conditions.names}
                       if conditions is not None else None),
    }
    jpath = journal_path(req.output)
    kept = list(req.keep_runs)
    if req.resume:
        header, kept = read_journal(jpath)
        before = header.get("identity")
        if not isinstance(before, dict):
            raise BadInput(f"{jpath}: the journal's header has no identity")
        for what, value in identity.items():
            if before.get(what) != value:
                raise BadInput(f"{jpath}: cannot resume: not the same {what} (the killed "
                               f"run: {before.get(what)!r}, this one: {value!r}); start it "
                               "afresh without --resume")
        planned = {_key(i) for i in work}
        kept = [r for r in kept if r.key in planned]
        done = {r.key for r in kept}
        work = [i for i in work if _key(i) not in done]  # type: ignore[assignment]

    with contextlib.ExitStack() as stack:
        stack.callback(provider.close)
        meter: MeterProxy | None = None
        upstream = "none"
        ledger = Path(f"{stem}.sim-ledger.jsonl")
        if req.resume:  # the killed run's ledger stays as it was
            ledger = next(p for k in range(1, 10_000)
                          if not (p := Path(f"{stem}.sim-ledger.resume{k}.jsonl")).exists())
        if spec.uses_model:
            base, credential, header_name, upstream = stack.enter_context(
                _upstream(req, suite, ledger))
            _bypass_proxies_for_loopback()
            run_header: str | None = None
            if upstream == "simulator":  # the simulator draws each run's randomness by name
                from gate.sim._model import RUN_HEADER

                run_header = RUN_HEADER
            meter = stack.enter_context(MeterProxy(
                base, credential, prices, credential_header=header_name,
                observer=req.request_observer,
                run_header=run_header))
        extra: dict[str, Any] = {"replications": req.first_replication + replications,
                                 "upstream": upstream,
                                 "price_table": prices.date}
        if suite.problems:
            extra["problems"] = {p.name: p.reason for p in suite.problems}
        if unhonoured := {t.id: t.unhonoured for t in suite.tasks if t.unhonoured}:
            extra["unhonoured"] = unhonoured  # foreign task.toml keys: listed, never dropped
        if shard_info is not None:  # one part of a run: `gate merge` joins the parts
            extra["shard"] = shard_info
            extra["selected_tasks"] = shard_info["tasks"]
        elif req.task_ids:  # a partial run: comparable, but never a baseline refresh
            extra["selected_tasks"] = sorted(req.task_ids)
        if upstream == "simulator":
            extra["simulator"] = {"seed": req.seed or 0, "ledger": str(ledger)}
        if req.max_run_cost is not None:
            extra["max_run_cost_usd"] = req.max_run_cost
        if conditions is None and options.skills:  # every run's skills, without conditions
            extra["skills"] = sorted(s.name for s in options.skills_of(run_tasks[0]))
        if conditions is not None:  # what each condition was; which tasks it skipped
            extra["conditions"] = conditions.record
            if conditions.skipped:
                extra["skipped_conditions"] = conditions.skipped
        budget: Budget | None = None
        if req.max_cost is not None:
            budget = Budget(req.max_cost, baseline, work, kept)
            extra["budget"] = budget.record()
        results = new_results(
            model=agent.model_label(),
            agent=AgentInfo(kind=kind, fingerprint=fp, parts=parts),
            suite=suite_info(suite), commit=commit, runs=kept,
            schedule=Schedule(replications=req.first_replication + replications, jobs=jobs,
                              sequential=req.sequential, metering=METERING,
                              shard=identity["shard"],
                              conditions=conditions.names if conditions is not None else None),
            **extra,
        )
        # until the last run lands the file says it is incomplete: a killed run's file can be
        # read, never promoted, and `--resume` finishes it
        results.interrupted = Interruption(
            reason=f"incomplete: the run has not finished (if it was killed, `gate run "
                   f"--resume -o {req.output}` continues it)",
            missing=_missing(work))
        write_results(req.output, results)
        journal = (Journal(jpath, {}, resume=True) if req.resume else
                   Journal(jpath, {"identity": identity}, kept))
        stack.callback(journal.close)
        if on_start:
            on_start(results, len(work))

        def land(res: RunResult) -> None:
            journal.append(res)  # O(1) per run, on disk before anything else hears of it
            if budget is not None:
                budget.landed(res)
            if on_result:
                on_result(res)

        try:
            run_many(work, agent, jobs=jobs, provider=provider, meter=meter, options=options,
                     on_result=land, cancel=cancel,
                     admit=budget.admit if budget is not None else None)
        except BaseException as exc:
            # Ctrl-C, SIGTERM (raised as KeyboardInterrupt) or a crash: the file says so, and
            # which runs are missing, so it can never be promoted into the baseline
            journal.close()
            results.runs = read_journal(jpath)[1]
            _mark_interrupted(results, plan_all, exc)
            write_results(req.output, results)
            raise
        journal.close()
        results.runs = read_journal(jpath)[1]  # the final file, from the journal
        results.interrupted = None
        if budget is not None:
            results.budget = budget.record()  # type: ignore[attr-defined]
            if budget.skipped:
                results.interrupted = Interruption(
                    reason=f"budget: {budget.stopped}",
                    missing=_missing(plan_all, {r.key for r in results.runs}))
        if meter is not None and meter.unpriced:
            results.unpriced_models = sorted(meter.unpriced)  # type: ignore[attr-defined]
    results.runs.sort(key=lambda r: r.key)
    write_results(req.output, results)
    return results


def _baseline(cfg: GateConfig) -> Results | None:
    """The committed baseline (per-task costs and durations), if there is one."""
    path = cfg.path(cfg.gate.baseline)
    return load_results(path, "baseline") if path.exists() else None


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
                 work: Work, kept: list[RunResult]) -> None:
        self.limit = limit
        self._lock = threading.Lock()
        per_task: dict[str, list[float]] = {}
        for r in baseline.runs if baseline is not None else []:
            per_task.setdefault(r.task, []).append(spend(r))
        self.per_task = {t: sum(v) / len(v) for t, v in per_task.items()}
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
