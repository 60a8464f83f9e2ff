"""``gate run``: the suite against the agent configuration.

Each finished run is appended to a journal (``<output stem>.journal.jsonl``, fsync'd per line)
as it lands; the results file is written at the start marked incomplete, and from the journal
once the plan is done (or stopped: Ctrl-C, a budget). ``--resume`` continues from the journal.

Every agent kind except the oracle talks to the model through the metering proxy. Under
``--sim`` the proxy's upstream is the built-in simulator, started in-process on loopback and
speaking the protocol of ``[agent] upstream``; otherwise it is that upstream as the environment
configures it (gate/upstream), and its credential is required — the gate never falls back to
the simulator on its own.

This module only *plans*: it resolves the request (suite, agent, shard, skill conditions,
``--resume``, budget) into a :class:`gate.execution.session.SessionPlan`; the session runs it, as it
runs a same-job A/B's (:mod:`gate.execution.ab`). An arm — the agent a run plans, each skill
condition, each side of an A/B — is planned by one function, :func:`plan_arm` (the agent kind in
force, ``--model``, its price, its label, its fingerprint, its options), and its results file starts
from one header, :func:`results_header`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gate._files import printable
from gate._git import current_commit
from gate.agents import Agent, AgentKind
from gate.core.config import GateConfig, GateSettings
from gate.core.cost import PriceTable, price_table
from gate.core.fingerprint import fingerprint, fingerprint_parts, fingerprint_values
from gate.core.results import (
    UPSTREAM_RECORD,
    AgentInfo,
    PlanRecord,
    Results,
    RunResult,
    Schedule,
    journal_path,
    load_results,
    model_label,
    new_results,
    read_journal,
    transcripts_dir,
)
from gate.core.tasks import Suite, Task, TaskProblem, load_suite
from gate.errors import BadInput
from gate.execution.runner import Arm, RunOptions, condition_plan
from gate.execution.session import (
    SIM_CREDENTIAL,
    ArmFile,
    Budget,
    JournalSpec,
    SessionPlan,
    build_agent,
    execute,
    item_key,
    open_upstream,
    resolve_names,
    resolve_upstream,
    server_tools,
    spend,
    suite_info,
)
from gate.execution.shards import mean_durations, split
from gate.meter import METERING
from gate.sandbox import SandboxProvider, admit, ensure_free, suite_sandboxes
from gate.upstream import ANTHROPIC, Endpoint, Upstream

if TYPE_CHECKING:
    from gate.compare import PlanSource, RunPlan

# the session's names, where callers have always found them
__all__ = ["SIM_CREDENTIAL", "ArmPlan", "Budget", "ConditionArms", "ConditionSetup",
           "PlanFrom", "RunRequest", "Stage", "arm_options", "arm_prefix", "build_agent",
           "ledger_path", "open_stage", "plan_arm", "planned_items", "replication_ranges",
           "results_header", "run_plan", "run_suite", "setup_conditions", "spend",
           "suite_info"]

#: an item of a plan: a task, a replication, the arm that runs it
Item = tuple[Task, int, Arm]


@dataclass(frozen=True)
class ConditionArms:
    """Skill conditions run beside the suite's plain runs, as arms of the same session
    (``gate ci``): each of ``names`` on ``tasks``, replications 0 .. ``replications`` - 1
    whatever replications of the suite the request runs. A later look of a sequential run
    keeps them (its ``keep_runs``) and runs none again."""

    names: tuple[str, ...]
    tasks: tuple[str, ...]
    replications: int


@dataclass(frozen=True)
class PlanFrom:
    """What a run plans its runs from (gate/compare/_plan.py), once its suite is loaded and
    before any run: ``baseline`` (None: no baseline, the uniform schedule, source "none"),
    whether the comparison's baseline arm is that baseline (``source`` "baseline": the tests
    condition on the plan) or not ("independent": a same-job A/B measures its base arm
    afresh), whether the schedule is sequential (``sequential``: the settings' looks), and
    the ``[gate]`` settings the rule reads (None: the request's configuration's)."""

    baseline: Results | None
    source: PlanSource = "baseline"
    sequential: bool = False
    settings: GateSettings | None = None


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
    # the replications of each look so far, when run sequentially without a plan (recorded
    # only; a planned run records its looks from the plan)
    sequential: list[int] | None = None
    # the plan (gate/compare/_plan.py): each task's runs per look; this request runs look
    # ``look`` (0-based) of it — a task's replications sum(looks[:look]) ..
    # sum(looks[:look + 1]) - 1 — in place of ``replications``/``first_replication``. Either
    # the plan itself (a later look: the first look's) or what to plan from (``plan_from``:
    # planned once the suite is loaded, before any run). Neither: no plan, every task the
    # same ``replications`` (main's refresh, `gate run` without --baseline)
    plan: RunPlan | None = None
    plan_from: PlanFrom | None = None
    look: int = 0
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
    # `gate ci`: skill conditions beside the suite's plain runs, in the same session
    beside: ConditionArms | None = None
    # what the caller knows of the host (the CLI reads it: GitHub's runners reach a registry,
    # and GITHUB_SHA names the commit); execution reads no CI environment itself
    registry: bool = False  # a missing image may be pulled when [suite].pull is unset
    commit: str | None = None  # the commit under test, when known; else git's HEAD
    # `--skip-broken`: run the tasks that load, the broken ones recorded (``problems``);
    # without it a task that cannot load is exit 2 naming it (a run measured by a base ref,
    # a PR's or `--base-ref`'s, sets it: its tasks are the base's, which no PR can fix)
    skip_broken: bool = False


@dataclass(frozen=True)
class ArmPlan:
    """One arm of a session as planned: the configuration in force (``--model`` applied), its
    agent kind, the model as the run names it (the simulator's marked), the agent, the options
    its runs share, and what its results file records of the agent."""

    cfg: GateConfig
    kind: str
    spec: AgentKind
    label: str
    agent: Agent
    info: AgentInfo
    options: RunOptions

    def arm(self, name: str) -> Arm:
        return Arm(name=name, agent=self.agent, options=self.options)


def plan_arm(req: RunRequest, cfg: GateConfig, prices: PriceTable, options: RunOptions, *,
             kind: str | None = None) -> ArmPlan:
    """The one planning of an arm: the agent ``cfg`` configures (an arm's gate.toml, or a skill
    condition's overlay of it), of the kind in force (``kind``, else ``--agent``, else
    ``[agent].kind``), with ``--model`` applied (``kind`` given: the model ``cfg`` names, as an
    overlay set it). Its price is checked (an unknown model is exit 2 before anything runs),
    its label says when the simulator stands in for the model, its agent is built (bad
    configuration fails here), and ``options`` get its turn cap."""
    where = None  # where the model is named, for an error (a condition's: its own message)
    if kind is None:
        kind = req.agent_kind or cfg.agent.kind
        where = "--model" if req.model else cfg.where("agent.model")
        if req.model:
            cfg = cfg.model_copy(update={"agent": cfg.agent.model_copy(
                update={"model": req.model})})
    spec = resolve_names(cfg, kind)
    model = cfg.agent.model
    if spec.uses_model:
        try:  # as the upstream prices what it calls (a platform's model ID: its model's)
            prices.resolve(resolve_upstream(cfg).price_model(model))
        except BadInput as exc:
            raise BadInput(f"{where}: {exc}" if where else str(exc)) from None
    label = model_label(model, simulated=req.sim and spec.uses_model)
    agent = build_agent(cfg, kind, model, label)
    parts = fingerprint_parts(cfg, spec)
    info = AgentInfo(kind=kind, fingerprint=fingerprint(parts, kind), parts=parts,
                     values=fingerprint_values(cfg, spec))
    return ArmPlan(cfg, kind, spec, label, agent, info,
                   dataclasses.replace(options, max_turns=cfg.agent.max_turns))


def arm_options(req: RunRequest, measuring: GateConfig, *, commit: str | None, output: Path,
                arm: str | None = None) -> RunOptions:
    """What every run of an arm shares: the measuring configuration's timeouts, the commit
    under test, where its transcripts go (beside its results file), the per-run cost cap."""
    return RunOptions(
        verify_timeout=measuring.suite.verify_timeout,
        task_timeout=measuring.suite.task_timeout, commit=commit, arm=arm,
        transcripts_dir=transcripts_dir(output) if req.transcripts else None,
        max_run_cost=req.max_run_cost)


@dataclass(frozen=True)
class Stage:
    """What every arm of a session shares: the suite every arm's kind can run, its sandboxes
    (and the event that stops them), the price table, the replications and the jobs."""

    suite: Suite
    provider: SandboxProvider
    cancel: threading.Event
    prices: PriceTable
    replications: int
    jobs: int
    server_tools: frozenset[str] = frozenset()  # [suite].server_tools: what the meter admits
    api: Upstream = ANTHROPIC  # [agent] upstream: the model API the meter forwards to

    def upstream(self, req: RunRequest, ledger: Path, uses_model: bool
                 ) -> Callable[[], contextlib.AbstractContextManager[Endpoint]] | None:
        """How the session opens the model API (None: no arm uses a model)."""
        if not uses_model:
            return None
        return functools.partial(open_upstream, sim=req.sim, suite=self.suite, ledger=ledger,
                                 seed=req.seed, sim_options=req.sim_options, upstream=self.api)


def open_stage(req: RunRequest, configs: Sequence[GateConfig]) -> Stage:
    """The stage of ``req`` (its configuration measures) for arms configured by ``configs``:
    an unknown agent kind or sandbox is exit 2 before anything starts; a task one arm's kind
    cannot run is run by none; no task left is exit 2."""
    cfg = req.config
    kinds = [req.agent_kind or c.agent.kind for c in configs]
    specs = [resolve_names(c, k) for c, k in zip(configs, kinds, strict=True)]
    api = resolve_upstream(cfg)
    tools = server_tools(cfg, api)
    cancel = threading.Event()
    provider = suite_sandboxes(cfg.suite, keep=req.keep_workspaces, cancel=cancel,
                               registry=req.registry)
    tasks_dir = req.tasks_dir or cfg.path(cfg.suite.tasks)
    suite = load_suite(tasks_dir, req.task_ids or None)
    if suite.problems and not req.skip_broken:
        raise BadInput(_broken_message(tasks_dir, suite.problems))
    installs = any(spec.installs(c) for spec, c in zip(specs, configs, strict=True))
    # tasks this sandbox cannot run (a container task without an engine) are reported
    for kind, spec in dict(zip(kinds, specs, strict=True)).items():
        suite = admit(suite, provider, kind, spec.in_sandbox, installs=installs)
    if not suite.tasks:
        provider.close()
        raise BadInput(f"{tasks_dir}: no loadable task"
                       + (f" ({suite.problems[0].name}: {suite.problems[0].reason})"
                          if suite.problems else ""))
    try:  # too little free disk for one run's limit: infra, said once for the job
        ensure_free(provider.disk_paths(), cfg.suite.disk_mb)
    except BaseException:
        provider.close()
        raise
    return Stage(suite, provider, cancel, price_table(cfg.agent.prices),
                 req.replications or cfg.suite.replications, req.jobs or cfg.suite.jobs,
                 tools, api)


def _broken_message(tasks_dir: Path, problems: Sequence[TaskProblem]) -> str:
    """The one line a run refuses a suite with a task that cannot load: the task's folder,
    what is wrong with it, and the flag that runs the rest on purpose."""
    first = problems[0]
    more = (f" (and {len(problems) - 1} more broken task{'s' if len(problems) > 2 else ''}: "
            f"{', '.join(p.name for p in problems[1:4])}{', …' if len(problems) > 4 else ''})"
            if len(problems) > 1 else "")
    return (f"{tasks_dir / first.name}: task {first.name} cannot load: {first.reason}{more}; "
            "fix it, or --skip-broken runs the rest (the broken tasks recorded as such)")


def upstream_label(endpoint: Endpoint | None) -> str:
    """How a results file has always named its upstream: ``simulator``, ``anthropic-api``,
    ``custom-base-url``, ``gateway``, …; ``none`` when no agent used a model."""
    return "none" if endpoint is None else endpoint.label


def run_plan(req: RunRequest, stage: Stage) -> RunPlan | None:
    """The plan ``req`` runs a look of: the one it carries, or the one made from
    ``req.plan_from`` for the stage's suite (every task that loaded, with its digest), before
    any run; None: no plan. A plan that does not cover the suite's tasks is a bug."""
    if req.plan is not None:
        missing = [t.id for t in stage.suite.tasks if t.id not in req.plan.tasks]
        if missing:
            raise ValueError(f"the plan has no runs for task {missing[0]}")
        return req.plan
    if req.plan_from is None:
        return None
    from gate.compare import PlanSettings, plan_runs

    frm = req.plan_from
    settings = PlanSettings.of(frm.settings or req.config.gate,
                               replications=stage.replications, sequential=frm.sequential)
    return plan_runs(frm.baseline, [(t.id, t.digest) for t in stage.suite.tasks], settings,
                     source=frm.source)


def replication_ranges(req: RunRequest, stage: Stage, plan: RunPlan | None,
                       tasks: Sequence[Task]) -> dict[str, tuple[int, int]]:
    """Each task's replications this request runs, [first, end): its planned runs of look
    ``req.look``, or without a plan ``first_replication`` .. + ``replications`` for all."""
    if plan is None:
        first = req.first_replication
        return {t.id: (first, first + stage.replications) for t in tasks}
    return {t.id: (plan.tasks[t.id].through(req.look), plan.tasks[t.id].through(req.look + 1))
            for t in tasks}


def plan_record(plan: RunPlan | None, req: RunRequest, stage: Stage) -> PlanRecord | None:
    """What the results file records of ``plan`` through the request's look, with the skill
    conditions beside the plain runs (``gate ci``) planned by their rule
    (gate/compare/_plan_conditions.py: the whole suite's, as every shard records)."""
    if plan is None:
        return None
    rec = plan.record(req.look + 1)
    if req.beside is None:
        return rec
    from gate.compare import plan_conditions

    tasks = [t.id for t in stage.suite.tasks if t.id in req.beside.tasks]
    cond = plan_conditions(plan.settings, req.beside.names, tasks)
    if cond.runs != req.beside.replications:  # one count, or the check would refuse the file
        raise ValueError(f"skill conditions run {req.beside.replications} replications, the "
                         f"plan gives them {cond.runs}")
    return rec.model_copy(update={"conditions": cond.record()})


def planned_items(tasks: Sequence[Task], ranges: dict[str, tuple[int, int]]
                  ) -> list[tuple[Task, int]]:
    """Every (task, replication) of ``ranges``, replication-major so early results cover
    every task; a task whose range has ended drops out."""
    end = max((hi for _, hi in ranges.values()), default=0)
    return [(t, r) for r in range(min((lo for lo, _ in ranges.values()), default=0), end)
            for t in tasks if ranges[t.id][0] <= r < ranges[t.id][1]]


def results_header(req: RunRequest, arm: ArmPlan, stage: Stage, *, upstream: Endpoint | None,
                   ledger: Path, commit: str | None, runs: Sequence[RunResult] = (),
                   schedule: dict[str, Any] | None = None,
                   extra: dict[str, Any] | None = None,
                   plan: PlanRecord | None = None) -> Results:
    """An arm's results file as it starts, once the session knows its upstream: what ran
    (the agent, the suite, the commit, the schedule, the plan and the looks it holds) and
    where the numbers came from (the upstream's record: provider, region, model id as called,
    host; never a key)."""
    schedule = dict(schedule or {})
    suite = stage.suite
    replications = schedule.pop("replications", None) or (req.first_replication
                                                           + stage.replications)
    label = upstream_label(upstream)
    fields: dict[str, Any] = {"replications": replications, "upstream": label,
                              "price_table": stage.prices.date}
    if upstream is not None and arm.spec.uses_model:
        fields[UPSTREAM_RECORD] = upstream.record(arm.cfg.agent.model).as_dict()
    if suite.problems:
        fields["problems"] = {q.name: q.reason for q in suite.problems}
    if unhonoured := {t.id: t.unhonoured for t in suite.tasks if t.unhonoured}:
        fields["unhonoured"] = unhonoured  # foreign task.toml keys: listed, never dropped
    if req.task_ids:  # a partial run: comparable, but never a baseline refresh
        fields["selected_tasks"] = sorted(req.task_ids)
    if label == "simulator":
        fields["simulator"] = {"seed": req.seed or 0, "ledger": str(ledger)}
    if req.max_run_cost is not None:
        fields["max_run_cost_usd"] = req.max_run_cost
    return new_results(
        model=arm.agent.model_label(), agent=arm.info,
        suite=suite_info(suite, req.config.suite.net_raw), commit=commit, runs=list(runs),
        schedule=Schedule(replications=replications, jobs=stage.jobs, metering=METERING,
                          **schedule),
        plan=plan, **{**fields, **(extra or {})})


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


def _check_names(names: list[str], cfg: GateConfig) -> None:
    from gate.core.skills import STANDARD_CONDITIONS

    for name in names:
        if name not in STANDARD_CONDITIONS and name not in cfg.conditions:
            named = (f"; from gate.toml: {', '.join(sorted(cfg.conditions))}"
                     if cfg.conditions else "; gate.toml has no [conditions]")
            raise BadInput(f"--condition: unknown condition {printable(name)!r} (standard: "
                           f"{', '.join(STANDARD_CONDITIONS)}{named})")


def _condition_arm(req: RunRequest, name: str, base: ArmPlan, prices: PriceTable,
                   skills_of: Callable[[Task], list[Any]]) -> ArmPlan:
    """A condition's arm: the base arm's agent with the condition's ``[conditions.X].agent``
    overlay (its model, when it names one, in force), its skills."""
    overlay = base.cfg.conditions.get(name)
    cfg = base.cfg
    if overlay is not None and overlay.agent:
        try:
            cfg = cfg.model_copy(update={"agent": overlay.agent_config(cfg.agent)})
        except ValueError as exc:  # pydantic's ValidationError is a ValueError
            raise BadInput(f"[conditions.{name}].agent: {exc}") from None
    return plan_arm(req, cfg, prices, dataclasses.replace(base.options, condition=name,
                                                          skills=skills_of), kind=base.kind)


def setup_conditions(names: list[str], req: RunRequest, base: ArmPlan, prices: PriceTable,
                     tasks: list[Task], *, selected: list[Task] | None = None
                     ) -> ConditionSetup:
    """Resolve ``--condition`` names against the standard set and ``[conditions]`` for
    ``tasks`` (a shard's): an unknown name, a condition none of the ``selected`` tasks (the
    whole run's, every shard's) gets, or a broken overlay is ``BadInput``."""
    from gate.core.skills import STANDARD_CONDITIONS, config_skills, skills_digest, skills_for

    cfg = base.cfg
    names = list(dict.fromkeys(names))  # a condition named twice runs once
    _check_names(names, cfg)
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

        def skills_of(task: Task, name: str = name) -> list[Any]:
            return per_task.get((task.id, name), [])

        c_arm = _condition_arm(req, name, base, prices, skills_of)
        arms[name] = c_arm.arm(name)
        overlay = cfg.conditions.get(name)
        record[name] = {
            "standard": name in STANDARD_CONDITIONS,
            "agent_fingerprint": c_arm.info.fingerprint,
            "overlay": sorted(overlay.agent) if overlay is not None else [],
            "skills": {t: [s.name for s in per_task[(t, name)]] for t in ran},
            "skills_digest": {t: skills_digest(per_task[(t, name)]) for t in ran},
        }
        spec = base.spec  # what the skills add to every request's prompt (builtin)
        if spec.skills_prompt_bytes([]) is not None:
            record[name]["skills_block_bytes"] = {
                t: spec.skills_prompt_bytes(per_task[(t, name)]) for t in ran}
    return ConditionSetup(names, arms, applies, skipped, record)


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


def _work(req: RunRequest, stage: Stage, arm: ArmPlan, run_tasks: list[Task],
          ranges: dict[str, tuple[int, int]]) -> tuple[list[Item], ConditionSetup | None]:
    """The work: each (task, replication) of the agent as configured in ``ranges`` (the
    plan's look, or every task the same replications), unless ``--condition`` replaces them;
    and each (task, condition, replication) of the conditions asked (beside a planned run,
    planned by their own rule, gate/compare/_plan_conditions.py: ``replications`` on each of
    their tasks, beside a sequential run's first look)."""
    from gate.core.skills import config_skills

    work: list[Item] = []
    if not req.conditions:
        # the agent as configured, every skill of [agent].skills in every workspace (the
        # skills `full` gets), as a user of the agent would have them
        arm.options.skills = config_skills(arm.cfg)
        plain = arm.arm("as configured")
        work = [(t, r, plain) for t, r in planned_items(run_tasks, ranges)]
    if req.conditions:
        names, tasks, reps, first = (req.conditions, run_tasks, stage.replications,
                                     req.first_replication)
    elif req.beside is not None:  # gate ci: beside the plain runs, on the tasks they name
        names, tasks, reps, first = (list(req.beside.names),
                                     [t for t in run_tasks if t.id in req.beside.tasks],
                                     req.beside.replications, 0)
    else:
        return work, None
    conditions = setup_conditions(names, req, arm, stage.prices, tasks,
                                  selected=list(stage.suite.tasks))
    return work + condition_plan(tasks, reps, conditions.arms_of, first), conditions


def _identity(req: RunRequest, stage: Stage, arm: ArmPlan, run_tasks: list[Task],
              commit: str | None, conditions: ConditionSetup | None,
              plan: RunPlan | None) -> dict[str, Any]:
    """What a run is, in the journal's header: ``--resume`` continues only the same run (of
    the same plan: a journal of another plan is refused, never mixed into this one)."""
    sim = req.sim and arm.spec.uses_model
    return {
        "plan": ({"rule": plan.rule, "version": plan.version, "source": plan.source,
                  "look": req.look,
                  "tasks": {t: list(p.looks) for t, p in plan.tasks.items()}}
                 if plan is not None else None),
        "suite digest": stage.suite.digest, "tasks": sorted(t.id for t in run_tasks),
        "agent kind": arm.kind, "agent fingerprint": arm.info.fingerprint, "model": arm.label,
        # the upstream by name once there is more than one (an older journal: the API's)
        "upstream": ("simulator" if sim else "api") + (
            f" ({stage.api.name})" if stage.api is not ANTHROPIC else ""),
        "seed": (req.seed or 0) if req.sim else None, "commit": commit,
        "replications": (plan.schedule(req.look)["replications"] if plan is not None
                         else req.first_replication + stage.replications),
        "first replication": req.first_replication if plan is None else None,
        "jobs": stage.jobs,
        "shard": f"{req.shard[0]}/{req.shard[1]}" if req.shard else None,
        "metering": METERING, "max run cost": req.max_run_cost,
        "simulator options": {k: repr(v) for k, v in sorted(req.sim_options.items())}
        if req.sim else None,
        "conditions": ({c: conditions.record[c]["agent_fingerprint"] for c in conditions.names}
                       if conditions is not None else None),
        "beside": ({"conditions": list(req.beside.names), "tasks": list(req.beside.tasks),
                    "replications": req.beside.replications}
                   if req.beside is not None else None),
    }


def _resume(req: RunRequest, identity: dict[str, Any],
            work: list[Item]) -> tuple[list[Item], list[RunResult]]:
    """(what is left to run, the runs kept): the runs an earlier stage kept
    (``keep_runs``), or under ``--resume`` the journal's runs of the same run (its identity
    must match, field by field); a run kept is not run again."""
    if not req.resume:
        kept = list(req.keep_runs)
    else:
        jpath = journal_path(req.output)
        header, journaled = read_journal(jpath)
        before = header.get("identity")
        if not isinstance(before, dict):
            raise BadInput(f"{jpath}: the journal's header has no identity")
        for what, value in identity.items():
            if before.get(what) != value:
                raise BadInput(f"{jpath}: cannot resume: not the same {what} (the killed "
                               f"run: {before.get(what)!r}, this one: {value!r}); start it "
                               "afresh without --resume")
        planned = {item_key(i) for i in work}
        kept = [r for r in journaled if r.key in planned]
    done = {r.key for r in kept}
    return [i for i in work if item_key(i) not in done], kept


def _extra(req: RunRequest, arm: ArmPlan, run_tasks: list[Task],
           shard_info: dict[str, Any] | None,
           conditions: ConditionSetup | None) -> dict[str, Any]:
    """The results file's fields beyond every arm's header."""
    extra: dict[str, Any] = {}
    if shard_info is not None:  # one part of a run: `gate merge` joins the parts
        extra["shard"] = shard_info
        extra["selected_tasks"] = shard_info["tasks"]
    if not req.conditions and arm.options.skills:  # the plain runs' skills
        extra["skills"] = sorted(s.name for s in arm.options.skills_of(run_tasks[0]))
    if conditions is not None:  # what each condition was; which tasks it skipped
        extra["conditions"] = conditions.record
        if conditions.skipped:
            extra["skipped_conditions"] = conditions.skipped
    return extra


def arm_prefix(req: RunRequest, arm: ArmPlan,
               run_tasks: Sequence[Task]) -> dict[str, Any] | None:
    """An arm's plain runs' shared prefix (``AgentKind.cache_prefix``, as the first task's
    first request sends it), to be counted by the session; none for a run of skill
    conditions, whose prefixes differ by condition."""
    if req.conditions or not run_tasks or not arm.spec.uses_model:
        return None
    task = run_tasks[0]
    return arm.spec.cache_prefix(arm.agent, task, arm.options.skills_of(task)
                                 if arm.options.skills else ())


def ledger_path(req: RunRequest) -> Path:
    """The simulator's ledger; a resumed run's goes beside the killed run's, which stays."""
    stem = req.output.with_name(req.output.stem)
    if not req.resume:
        return Path(f"{stem}.sim-ledger.jsonl")
    return next(q for k in range(1, 10_000)
                if not (q := Path(f"{stem}.sim-ledger.resume{k}.jsonl")).exists())


def run_suite(req: RunRequest, on_result: Callable[[RunResult], None] | None = None,
              on_start: Callable[[Results, int], None] | None = None) -> Results:
    """Run the suite; ``on_start(results, runs to do)`` is called once before the first run
    starts (the results hold the runs kept by ``--resume``, the budget's forecast)."""
    stage = open_stage(req, [req.config])
    commit = current_commit(req.config.root, req.commit)
    arm = plan_arm(req, req.config, stage.prices,
                   arm_options(req, req.config, commit=commit, output=req.output))
    plan = run_plan(req, stage)
    if plan is not None and req.conditions:
        raise BadInput("--condition: a run of skill conditions is not planned from a baseline "
                       "(each condition runs every replication); drop --baseline")
    baseline = (_baseline(req.config, req.plan_from)
                if (req.max_cost is not None or req.shard) else None)
    run_tasks, shard_info = _shard(req, stage.suite, baseline)
    ranges = replication_ranges(req, stage, plan, run_tasks)
    planned, conditions = _work(req, stage, arm, run_tasks, ranges)
    identity = _identity(req, stage, arm, run_tasks, commit, conditions, plan)
    work, kept = _resume(req, identity, planned)
    budget = Budget(req.max_cost, baseline, work, kept) if req.max_cost is not None else None
    ledger = ledger_path(req)
    extra = _extra(req, arm, run_tasks, shard_info, conditions)

    def header(upstream: Endpoint | None) -> Results:
        return results_header(
            req, arm, stage, upstream=upstream, ledger=ledger, commit=commit, runs=kept,
            schedule={"sequential": req.sequential, "shard": identity["shard"],
                      "conditions": conditions.names if conditions is not None else None,
                      **(plan.schedule(req.look) if plan is not None else {})},
            extra=extra, plan=plan_record(plan, req, stage))

    session = SessionPlan(
        work=work, planned=planned, provider=stage.provider, cancel=stage.cancel,
        prices=stage.prices, jobs=stage.jobs, budget=budget, server_tools=stage.server_tools,
        files=[ArmFile(None, req.output, header,
                       f"incomplete: the run has not finished (if it was killed, `gate run "
                       f"--resume -o {req.output}` continues it)",
                       prefix=arm_prefix(req, arm, run_tasks))],
        upstream=stage.upstream(req, ledger, arm.spec.uses_model),
        request_observer=req.request_observer,
        journal=JournalSpec(journal_path(req.output), identity, kept, req.resume),
        on_start=on_start, on_result=on_result)
    return execute(session)[None]


def _baseline(cfg: GateConfig, plan_from: PlanFrom | None = None) -> Results | None:
    """The baseline the run is planned from, else the committed one (per-task costs and
    durations: the budget's forecast, the shards' balance), if there is one."""
    if plan_from is not None and plan_from.baseline is not None:
        return plan_from.baseline
    path = cfg.path(cfg.gate.baseline)
    return load_results(path, "baseline") if path.exists() else None
