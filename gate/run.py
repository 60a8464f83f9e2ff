"""``gate run``: the suite against the agent configuration.

Each finished run is appended to a journal (``<output stem>.journal.jsonl``, fsync'd per line)
as it lands; the results file is written at the start marked incomplete, and from the journal
once the plan is done (or stopped: Ctrl-C, a budget). ``--resume`` continues from the journal.

Every agent kind except the oracle talks to the model through the metering proxy. Under
``--sim`` the proxy's upstream is the built-in simulator, started in-process on loopback;
otherwise it is ``ANTHROPIC_BASE_URL`` or the public API, and a key is required — the gate
never falls back to the simulator on its own.

This module only *plans*: it resolves the request (suite, agent, shard, skill conditions,
``--resume``, budget) into a :class:`gate.session.SessionPlan`; the session runs it, as it
runs a same-job A/B's (:mod:`gate.ab`).
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gate._files import printable
from gate._git import current_commit
from gate.agents import Agent, agent_kind
from gate.config import GateConfig
from gate.cost import PriceTable, price_table
from gate.errors import BadInput
from gate.fingerprint import fingerprint, fingerprint_parts, fingerprint_values
from gate.meter import METERING
from gate.results import (
    AgentInfo,
    Results,
    RunResult,
    Schedule,
    journal_path,
    load_results,
    new_results,
    read_journal,
    transcripts_dir,
)
from gate.runner import Arm, RunOptions, condition_plan, plan
from gate.sandbox import SandboxProvider, admit, suite_sandboxes
from gate.session import (
    NO_KEY,
    SIM_CREDENTIAL,
    ArmFile,
    Budget,
    JournalSpec,
    SessionPlan,
    Work,
    build_agent,
    execute,
    item_key,
    open_upstream,
    resolve_names,
    spend,
    suite_info,
)
from gate.shards import mean_durations, split
from gate.tasks import Suite, Task, load_suite

# the session's names, where callers have always found them
__all__ = ["NO_KEY", "SIM_CREDENTIAL", "Budget", "ConditionSetup", "RunRequest", "build_agent",
           "run_suite", "setup_conditions", "spend", "suite_info"]


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
    # what the caller knows of the host (the CLI reads it: GitHub's runners reach a registry,
    # and GITHUB_SHA names the commit); execution reads no CI environment itself
    registry: bool = False  # a missing image may be pulled when [suite].pull is unset
    commit: str | None = None  # the commit under test, when known; else git's HEAD


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
        c_parts = fingerprint_parts(c_cfg, agent_kind(kind))

        def skills_of(task: Task, name: str = name) -> list[Any]:
            return per_task.get((task.id, name), [])

        c_options = dataclasses.replace(options, condition=name, skills=skills_of,
                                        max_turns=c_cfg.agent.max_turns)
        arms[name] = Arm(name=name, agent=c_agent, options=c_options)
        sets = {t: [s.name for s in per_task[(t, name)]] for t in ran}
        record[name] = {
            "standard": name in STANDARD_CONDITIONS,
            "agent_fingerprint": fingerprint(c_parts, kind),
            "overlay": sorted(overlay.agent) if overlay is not None else [],
            "skills": sets,
            "skills_digest": {t: skills_digest(per_task[(t, name)]) for t in ran},
        }
        spec = agent_kind(kind)  # what the skills add to every request's prompt (builtin)
        if spec.skills_prompt_bytes([]) is not None:
            record[name]["skills_block_bytes"] = {
                t: spec.skills_prompt_bytes(per_task[(t, name)]) for t in ran}
    return ConditionSetup(names, arms, applies, skipped, record)


@dataclass(frozen=True)
class _Prepared:
    """What a run resolves before it plans: the configuration with ``--model`` applied, the
    suite this sandbox can run, the agent and the options every run shares."""

    cfg: GateConfig
    kind: str
    uses_model: bool
    suite: Suite
    provider: SandboxProvider
    cancel: threading.Event
    model: str
    label: str
    parts: dict[str, str]
    values: dict[str, dict[str, object]]
    replications: int
    jobs: int
    stem: Path
    commit: str | None
    options: RunOptions
    prices: PriceTable
    agent: Agent


def _prepare(req: RunRequest) -> _Prepared:
    """Resolve ``req``; bad input (no task, an unknown model, a broken agent) fails here, before
    anything runs."""
    cfg = req.config
    tasks_dir = req.tasks_dir or cfg.path(cfg.suite.tasks)
    kind = req.agent_kind or cfg.agent.kind
    spec = resolve_names(cfg, kind)
    cancel = threading.Event()
    provider = suite_sandboxes(cfg.suite, keep=req.keep_workspaces, cancel=cancel,
                               registry=req.registry)
    # tasks this sandbox cannot run (a container task without an engine) are reported
    suite = admit(load_suite(tasks_dir, req.task_ids or None), provider, kind, spec.in_sandbox,
                  installs=spec.installs(cfg))
    if not suite.tasks:
        raise BadInput(f"{tasks_dir}: no loadable task"
                       + (f" ({suite.problems[0].name}: {suite.problems[0].reason})"
                          if suite.problems else ""))
    model = req.model or cfg.agent.model
    if req.model:
        cfg = cfg.model_copy(update={"agent": cfg.agent.model_copy(update={"model": model})})
    stem = req.output.with_name(req.output.stem)
    commit = current_commit(cfg.root, req.commit)
    options = RunOptions(
        verify_timeout=cfg.suite.verify_timeout, task_timeout=cfg.suite.task_timeout,
        max_turns=cfg.agent.max_turns, commit=commit,
        transcripts_dir=transcripts_dir(req.output) if req.transcripts else None,
        max_run_cost=req.max_run_cost,
    )
    prices = price_table(cfg.agent.prices)
    if spec.uses_model:
        prices.resolve(model)  # an unknown model is exit 2 before anything runs
    label = f"{model} (simulator)" if req.sim and spec.uses_model else model
    agent = build_agent(cfg, kind, model, label)  # bad config fails before anything starts
    return _Prepared(cfg=cfg, kind=kind, uses_model=spec.uses_model, suite=suite,
                     provider=provider, cancel=cancel, model=model, label=label,
                     parts=fingerprint_parts(cfg, spec), values=fingerprint_values(cfg, spec),
                     replications=req.replications or cfg.suite.replications,
                     jobs=req.jobs or cfg.suite.jobs, stem=stem, commit=commit,
                     options=options, prices=prices, agent=agent)


def _shard(req: RunRequest, suite: Suite,
           baseline: Results | None) -> tuple[list[Task], dict[str, Any] | None]:
    """The tasks this run runs: the whole suite, or its ``--shard I/N`` part."""
    if not req.shard:
        return list(suite.tasks), None
    index, count = req.shard
    durations = mean_durations(baseline)
    mine = set(split([t.id for t in suite.tasks], count, durations)[index - 1])
    return [t for t in suite.tasks if t.id in mine], {
        "index": index, "count": count, "tasks": sorted(mine),
        "balanced_by": "baseline mean durations" if durations else "task id",
        "selected": sorted(req.task_ids) or None}


def _work(req: RunRequest, p: _Prepared,
          run_tasks: list[Task]) -> tuple[Work, ConditionSetup | None]:
    """The plan: each (task, replication), or each (task, condition, replication)."""
    if req.conditions:
        conditions = setup_conditions(req.conditions, p.cfg, p.kind, p.model, p.label,
                                      p.options, run_tasks, resolve_model=p.prices.resolve,
                                      selected=list(p.suite.tasks))
        return condition_plan(run_tasks, p.replications, conditions.arms_of,
                              req.first_replication), conditions
    # no condition named: the agent as configured, every skill of [agent].skills in every
    # workspace (the skills `full` gets), as a user of the agent would have them
    from gate.skills import config_skills

    p.options.skills = config_skills(p.cfg)
    return plan(run_tasks, p.replications, req.first_replication), None


def _identity(req: RunRequest, p: _Prepared, run_tasks: list[Task], fp: str,
              conditions: ConditionSetup | None) -> dict[str, Any]:
    """What a run is, in the journal's header: ``--resume`` continues only the same run."""
    sim = req.sim and p.uses_model
    return {
        "suite digest": p.suite.digest, "tasks": sorted(t.id for t in run_tasks),
        "agent kind": p.kind, "agent fingerprint": fp, "model": p.label,
        "upstream": "simulator" if sim else "api",
        "seed": (req.seed or 0) if req.sim else None, "commit": p.commit,
        "replications": req.first_replication + p.replications,
        "first replication": req.first_replication, "jobs": p.jobs,
        "shard": f"{req.shard[0]}/{req.shard[1]}" if req.shard else None,
        "metering": METERING, "max run cost": req.max_run_cost,
        "simulator options": {k: repr(v) for k, v in sorted(req.sim_options.items())}
        if req.sim else None,
        "conditions": ({c: conditions.record[c]["agent_fingerprint"] for c in conditions.names}
                       if conditions is not None else None),
    }


def _resume(req: RunRequest, identity: dict[str, Any],
            work: Work) -> tuple[Work, list[RunResult]]:
    """(what is left to run, the runs kept): under ``--resume`` the journal's runs of the same
    run (its identity must match, field by field) are kept and not run again."""
    if not req.resume:
        return work, list(req.keep_runs)
    jpath = journal_path(req.output)
    header, kept = read_journal(jpath)
    before = header.get("identity")
    if not isinstance(before, dict):
        raise BadInput(f"{jpath}: the journal's header has no identity")
    for what, value in identity.items():
        if before.get(what) != value:
            raise BadInput(f"{jpath}: cannot resume: not the same {what} (the killed "
                           f"run: {before.get(what)!r}, this one: {value!r}); start it "
                           "afresh without --resume")
    planned = {item_key(i) for i in work}
    kept = [r for r in kept if r.key in planned]
    done = {r.key for r in kept}
    return [i for i in work if item_key(i) not in done], kept  # type: ignore[return-value]


def _extra(req: RunRequest, p: _Prepared, run_tasks: list[Task], upstream: str, ledger: Path,
           shard_info: dict[str, Any] | None, conditions: ConditionSetup | None,
           budget: Budget | None) -> dict[str, Any]:
    """The results file's fields beyond the schema's required ones."""
    suite = p.suite
    extra: dict[str, Any] = {"replications": req.first_replication + p.replications,
                             "upstream": upstream, "price_table": p.prices.date}
    if suite.problems:
        extra["problems"] = {q.name: q.reason for q in suite.problems}
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
    if conditions is None and p.options.skills:  # every run's skills, without conditions
        extra["skills"] = sorted(s.name for s in p.options.skills_of(run_tasks[0]))
    if conditions is not None:  # what each condition was; which tasks it skipped
        extra["conditions"] = conditions.record
        if conditions.skipped:
            extra["skipped_conditions"] = conditions.skipped
    if budget is not None:
        extra["budget"] = budget.record()
    return extra


def _ledger(req: RunRequest, stem: Path) -> Path:
    """The simulator's ledger; a resumed run's goes beside the killed run's, which stays."""
    if not req.resume:
        return Path(f"{stem}.sim-ledger.jsonl")
    return next(q for k in range(1, 10_000)
                if not (q := Path(f"{stem}.sim-ledger.resume{k}.jsonl")).exists())


def run_suite(req: RunRequest, on_result: Callable[[RunResult], None] | None = None,
              on_start: Callable[[Results, int], None] | None = None) -> Results:
    """Run the suite; ``on_start(results, runs to do)`` is called once before the first run
    starts (the results hold the runs kept by ``--resume``, the budget's forecast)."""
    p = _prepare(req)
    baseline = _baseline(p.cfg) if (req.max_cost is not None or req.shard) else None
    run_tasks, shard_info = _shard(req, p.suite, baseline)
    planned, conditions = _work(req, p, run_tasks)
    fp = fingerprint(p.parts, p.kind)
    identity = _identity(req, p, run_tasks, fp, conditions)
    work, kept = _resume(req, identity, planned)
    budget = Budget(req.max_cost, baseline, work, kept) if req.max_cost is not None else None
    ledger = _ledger(req, p.stem)

    def header(upstream: str) -> Results:
        return new_results(
            model=p.agent.model_label(),
            agent=AgentInfo(kind=p.kind, fingerprint=fp, parts=p.parts, values=p.values),
            suite=suite_info(p.suite, p.cfg.suite.net_raw), commit=p.commit, runs=kept,
            schedule=Schedule(replications=req.first_replication + p.replications,
                              jobs=p.jobs, sequential=req.sequential, metering=METERING,
                              shard=identity["shard"],
                              conditions=conditions.names if conditions is not None else None),
            **_extra(req, p, run_tasks, upstream, ledger, shard_info, conditions, budget))

    session = SessionPlan(
        work=work, planned=planned, provider=p.provider, cancel=p.cancel, prices=p.prices,
        jobs=p.jobs, agent=p.agent, options=p.options, budget=budget,
        files=[ArmFile(None, req.output, header,
                       f"incomplete: the run has not finished (if it was killed, `gate run "
                       f"--resume -o {req.output}` continues it)")],
        upstream=(functools.partial(open_upstream, sim=req.sim, suite=p.suite, ledger=ledger,
                                    seed=req.seed, sim_options=req.sim_options)
                  if p.uses_model else None),
        request_observer=req.request_observer,
        journal=JournalSpec(journal_path(req.output), identity, kept, req.resume),
        on_start=on_start, on_result=on_result)
    return execute(session)[None]


def _baseline(cfg: GateConfig) -> Results | None:
    """The committed baseline (per-task costs and durations), if there is one."""
    path = cfg.path(cfg.gate.baseline)
    return load_results(path, "baseline") if path.exists() else None
