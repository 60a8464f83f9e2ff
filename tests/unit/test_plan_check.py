"""The plan's check (gate/compare/_plancheck.py), through ``judge``: a planned file's plan is
the rule's, its runs are the plan's, a missing run is accounted for; a file without a plan is
judged as before; the record's shape is checked when the file is parsed."""

from __future__ import annotations

import dataclasses
import json

import pytest

from gate.compare import PlanSettings, RunPlan, compare, judge, plan_runs
from gate.core.config import GateSettings
from gate.core.results import (
    Interruption,
    MissingRun,
    Results,
    Schedule,
    parse_results,
)
from gate.errors import BadInput
from gate.report import plan_lines
from tests.helpers.report import _results, _run

FIXED = PlanSettings(rule="by-pass-rate", sequential=False, first=2, more=3, replications=3)
SEQ = dataclasses.replace(FIXED, sequential=True)
NAMES = ("base.json", "pr.json")
SETTINGS = GateSettings(power_simulations=0)


def _baseline() -> Results:
    """easy passed 20 of 20, mid 12 of 20, hard 4 of 20."""
    runs = [_run("easy", i, "passed") for i in range(20)]
    runs += [_run("mid", i, "passed" if i < 12 else "failed") for i in range(20)]
    runs += [_run("hard", i, "passed" if i < 4 else "failed") for i in range(20)]
    return _results(runs)


def _plan(base: Results, settings: PlanSettings = FIXED) -> RunPlan:
    return plan_runs(base, [(t, f"d-{t}") for t in ("easy", "hard", "mid")], settings)


def _pr(base: Results, settings: PlanSettings = FIXED, *, looks_run: int = 1,
        plan: RunPlan | None = None) -> Results:
    """The runs the plan gives through ``looks_run``, every one passed."""
    plan = plan or _plan(base, settings)
    runs = [_run(t, i, "passed") for t, n in plan.through(looks_run).items() for i in range(n)]
    return _results(runs).model_copy(update={"plan": plan.record(looks_run)})


def _refused(base: Results, pr: Results) -> str:
    with pytest.raises(BadInput) as exc:
        judge(base, pr, SETTINGS, names=NAMES)
    message = str(exc.value)
    assert "\n" not in message
    return message


def _edited(pr: Results, task: str, **fields: object) -> Results:
    assert pr.plan is not None
    t = pr.plan.tasks[task].model_copy(update=fields)
    return pr.model_copy(update={"runs": list(pr.runs), "plan": pr.plan.model_copy(
        update={"tasks": {**pr.plan.tasks, task: t}})})


def test_a_plan_the_rule_gives_is_judged_and_its_spread_reported() -> None:
    base = _baseline()
    c = judge(base, _pr(base), SETTINGS, names=NAMES)
    assert c.plan is not None
    plan = _plan(base)
    looks = {t: list(p.looks) for t, p in plan.tasks.items()}
    assert looks["easy"][0] > looks["hard"][0]  # the runs go where they carry signal
    groups = [(g.looks, g.tasks) for g in c.plan.groups]
    assert sorted(groups, key=lambda g: -g[0][0]) == groups  # most runs first
    assert sorted(g for g, n in groups for _ in range(n)) == sorted(looks.values())
    assert all(g.why.startswith(("passed", "never")) for g in c.plan.groups), c.plan.groups
    assert c.plan.runs_in_look == [sum(sum(v) for v in looks.values())]
    assert c.plan.looks_run == 1 and c.plan.reads_outcomes and c.plan.source == "baseline"
    assert {r.task: r.looks for r in c.plan.tasks} == looks


def test_the_tests_condition_on_the_recomputed_plan() -> None:
    base = _baseline()
    pr = _pr(base)
    pr.runs = [r.model_copy(update={"status": "failed"}) if r.task == "mid" else r
               for r in pr.runs]  # the task that passed 12 of 20 fails every run
    c = judge(base, pr, SETTINGS, names=NAMES)
    given = compare(base, pr, SETTINGS, allowed=_plan(base).allowed()).pass_rate_test
    plain = compare(base, pr, SETTINGS).pass_rate_test
    assert c.pass_rate_test == given and given is not None and plain is not None
    # the plan-conditional p-values: larger than the plain ones, exact given the plan
    assert given.p_sum > plain.p_sum and given.p_max > plain.p_max, (given, plain)
    assert c.plan is not None and c.plan.conditioned
    lines = plan_lines(c)
    assert lines[1].startswith("The pass-rate tests condition on the plan"), lines


def test_a_plan_edited_to_give_more_runs_to_a_task_the_pr_passed_is_refused() -> None:
    base = _baseline()
    n = _plan(base).tasks["hard"].looks[0]
    pr = _edited(_pr(base), "hard", looks=[n + 2])
    pr.runs += [_run("hard", i, "passed") for i in (n, n + 1)]
    message = _refused(base, pr)
    assert message.startswith(f"pr.json: plan.tasks.hard.looks: {n + 2} recorded, the "
                              f"baseline gives {n} (passed 4 of 20"), message


def test_an_edited_allowed_range_or_basis_is_refused() -> None:
    base = _baseline()
    assert "plan.tasks.mid.allowed: 0–20 recorded" in _refused(
        base, _edited(_pr(base), "mid", allowed=[0, 20]))
    assert "plan.tasks.easy.basis" in _refused(base, _edited(_pr(base), "easy", basis="x"))


def test_the_plan_is_recomputed_from_the_baseline_the_file_is_judged_against() -> None:
    base = _baseline()
    pr = _pr(base)
    other = _results([_run(t, i, "failed") for t in ("easy", "mid", "hard") for i in range(20)])
    mine, theirs = _plan(base).tasks["easy"].looks[0], _plan(other).tasks["easy"].looks[0]
    assert (f"plan.tasks.easy.looks: {mine} recorded, the baseline gives {theirs}"
            in _refused(other, pr))


def test_runs_beyond_the_plan_are_refused() -> None:
    base = _baseline()
    pr = _pr(base)
    n = _plan(base).tasks["hard"].looks[0]
    pr.runs.append(_run("hard", n, "passed"))
    assert (f"pr.json: runs.{len(pr.runs) - 1}.replication: hard #{n} is beyond the plan"
            in _refused(base, pr))
    pr = _pr(base)
    pr.runs.append(_run("easy", 9, "passed"))  # a replication outside the plan's
    assert "easy #9 is beyond the plan" in _refused(base, pr)


def test_a_run_of_a_task_the_plan_does_not_hold_is_refused() -> None:
    base = _baseline()
    pr = _pr(base)
    assert pr.plan is not None
    tasks = {t: p for t, p in pr.plan.tasks.items() if t != "mid"}
    pr = pr.model_copy(update={"plan": pr.plan.model_copy(update={"tasks": tasks})})
    assert "runs." in (m := _refused(base, pr)) and "'mid' ran, but the plan has no runs" in m


def test_a_planned_run_missing_without_a_record_of_why_is_refused() -> None:
    base = _baseline()
    pr = _pr(base)
    pr.runs = [r for r in pr.runs if (r.task, r.replication) != ("easy", 2)]
    message = _refused(base, pr)
    assert message.startswith("pr.json: plan.tasks.easy: planned run easy #2 (look 1) is "
                              "missing, and the file does not say why"), message


def test_a_missing_run_the_file_accounts_for_is_judged() -> None:
    base = _baseline()
    pr = _pr(base)
    pr.runs = [r for r in pr.runs if (r.task, r.replication) != ("easy", 2)]
    stopped = pr.model_copy(update={"interrupted": Interruption(
        reason="budget: --max-cost reached", missing=[MissingRun(task="easy", replication=2)])})
    assert judge(base, stopped, SETTINGS, names=NAMES).plan is not None
    # a broken task (problems) ran none of its planned runs
    pr = _pr(base)
    pr.runs = [r for r in pr.runs if r.task != "hard"]
    broken = Results.model_validate({**json.loads(pr.model_dump_json()),
                                     "problems": {"hard": "task.toml: bad"}})
    assert judge(base, broken, SETTINGS, names=NAMES).plan is not None


def test_a_shard_runs_its_own_tasks_of_the_whole_plan() -> None:
    base = _baseline()
    pr = _pr(base)
    pr.runs = [r for r in pr.runs if r.task == "easy"]
    raw = json.loads(pr.model_dump_json())
    assert "plan.tasks.hard: planned run hard #0" in _refused(base, Results.model_validate(raw))
    shard = Results.model_validate({**raw, "shard": {"index": 1, "count": 2,
                                                     "tasks": ["easy"]}})
    assert judge(base, shard, SETTINGS, names=NAMES).plan is not None
    shard.runs = shard.runs[1:]
    assert "plan.tasks.easy: planned run easy #0" in _refused(base, shard)


def test_a_sequential_plan_through_the_looks_that_ran() -> None:
    base = _baseline()
    one = _pr(base, SEQ, looks_run=1)
    assert judge(base, one, SETTINGS, names=NAMES).plan is not None
    plan = _plan(base, SEQ)
    first = plan.tasks["easy"].looks[0]
    one.runs.append(_run("easy", first, "passed"))  # look 2's first run, in a file of one look
    assert f"easy #{first} is beyond the plan" in _refused(base, one)
    both = _pr(base, SEQ, looks_run=2)
    c = judge(base, both, SETTINGS, names=NAMES)
    assert c.plan is not None and c.plan.looks_run == 2
    assert c.plan.runs_in_look == [sum(plan.look(0).values()), sum(plan.look(1).values())]
    mid = plan.tasks["mid"].looks[0]
    both.runs = [r for r in both.runs if (r.task, r.replication) != ("mid", mid)]
    assert f"planned run mid #{mid} (look 2) is missing" in _refused(base, both)


def test_a_file_without_a_plan_is_judged_as_before() -> None:
    base = _baseline()
    pr = _pr(base).model_copy(update={"plan": None})
    pr.runs.append(_run("hard", 7, "passed"))  # any runs: nothing planned them
    c = judge(base, pr, SETTINGS, names=NAMES)
    assert c.plan is None
    assert c == judge(base, pr, SETTINGS)


def test_an_unknown_rule_version_or_setting_is_refused_by_name() -> None:
    base = _baseline()
    pr = _pr(base)
    assert pr.plan is not None
    for update, field in (({"rule": "by-luck"}, "plan.rule: unknown plan rule 'by-luck'"),
                          ({"version": 9}, "plan.version: by-pass-rate version 9"),
                          ({"settings": {**pr.plan.settings, "first": 0}},
                           "plan.settings.first: must be a whole number"),
                          ({"settings": {**pr.plan.settings, "extra": 1}},
                           "plan.settings.extra: not a setting"),
                          ({"settings": {**pr.plan.settings, "rule": "uniform"}},
                           "plan.settings.rule")):
        bad = pr.model_copy(update={"plan": pr.plan.model_copy(update=update)})
        assert field in _refused(base, bad), field


def test_a_records_looks_are_its_versions() -> None:
    """Version 3 records its looks; a version-2 record names none and is read as the two
    looks it ran (a file written before the third look is judged as it was, at α/2); a record
    whose looks are not its version's is refused by name."""
    base = _baseline()
    three = _pr(base, dataclasses.replace(SEQ, looks=3), looks_run=2)
    assert three.plan is not None and three.plan.version == 3
    assert three.plan.settings["looks"] == 3
    assert judge(base, three, SETTINGS, names=NAMES).settings["alpha"] == pytest.approx(0.0025)
    two = _pr(base, SEQ, looks_run=2)
    assert two.plan is not None and two.plan.version == 2
    old = {k: v for k, v in two.plan.settings.items() if k != "looks"}
    legacy = two.model_copy(update={"plan": two.plan.model_copy(update={"settings": old})})
    assert judge(base, legacy, SETTINGS, names=NAMES).settings["alpha"] == pytest.approx(0.005)
    for pr, looks, said in ((three, 2, "version 3 is the rule of 3 looks"),
                            (two, 3, "version 2 is the rule of 2 looks")):
        assert pr.plan is not None
        bad = pr.plan.model_copy(update={"settings": {**pr.plan.settings, "looks": looks}})
        message = _refused(base, pr.model_copy(update={"plan": bad}))
        assert f"pr.json: plan.settings.looks: {looks}, but by-pass-rate {said}" in message


def test_a_never_passed_task_runs_none_in_the_middle_look_and_its_file_is_judged() -> None:
    """Three looks give a task that never passed 1 + 0 + 1: a file stopped after the second
    look holds its one run, a file of all three its two, and both are read and judged."""
    runs = [_run("easy", i, "passed") for i in range(20)]
    runs += [_run("never", i, "failed") for i in range(20)]
    base = _results(runs)
    plan = plan_runs(base, [(t, f"d-{t}") for t in ("easy", "never")],
                     dataclasses.replace(SEQ, looks=3))
    assert plan.tasks["never"].looks == (1, 0, 1) and plan.tasks["easy"].looks == (2, 2, 3)
    for looks_run in (2, 3):
        pr = _pr(base, plan=plan, looks_run=looks_run)
        pr = parse_results(pr.model_dump_json().encode(), "pr.json")
        c = judge(base, pr, SETTINGS, names=NAMES)
        assert c.plan is not None and c.plan.looks_run == looks_run
        assert sum(r.task == "never" for r in pr.runs) == looks_run - 1


def _arm(res: Results, arm: str) -> Results:
    return res.model_copy(update={"schedule": Schedule(arm=arm)})


def test_an_independent_plan_is_for_the_arms_of_a_same_job_ab() -> None:
    base = _baseline()
    plan = dataclasses.replace(_plan(base), source="independent")
    pr, other = _pr(base, plan=plan), _pr(base, plan=plan)
    assert "pr.json: plan.source: 'independent' is for the arms of a same-job A/B" in _refused(
        base, pr)
    c = judge(_arm(other, "base"), _arm(pr, "pr"), SETTINGS, names=NAMES)
    assert c.plan is not None and not c.plan.reads_outcomes  # conditions nothing
    # the PR's arm judged against the committed baseline it was planned from: conditioned
    c = judge(base, _arm(pr, "pr"), SETTINGS, names=NAMES)
    assert c.plan is not None and c.plan.conditioned and c.plan.source == "baseline"


def test_an_ab_arm_s_plan_must_be_one_the_rule_gives_and_both_arms_alike() -> None:
    base = _baseline()
    plan = dataclasses.replace(_plan(base), source="independent")
    arm_b, arm_p = _arm(_pr(base, plan=plan), "base"), _arm(_pr(base, plan=plan), "pr")
    # the basis says 4 of 20, which gives n runs: n + 2 is not what the rule gives
    n = plan.tasks["hard"].looks[0]
    lied = _edited(arm_p, "hard", looks=[n + 2])
    lied.runs += [_run("hard", i, "passed") for i in (n, n + 1)]
    assert f"pr.json: plan.tasks.hard.looks: {n + 2} ('passed 4 of 20" in _refused(arm_b, lied)
    both = _edited(arm_b, "hard", looks=[n + 2])
    both.runs += [_run("hard", i, "passed") for i in (n, n + 1)]
    assert f"base.json: plan.tasks.hard.looks: {n + 2} ('passed 4 of 20" in _refused(both, arm_p)
    # a plan the rule gives (easy's: passed 20 of 20), but not the other arm's
    easy, hard = plan.tasks["easy"], plan.tasks["hard"]
    apart = _edited(arm_p, "hard", looks=list(easy.looks), basis=easy.basis,
                    allowed=list(easy.allowed or ()))
    apart.runs += [_run("hard", i, "passed") for i in range(hard.looks[0], easy.looks[0])]
    message = _refused(arm_b, apart)
    assert message.startswith(f"pr.json: plan.tasks.hard.looks: {easy.looks[0]} recorded, the "
                              f"other arm records {hard.looks[0]}"), message
    assert "both arms of a same-job A/B are planned alike" in message
    assert "plan.source: 'baseline', but this is the base arm" in _refused(
        _arm(_pr(base), "base"), arm_p)


def test_a_plan_without_a_baseline_is_the_uniform_schedule() -> None:
    base = _baseline()
    uniform = plan_runs(None, [(t, f"d-{t}") for t in ("easy", "hard", "mid")], FIXED)
    assert uniform.source == "none"
    c = judge(base, _pr(base, plan=uniform), SETTINGS, names=NAMES)
    assert c.plan is not None and [g.looks for g in c.plan.groups] == [[3]]
    skewed = dataclasses.replace(_plan(base), source="none")
    assert f"plan.tasks.easy.looks: {skewed.tasks['easy'].looks[0]} ('passed 20 of 20" in (
        _refused(base, _pr(base, plan=skewed)))


def _parsed(pr: Results, change: dict[str, object]) -> str:
    raw = json.loads(pr.model_dump_json())
    raw["plan"] = {**raw["plan"], **change}
    with pytest.raises(BadInput) as exc:
        parse_results(json.dumps(raw).encode(), "pr.json")
    return str(exc.value)


def test_the_record_s_shape_is_checked_when_the_file_is_read() -> None:
    pr = _pr(_baseline())
    assert pr.plan is not None
    tasks = json.loads(pr.plan.model_dump_json())["tasks"]
    cases = (({"tasks": {**tasks, "ghost": tasks["easy"]}}, "plan.tasks.ghost: 'ghost' is not "
              "a task of suite.tasks"),
             ({"tasks": {**tasks, "easy": {**tasks["easy"], "looks": [0]}}},
              "plan.tasks.easy.looks: the first look plans at least 1 run"),
             ({"tasks": {**tasks, "easy": {**tasks["easy"], "looks": [2, 2]}}},
              "looks, where other tasks have a different number"),
             ({"tasks": {**tasks, "mid": {**tasks["mid"], "allowed": [15, 10]}}},
              "plan.tasks.mid.allowed: [15, 10] is not a range"),
             ({"looks_run": 2}, "plan.looks_run: 2 looks run, more than the 1 the plan has"))
    for change, field in cases:
        message = _parsed(pr, change)
        assert message.startswith("pr.json: invalid results file: ") and field in message, \
            message
