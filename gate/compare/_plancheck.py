"""The plan's check: a planned results file holds the plan the rule gives, and its runs are
that plan's (issue 40; docs/statistics.md §10).

:func:`gate.compare.judge` calls :func:`check_plan` on the candidate file (and on the base arm
of a same-job A/B) before anything is judged. A file without ``plan`` is judged as before.
Anything else is exit 2, one line naming the file and the field:

- **The rule and version** are ones this gate knows, and the recorded settings are the
  settings the rule reads.
- **The plan is the rule's.** Source ``"baseline"`` (the plan was made from the baseline this
  file is judged against): :func:`plan_runs` is recomputed from that baseline, the file's own
  task digests and the recorded settings, and every task's looks, ``allowed`` range and basis
  must be what it gives. This is what catches a plan edited after the fact (more runs for the
  tasks the PR passed). Source ``"independent"`` (a same-job A/B plans both arms from the
  committed baseline, then measures the base arm afresh: that baseline is not in the
  comparison) is accepted only on the arms of a same-job A/B, both arms planned alike, and each
  task's plan must be one the rule gives for the baseline counts its basis states with the
  recorded settings. What is NOT checked there: that those counts are the committed baseline's
  (the judge is not given it). Such a plan conditions nothing, which is exact because the
  arm it is tested against was measured afresh. Source ``"none"`` (no baseline): every task
  the uniform schedule.
- **No runs beyond the plan**: every plain run is of a planned task, its replication within
  the task's planned runs through ``looks_run`` (look j's runs are replications
  ``sum(looks[:j]) .. sum(looks[:j+1]) - 1``).
- **No planned run missing without a record of why**: a planned run the file lacks must be
  listed in ``interrupted.missing`` (a stopped look, Ctrl-C, a cancel, the budget stop), be
  of a task in ``problems`` (broken), or, in one shard's file, of a task its ``shard.tasks``
  leaves to the other parts.

- **Skill conditions' runs are the plan's too** (``plan.conditions``,
  gate/compare/_plan_conditions.py): its runs are the rule's (the settings' ``replications``,
  reading no outcome); every condition run is of a planned condition and task, its
  replication below those runs; a planned condition run missing is accounted for as a plain
  one is (or its condition skipped the task: ``skipped_conditions``). A planned file holding
  condition runs without ``plan.conditions`` is refused.
"""

from __future__ import annotations

import re
from dataclasses import fields

from gate.compare._model import PlanGroup, PlanRow, PlanSpread
from gate.compare._plan import (
    BANDS,
    PLAN_RULES,
    VERSIONS,
    PlanSettings,
    RunPlan,
    TaskPlan,
    plan_runs,
    task_looks,
)
from gate.compare._plan_conditions import condition_runs
from gate.core.results import PlanConditions, Results, RunKey
from gate.errors import BadInput


def checked_plan(base: Results, pr: Results, *,
                 names: tuple[str, str] = ("the baseline", "the results file")
                 ) -> RunPlan | None:
    """The plan ``pr`` ran, checked against ``base`` (see the module), and the base arm's
    when ``base`` is the base arm of a same-job A/B; None when ``pr`` has no plan. ``names``:
    how errors name the two files. Refused: ``BadInput``."""
    if _is_arm(base) and base.plan is not None:
        if base.plan.source == "baseline":
            raise BadInput(f"{names[0]}: plan.source: 'baseline', but this is the base arm of "
                           "a same-job A/B: its plan was made from the committed baseline, "
                           "which this comparison does not use ('independent')")
        check_plan(base, base, where=names[0])
    return check_plan(pr, base, where=names[1], other=base)


def check_plan(results: Results, baseline: Results, *, where: str,
               other: Results | None = None) -> RunPlan | None:
    """The plan ``results`` ran, checked (see the module): recomputed from ``baseline`` when
    it was made from it, else the recorded one; None for a file without a plan. ``other``:
    the other arm of a same-job A/B, whose plan must be the same. Refused: ``BadInput``."""
    rec = results.plan
    if rec is None:
        return None
    settings = _settings(rec.rule, rec.version, rec.settings, where)
    recorded = RunPlan.from_record(rec)
    expected = plan_runs(baseline, [(t, results.suite.tasks[t].digest)
                                    for t in recorded.tasks], settings)
    if rec.source == "baseline":
        _same(recorded, expected, where, "the baseline gives")
        plan = expected
    else:
        _possible(results, recorded, where, other)
        plan = recorded
        # an A/B arm judged against a baseline, not against its base arm (`gate compare
        # baseline.json pr-arm.json`): when this baseline gives the same plan it may be the
        # one the plan read, so the tests condition on it (exact either way)
        if (rec.source == "independent" and not _is_arm(baseline)
                and all(expected.tasks[t].looks == p.looks for t, p in recorded.tasks.items())):
            plan = expected
    _runs_match(results, plan, rec.looks_run, where)
    _conditions_match(results, settings, where)
    return plan


def _is_arm(results: Results) -> bool:
    """Whether ``results`` is an arm of a same-job A/B."""
    return results.schedule is not None and results.schedule.arm is not None


def _settings(rule: str, version: int, raw: dict[str, object], where: str) -> PlanSettings:
    if rule not in PLAN_RULES:
        raise BadInput(f"{where}: plan.rule: unknown plan rule {rule[:40]!r} (this gate knows "
                       f"{', '.join(PLAN_RULES)}): judge it with the gate that wrote it")
    known = sorted(v for (r, _), v in VERSIONS.items() if r == rule)
    if version not in known:
        raise BadInput(f"{where}: plan.version: {rule} version {version} is not one this gate "
                       f"knows ({', '.join(map(str, known))}): judge it with the gate that "
                       "wrote it")
    types = {"rule": str, "sequential": bool, "first": int, "more": int, "replications": int,
             "looks": int}
    assert set(types) == {f.name for f in fields(PlanSettings)}
    # the rules of two looks came before the looks were recorded: their records name none
    raw = {"looks": 2, **raw} if version == VERSIONS[rule, 2] else raw
    for name, kind in types.items():
        value = raw.get(name)
        if type(value) is not kind or (kind is int and not 1 <= value <= 10**6):  # type: ignore[operator]
            want = "true or false" if kind is bool else ("a name" if kind is str
                                                          else "a whole number of runs ≥ 1")
            raise BadInput(f"{where}: plan.settings.{name}: must be {want}")
    if extra := sorted(set(raw) - set(types)):
        raise BadInput(f"{where}: plan.settings.{extra[0][:40]}: not a setting the plan rule "
                       f"reads ({', '.join(types)})")
    settings = PlanSettings(**raw)  # type: ignore[arg-type]
    if settings.rule != rule:
        raise BadInput(f"{where}: plan.settings.rule: {settings.rule[:40]!r}, but the plan's "
                       f"rule is {rule!r}")
    if VERSIONS.get((rule, settings.looks)) != version:
        raise BadInput(f"{where}: plan.settings.looks: {settings.looks}, but {rule} version "
                       f"{version} is the rule of "
                       f"{next(n for (r, n), v in VERSIONS.items() if (r, v) == (rule, version))}"
                       " looks")
    return settings


def _looks(p: TaskPlan) -> str:
    return "+".join(map(str, p.looks))


def _same(recorded: RunPlan, expected: RunPlan, where: str, gives: str,
          why: str = ("not the rule's plan from this baseline: edited, or made from "
                      "another baseline (run again against this one)")) -> None:
    """Refuse the first task whose recorded plan is not ``expected``'s."""
    for tid, got in recorded.tasks.items():
        want = expected.tasks.get(tid)
        if want is None:
            raise BadInput(f"{where}: plan.tasks.{tid}: planned here, but {gives} no plan "
                           "for it")
        for name, a, b in (("looks", _looks(got), _looks(want)),
                           ("allowed", got.allowed, want.allowed),
                           ("basis", got.basis, want.basis)):
            if a != b:
                raise BadInput(
                    f"{where}: plan.tasks.{tid}.{name}: {_shown(a)} recorded, {gives} "
                    f"{_shown(b)} ({want.basis}; rule {expected.rule} v{expected.version}, "
                    f"gate.compare.plan_runs): {why}")


def _shown(value: object) -> str:
    if value is None:
        return "none"
    if isinstance(value, tuple):
        return f"{value[0]}–{value[1]}"
    return repr(value)[:120] if isinstance(value, str) and not value[:1].isdigit() else str(value)


def _possible(results: Results, recorded: RunPlan, where: str, other: Results | None) -> None:
    """A plan not made from this comparison's baseline: one the rule can give at all."""
    s = recorded.settings
    if recorded.source == "independent" and not _is_arm(results):
        raise BadInput(
            f"{where}: plan.source: 'independent' is for the arms of a same-job A/B "
            "(planned from a baseline this comparison does not use); this file is judged "
            "against its baseline, so its plan must be that baseline's (source 'baseline')")
    for tid, got in recorded.tasks.items():
        if not any(got == c for c in _candidates(got, s, recorded.source)):
            raise BadInput(
                f"{where}: plan.tasks.{tid}.looks: {_looks(got)} ({got.basis[:120]!r}) is not "
                f"a plan the rule {recorded.rule} v{recorded.version} gives with the recorded "
                f"settings (a task without baseline runs: {_looks(task_looks(None, 0, s))})")
    if other is not None and other.plan is not None and recorded.source == "independent":
        theirs = RunPlan.from_record(other.plan)
        if theirs.tasks != recorded.tasks or theirs.settings != s:
            alike = "both arms of a same-job A/B are planned alike"
            _same(recorded, theirs, where, "the other arm records", alike)
            extra = sorted(set(theirs.tasks) - set(recorded.tasks))
            name = f"plan.tasks.{extra[0]}" if extra else "plan.settings"
            raise BadInput(f"{where}: {name}: the arms were planned differently; {alike}, "
                           "from what is known before either runs")


def _candidates(got: TaskPlan, s: PlanSettings, source: str) -> list[TaskPlan]:
    """What the rule could have given this task: without a baseline only the uniform
    schedule; from one, the plan of every (passed, runs) its basis names."""
    out = [task_looks(None, 0, s)]
    if source == "none":
        return out
    numbers = [int(n) for n in re.findall(r"\d{1,9}", got.basis)][:4]
    out += [task_looks(b, n, s) for n in numbers for b in [*numbers, 0] if n > 0 and b <= n]
    return out


def _runs_match(results: Results, plan: RunPlan, looks_run: int, where: str) -> None:
    """No plain run beyond the plan; no planned run missing without a record of why."""
    planned = plan.through(looks_run)
    landed: set[RunKey] = set()
    for i, run in enumerate(results.runs):
        if run.condition is not None:
            continue
        n = planned.get(run.task)
        if n is None:
            raise BadInput(f"{where}: runs.{i}.task: {run.task!r} ran, but the plan has no "
                           "runs for it (plan.tasks)")
        if run.replication >= n:
            raise BadInput(
                f"{where}: runs.{i}.replication: {run.key} is beyond the plan: "
                f"plan.tasks.{run.task}.looks {_looks(plan.tasks[run.task])} gives "
                f"{n} run{'s' if n != 1 else ''} through look {looks_run} (replications "
                f"0–{n - 1})")
        landed.add(run.key)
    excused = {RunKey(m.task, m.condition, m.replication)
               for m in (results.interrupted.missing if results.interrupted else [])}
    # a broken task ran nothing; a shard (one part of a run, `gate run --shard`) records the
    # whole suite's plan and runs only its own tasks: the rest are the other parts'
    elsewhere = {*results.broken_tasks(), *_other_parts(results, set(planned))}
    for tid, n in planned.items():
        for rep in range(n):
            key = RunKey(tid, None, rep)
            if key in landed or key in excused or tid in elsewhere:
                continue
            raise BadInput(
                f"{where}: plan.tasks.{tid}: planned run {key} (look {_look_of(plan, tid, rep)}) "
                "is missing, and the file does not say why: neither interrupted.missing nor "
                "problems lists it")


def _conditions_match(results: Results, settings: PlanSettings, where: str) -> None:
    """The skill conditions' runs are ``plan.conditions``' (module docstring)."""
    rec = results.plan.conditions if results.plan is not None else None
    ran = [(i, run) for i, run in enumerate(results.runs) if run.condition is not None]
    if rec is None:
        if ran:
            i, run = ran[0]
            raise BadInput(f"{where}: runs.{i}.condition: {run.key} ran under a skill "
                           "condition, but the plan plans none (plan.conditions)")
        return
    if rec.runs != (want := condition_runs(settings)):
        raise BadInput(f"{where}: plan.conditions.runs: {rec.runs} recorded, the rule gives "
                       f"{want} (every condition the settings' replications on every task, "
                       "gate.compare.plan_conditions): edited")
    names, tasks = set(rec.names), set(rec.tasks)
    landed: set[RunKey] = set()
    for i, run in ran:
        if run.condition not in names or run.task not in tasks:
            field, what = (("condition", f"condition {run.condition!r}")
                           if run.condition not in names else ("task", f"task {run.task!r}"))
            raise BadInput(f"{where}: runs.{i}.{field}: {run.key} ran, but the plan has no "
                           f"runs of {what} under a condition (plan.conditions)")
        if run.replication >= rec.runs:
            raise BadInput(f"{where}: runs.{i}.replication: {run.key} is beyond the plan: "
                           f"plan.conditions.runs gives {rec.runs} run"
                           f"{'s' if rec.runs != 1 else ''} a condition (replications "
                           f"0–{rec.runs - 1})")
        landed.add(run.key)
    excused = {RunKey(m.task, m.condition, m.replication)
               for m in (results.interrupted.missing if results.interrupted else [])}
    elsewhere = {*results.broken_tasks(), *_other_parts(results, tasks)}
    skipped = (results.model_extra or {}).get("skipped_conditions") or {}
    for tid in rec.tasks:
        for name in rec.names:
            if tid in elsewhere or name in (skipped.get(tid) or []):
                continue
            for rep in range(rec.runs):
                key = RunKey(tid, name, rep)
                if key not in landed and key not in excused:
                    raise BadInput(
                        f"{where}: plan.conditions: planned run {key} is missing, and the "
                        "file does not say why: neither interrupted.missing nor problems "
                        "lists it")


def _other_parts(results: Results, planned: set[str]) -> set[str]:
    """The planned tasks a shard's file leaves to the other parts (its ``shard.tasks`` are
    the ones it ran); none for a whole run."""
    shard = (results.model_extra or {}).get("shard")
    mine = shard.get("tasks") if isinstance(shard, dict) else None
    if not isinstance(mine, list):
        return set()
    return planned - {t for t in mine if isinstance(t, str)}


def _look_of(plan: RunPlan, tid: str, rep: int) -> int:
    total = 0
    for j, n in enumerate(plan.tasks[tid].looks, 1):
        total += n
        if rep < total:
            return j
    return len(plan.tasks[tid].looks)


def plan_spread(plan: RunPlan, looks_run: int, *, conditioned: bool,
                conditions: PlanConditions | None = None) -> PlanSpread:
    """What the reports say of ``plan``: its tasks grouped by their looks and why, and the
    skill conditions' plan (``conditions``, the record's) in words."""
    groups: dict[tuple[tuple[int, ...], str], int] = {}
    for p in plan.tasks.values():
        why = _band_words(p.basis.split(": ", 1)[-1])
        groups[(p.looks, why)] = groups.get((p.looks, why), 0) + 1
    ordered = sorted(groups.items(), key=lambda g: (-sum(g[0][0]), -g[1], g[0][1]))
    return PlanSpread(
        rule=plan.rule, version=plan.version, source=plan.source, looks_run=looks_run,
        runs_in_look=[sum(plan.look(i).values()) for i in range(plan.looks)],
        groups=[PlanGroup(looks=list(k[0]), tasks=n, why=k[1]) for k, n in ordered],
        tasks=[PlanRow(task=t, looks=list(p.looks), basis=p.basis,
                       allowed=list(p.allowed) if p.allowed is not None else None)
               for t, p in plan.tasks.items()],
        reads_outcomes=bool(plan.allowed()), conditioned=conditioned,
        conditions=_conditions_words(conditions) if conditions is not None else None)


def _conditions_words(c: PlanConditions) -> str:
    n = len(c.tasks)
    return (f"Skill conditions {', '.join(c.names)}: {c.runs} run{'s' if c.runs != 1 else ''} "
            f"each on {n} task{'s' if n != 1 else ''}, in the first look (every condition the "
            "suite's replications: the plan reads no outcome for them)")


def _band_words(words: str) -> str:
    """A band's name as the pass rates it holds ("passed ≥ 90 %", "never passed"); other
    words (no band: "new to the baseline") as they are."""
    for i, band in enumerate(BANDS):
        if band.name != words:
            continue
        above = BANDS[i - 1].min_rate if i else None
        if above is None or band.min_rate >= 0.01:
            return f"passed ≥ {band.min_rate * 100:g} %"
        if band.min_rate > 0:
            return f"passed < {above * 100:g} %, at least once"
        return "never passed" if above < 0.01 else f"passed < {above * 100:g} %"
    return words
