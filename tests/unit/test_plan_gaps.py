"""The plan's loose ends (issue 40): the sequential note, the power figure, the intervals (the
difference's, and each arm's and task's baseline interval on the report page), the resolution
and the skill conditions read the plan and each task's own runs."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import numpy as np
import pytest

from gate.compare import (
    ConditionsPlan,
    PlanSettings,
    Resolution,
    RunPlan,
    _stats,
    compare,
    intervals,
    judge,
    plain_runs,
    plan_conditions,
    plan_runs,
    resolution_with_runs,
)
from gate.compare._rate_ci import (
    arm_limits_given,
    given_plan_limits,
    pass_rate_ci,
    pass_rate_ci_given,
    wilson,
)
from gate.compare._synthetic import synthetic_results
from gate.core.config import GateSettings
from gate.core.results import Interruption, MissingRun, Results, Schedule, write_results
from gate.errors import BadInput
from gate.report import plan_lines, render_html
from tests.helpers.process import gate
from tests.helpers.report import _results, _run

SEQ = PlanSettings(rule="by-pass-rate", sequential=True, first=2, more=3, replications=5)
FIXED = dataclasses.replace(SEQ, sequential=False)
NAMES = ("base.json", "pr.json")


def _baseline() -> Results:
    """easy passed 20 of 20, mid 12 of 20, hard 4 of 20."""
    runs = [_run("easy", i, "passed") for i in range(20)]
    runs += [_run("mid", i, "passed" if i < 12 else "failed") for i in range(20)]
    runs += [_run("hard", i, "passed" if i < 4 else "failed") for i in range(20)]
    return _results(runs)


def _plan(base: Results, settings: PlanSettings = SEQ) -> RunPlan:
    return plan_runs(base, [(t, f"d-{t}") for t in ("easy", "hard", "mid")], settings)


def _pr(base: Results, settings: PlanSettings = SEQ, *, looks_run: int = 1,
        status: str = "passed") -> Results:
    """The runs the plan gives through ``looks_run``, each with ``status``, and the schedule
    a planned sequential run records (the most runs any task got per look)."""
    plan = _plan(base, settings)
    runs = [_run(t, i, status) for t, n in plan.through(looks_run).items() for i in range(n)]
    most = [max(p.looks[i] for p in plan.tasks.values()) for i in range(looks_run)]
    schedule = Schedule(replications=max(plan.through(looks_run).values()),
                        sequential=most if settings.sequential else None)
    return _results(runs).model_copy(update={"plan": plan.record(looks_run),
                                             "schedule": schedule})


def test_the_sequential_note_says_the_plans_runs_not_the_largest_per_look() -> None:
    base = _baseline()
    plan = _plan(base)
    assert plan.look(0) == {"easy": 2, "hard": 1, "mid": 2}
    assert plan.look(1) == {"easy": 5, "hard": 2, "mid": 5}
    settings = GateSettings(power_simulations=0, sequential_looks=2)
    one = judge(base, _pr(base), settings, names=NAMES)
    (note,) = [n for n in one.notes if n.startswith("Sequential run")]
    assert note.startswith("Sequential run, look 1 of 2: 1–2 runs per task (mean 1.7, 5 in "
                           "all) were enough (p = ")
    assert note.endswith("; block at α/2 = 0.005; turns, cost and cache-hit rate at "
                         "metric_alpha/2 = 0.0015; stop at p > 0.13).")
    two = judge(base, _pr(base, looks_run=2), settings, names=NAMES)
    (note,) = [n for n in two.notes if n.startswith("Sequential run")]
    assert note.startswith(
        "Sequential run, look 2 of 2: the first 1–2 runs per task (mean 1.7, 5 in all) were "
        "not conclusive, so 2–5 per task (mean 4.0, 12 in all) more ran; decided on all 3–7 "
        "per task (mean 5.7, 17 in all) (p = "), note
    assert note.endswith(") at α/2 = 0.005; turns, cost and cache-hit rate at metric_alpha/2 "
                         "= 0.0015."), note


def test_three_looks_are_judged_at_a_quarter_a_quarter_and_a_half_and_say_so() -> None:
    """The shipped three looks: each note names its look, its share of α and metric_alpha
    and, before the last, its stop (the settings' 0.2, then 0.08)."""
    base, seq = _baseline(), dataclasses.replace(SEQ, looks=3)
    plan = _plan(base, seq)
    assert [plan.look(i) for i in range(3)] == [{"easy": 2, "hard": 1, "mid": 2},
                                                 {"easy": 2, "hard": 1, "mid": 2},
                                                 {"easy": 3, "hard": 1, "mid": 3}]
    settings = GateSettings(power_simulations=0)
    notes = []
    for looks_run in (1, 2, 3):
        c = judge(base, _pr(base, seq, looks_run=looks_run), settings, names=NAMES)
        (note,) = [n for n in c.notes if n.startswith("Sequential run")]
        notes.append(note)
    assert notes[0].startswith("Sequential run, look 1 of 3: 1–2 runs per task (mean 1.7, 5 "
                               "in all) were enough (p = ")
    assert notes[0].endswith("; block at α/4 = 0.0025; turns, cost and cache-hit rate at "
                             "metric_alpha/4 = 0.00075; stop at p > 0.2).")
    assert notes[1].startswith("Sequential run, look 2 of 3: the first 1–2 runs per task "
                               "(mean 1.7, 5 in all) were not conclusive, so 1–2 per task "
                               "(mean 1.7, 5 in all) more ran in 1 more look, and they were "
                               "enough (p = ")
    assert notes[1].endswith("; block at α/4 = 0.0025; turns, cost and cache-hit rate at "
                             "metric_alpha/4 = 0.00075; stop at p > 0.08).")
    assert notes[2].startswith("Sequential run, look 3 of 3: the first 1–2 runs per task "
                               "(mean 1.7, 5 in all) were not conclusive, so 2–5 per task "
                               "(mean 4.0, 12 in all) more ran; decided on all 3–7 per task "
                               "(mean 5.7, 17 in all) (p = ")
    assert notes[2].endswith(") at α/2 = 0.005; turns, cost and cache-hit rate at "
                             "metric_alpha/2 = 0.0015.")


def test_each_look_tests_at_its_share_of_alpha_read_from_the_files_plan() -> None:
    """The pass-rate test's threshold at looks 1, 2 and 3 of three is ¼, ¼ and ½ of the same
    runs' judged as a fixed run, and the metrics' alike; a plan of two looks (a file written
    before the third look) ½ at each."""
    base = _baseline()
    settings = GateSettings(power_simulations=0)

    def thresholds(seq: PlanSettings, metric: str = "pass_rate") -> list[float]:
        out = []
        for looks_run in range(1, seq.looks + 1):
            pr = _pr(base, seq, looks_run=looks_run)
            fixed = judge(base, pr.model_copy(update={"plan": None, "schedule": None}), settings)
            c = judge(base, pr, settings, names=NAMES)
            level, whole = ({m.name: m.threshold for m in x.metrics}[metric] for x in (c, fixed))
            assert level is not None and whole is not None
            out.append(level / whole)
        return out

    three = dataclasses.replace(SEQ, looks=3)
    assert thresholds(three) == pytest.approx([0.25, 0.25, 0.5])
    assert thresholds(three, "turns") == pytest.approx([0.25, 0.25, 0.5])
    assert thresholds(SEQ) == pytest.approx([0.5, 0.5])


def test_the_power_figure_reads_each_tasks_own_runs_and_says_their_spread() -> None:
    rates = [1.0, 0.9, 0.6, 0.4, 1.0]
    base = synthetic_results(rates, 20, np.random.default_rng(0))
    pr = synthetic_results(rates, [4, 4, 3, 1, 4], np.random.default_rng(1))
    settings = GateSettings(power_simulations=100)
    c = compare(base, pr, settings)
    assert c.power is not None
    assert c.power.candidate_runs == 3.2 and c.power.candidate_runs_range == (1, 4)
    assert c.power.baseline_runs == 20.0 and c.power.baseline_runs_range == (20, 20)
    assert c.power.statement.startswith("With 1–4 runs per task (mean 3.2) against a 20-run")
    b = np.array([t.baseline_passed for t in c.tasks], dtype=np.int64)
    nb = np.array([t.baseline_runs for t in c.tasks], dtype=np.int64)
    own = np.array([t.candidate_runs for t in c.tasks], dtype=np.int64)
    assert own.tolist() == [4, 4, 3, 1, 4]
    kw = {"sims": settings.power_simulations, "seed": settings.seed}
    assert c.power.detectable_drop == _stats.detectable_drop(b, nb, own, settings.alpha, **kw)


# ----- skill conditions: planned by their own rule, checked like the plain runs -----------


def _with_conditions(base: Results, *, runs: int = 5, names: tuple[str, ...] = (
        "control", "target"), tasks: tuple[str, ...] = ("mid",), drop: int | None = None
                     ) -> Results:
    """A fixed planned file with ``names`` on ``tasks`` beside its plain runs, as gate ci
    writes it: ``runs`` replications of each, the plan's record of them; ``drop``: leave
    out replication ``drop`` of the first condition."""
    pr = _pr(base, FIXED)
    cond = plan_conditions(FIXED, names, tasks)
    extra = [_run(t, r, "passed").model_copy(update={"condition": c})
             for t in tasks for c in names for r in range(runs)
             if not (drop is not None and c == names[0] and r == drop)]
    assert pr.plan is not None
    return pr.model_copy(update={"runs": [*pr.runs, *extra], "plan": pr.plan.model_copy(
        update={"conditions": cond.record()})})


def _refused(base: Results, pr: Results) -> str:
    with pytest.raises(BadInput) as exc:
        judge(base, pr, GateSettings(power_simulations=0), names=NAMES)
    message = str(exc.value)
    assert "\n" not in message
    return message


def test_the_conditions_plan_reads_no_outcome_and_a_file_that_keeps_it_is_judged() -> None:
    base = _baseline()
    cond = plan_conditions(FIXED, ["control", "target", "control"], ["mid", "easy"])
    assert cond == ConditionsPlan(("control", "target"), ("easy", "mid"), 5)
    # whatever the baseline passed: the rule reads the settings only
    assert plan_conditions(dataclasses.replace(FIXED, replications=3), ["target"],
                           ["mid"]).runs == 3
    c = judge(base, _with_conditions(base), GateSettings(power_simulations=0), names=NAMES)
    assert c.verdict in ("pass", "inconclusive")


def test_condition_runs_beyond_or_outside_the_plan_are_refused() -> None:
    base = _baseline()
    pr = _with_conditions(base)
    beyond = pr.model_copy(update={"runs": [*pr.runs, _run("mid", 5, "passed").model_copy(
        update={"condition": "target"})]})
    msg = _refused(base, beyond)
    assert msg.startswith("pr.json: runs.") and ".replication: " in msg
    assert "is beyond the plan: plan.conditions.runs gives 5 runs a condition" in msg
    other = pr.model_copy(update={"runs": [*pr.runs, _run("mid", 0, "passed").model_copy(
        update={"condition": "negative"})]})
    assert "condition 'negative' under a condition (plan.conditions)" in _refused(base, other)
    elsewhere = pr.model_copy(update={"runs": [*pr.runs, _run("easy", 0, "passed").model_copy(
        update={"condition": "target"})]})
    assert "task 'easy' under a condition" in _refused(base, elsewhere)
    assert pr.plan is not None and pr.plan.conditions is not None
    edited = pr.model_copy(update={"plan": pr.plan.model_copy(update={
        "conditions": pr.plan.conditions.model_copy(update={"runs": 6})})})
    assert "pr.json: plan.conditions.runs: 6 recorded, the rule gives 5" in _refused(base,
                                                                                     edited)
    unplanned = pr.model_copy(update={"plan": pr.plan.model_copy(update={"conditions": None})})
    assert "but the plan plans none (plan.conditions)" in _refused(base, unplanned)


def test_a_missing_condition_run_needs_a_record_of_why() -> None:
    base = _baseline()
    short = _with_conditions(base, drop=2)
    assert "plan.conditions: planned run" in _refused(base, short)
    key = next(r for r in _with_conditions(base).runs
               if r.condition == "control" and r.replication == 2).key
    why = Interruption(reason="cancelled", missing=[MissingRun(
        task=key.task, condition=key.condition, replication=key.replication)])
    judge(base, short.model_copy(update={"interrupted": why}),
          GateSettings(power_simulations=0), names=NAMES)
    # a condition that does not apply to a task (gate run records it skipped) is not missing
    skipped = _with_conditions(base, names=("control", "target", "negative"))
    skipped = skipped.model_copy(update={"runs": [r for r in skipped.runs
                                                  if r.condition != "negative"]})
    assert "plan.conditions: planned run" in _refused(base, skipped)
    extra = {**(skipped.model_extra or {}), "skipped_conditions": {"mid": ["negative"]}}
    judge(base, Results.model_validate({**skipped.model_dump(), **extra}),
          GateSettings(power_simulations=0), names=NAMES)


# ----- the resolution of a planned design -------------------------------------------------


def test_resolution_with_runs_takes_each_tasks_planned_runs_and_the_plans_ranges() -> None:
    base = _baseline()
    plan = _plan(base, FIXED)
    assert plan.through(1) == {"easy": 7, "hard": 3, "mid": 7}
    pr = _pr(base, FIXED, status="failed")
    settings = GateSettings(power_simulations=0)
    c = judge(base, pr, settings, names=NAMES)
    assert c.resolution is not None
    given = resolution_with_runs(c, plan.through(1), allowed=plan.allowed())
    plain = resolution_with_runs(c, plan.through(1))
    assert given is not None and plain is not None

    def floor(r: Resolution) -> float | None:
        return next(t.min_p for t in r.tests if t.metric == "pass_rate")

    # the verdict's own floor is the one given the plan, for the plan's runs
    assert floor(given) == floor(c.resolution)
    assert "3–7 runs per task (mean 5.7)" in given.statement
    # mid passed 12 of 20, its band's range 10..20: a relabelling moving 3 or more passes
    # into the PR would have given another plan, so the floor given the plan is higher
    b, nb = np.array([20, 4, 12]), np.array([20, 20, 20])
    nc = np.array([7, 3, 7])
    bounds = np.array([plan.allowed()[t] for t in ("easy", "hard", "mid")])
    deep = _stats.is_deep(nb)
    assert floor(given) == _stats.collapse_p(b, nb, nc, deep, bounds)
    assert floor(plain) == _stats.collapse_p(b, nb, nc, deep)
    assert floor(given) != floor(plain)
    # one count for every task: as before
    uniform = resolution_with_runs(c, 4)
    assert uniform is not None and "4 runs per task against a 20-run baseline" in (
        uniform.statement)
    with pytest.raises(ValueError, match="no runs given for the compared task mid"):
        resolution_with_runs(c, {"easy": 7, "hard": 3})


# ----- the pass-rate interval given the plan ----------------------------------------------


def _truncated_tail(x: int, n: int, lo: int, hi: int, p: float, upper: bool) -> float:
    """Brute force: P(b ≥ x) or P(b ≤ x), b ~ Binomial(n, p) given lo ≤ b ≤ hi."""
    w = {k: math.comb(n, k) * p ** k * (1 - p) ** (n - k) for k in range(lo, hi + 1)}
    return sum(v for k, v in w.items() if (k >= x if upper else k <= x)) / sum(w.values())


def test_a_tasks_baseline_limits_given_the_plan_are_the_truncated_binomials_exact_ones() -> None:
    for x, n, lo, hi in ((15, 20, 10, 20), (12, 20, 10, 20), (4, 20, 1, 9), (6, 9, 5, 9)):
        low, high = given_plan_limits(x, n, lo, hi, 0.95)
        assert _truncated_tail(x, n, lo, hi, low, True) == pytest.approx(0.025, abs=1e-6)
        assert _truncated_tail(x, n, lo, hi, high, False) == pytest.approx(0.025, abs=1e-6)
    # at the range's floor nothing lower was possible: the rate may be as low as 0
    assert given_plan_limits(10, 20, 10, 20, 0.95)[0] == 0.0
    assert given_plan_limits(20, 20, 10, 20, 0.95)[1] == 1.0


def test_the_pass_rate_interval_covers_given_the_plan_where_the_plain_one_does_not() -> None:
    """Three tasks at 0.5, a 20-run baseline, the PR planned 7 runs a task when the baseline
    passed ≥ 10 of 20 (range 10..20): given that plan the baseline's rates read high, and the
    plain interval covers the true difference less than 95 % of the time."""
    rng = np.random.default_rng(0)
    nb, nc, bounds = np.full(3, 20), np.full(3, 7), np.array([[10, 20]] * 3)
    plain = given = drawn = 0
    while drawn < 600:
        b = rng.binomial(20, 0.5, size=3)
        if (b < 10).any():
            continue  # another plan: not this design
        c = rng.binomial(7, 0.5, size=3)
        drawn += 1
        _, lo, hi = pass_rate_ci(b, nb, c, nc)
        plain += lo <= 0.0 <= hi
        _, lo, hi = pass_rate_ci_given(b, nb, c, nc, bounds)
        given += lo <= 0.0 <= hi
    assert plain / drawn < 0.94
    assert given / drawn >= 0.95


def test_compare_shows_the_interval_given_the_plan() -> None:
    base = _baseline()
    plan = _plan(base, FIXED)
    pr = _pr(base, FIXED)
    c = judge(base, pr, GateSettings(power_simulations=0), names=NAMES)
    m = c.metric("pass_rate")
    tasks = ("easy", "hard", "mid")
    b, nb = np.array([20, 4, 12]), np.full(3, 20)
    nc = np.array([plan.through(1)[t] for t in tasks])
    bounds = np.array([plan.allowed()[t] for t in tasks])
    assert (m.delta, m.ci_low, m.ci_high) == pass_rate_ci_given(b, nb, nc, nc, bounds)
    assert (m.ci_low, m.ci_high) != pass_rate_ci(b, nb, nc, nc)[1:]
    # a range that cuts nothing is today's interval, bit for bit
    full = np.array([[0, 20]] * 3)
    assert pass_rate_ci_given(b, nb, nc, nc, full) == pass_rate_ci(b, nb, nc, nc)


def test_the_plain_runs_of_a_planned_file_with_conditions_keep_the_plain_plan_only() -> None:
    """What the sequential looks judge (``plain_runs``): no condition run, so no plan of
    them either — else the check would find every condition run missing."""
    base = _baseline()
    pr = _with_conditions(base)
    plain = plain_runs(pr)
    assert plain.plan is not None and plain.plan.conditions is None
    assert pr.plan is not None and plain.plan.tasks == pr.plan.tasks
    assert all(r.condition is None for r in plain.runs)
    judge(base, plain, GateSettings(power_simulations=0), names=NAMES)


def test_the_reports_say_the_conditions_plan_and_the_interval_given_the_plan() -> None:
    base = _baseline()
    lines = plan_lines(judge(base, _with_conditions(base), GateSettings(power_simulations=0),
                             names=NAMES))
    assert lines[1].endswith("and the pass-rate interval is the one given the plan."), lines
    assert lines[2] == ("Skill conditions control, target: 5 runs each on 1 task, in the first "
                        "look (every condition the suite's replications: the plan reads no "
                        "outcome for them).")
    plain = plan_lines(judge(base, _pr(base, FIXED), GateSettings(power_simulations=0),
                             names=NAMES))
    assert len(plain) == 2


@pytest.mark.slow
def test_gate_compare_refuses_a_condition_run_beyond_the_plan_in_one_line(
        tmp_path: Path) -> None:
    base = _baseline()
    pr = _with_conditions(base)
    beyond = pr.model_copy(update={"runs": [*pr.runs, _run("mid", 5, "failed").model_copy(
        update={"condition": "control"})]})
    write_results(tmp_path / "base.json", base)
    write_results(tmp_path / "ok.json", pr)
    write_results(tmp_path / "pr.json", beyond)
    (tmp_path / "gate.toml").write_text("[gate]\npower_simulations = 0\n")
    args = ["compare", tmp_path / "base.json", "--config", tmp_path / "gate.toml"]
    ok = gate(*args, tmp_path / "ok.json", cwd=tmp_path)
    assert ok.returncode in (0, 3), ok.stderr
    p = gate(*args, tmp_path / "pr.json", cwd=tmp_path)
    assert p.returncode == 2, (p.stdout, p.stderr)
    (line,) = [ln for ln in p.stderr.splitlines() if ln.strip()]
    assert "pr.json: runs." in line and "beyond the plan: plan.conditions.runs gives 5" in line
    assert "Traceback" not in p.stderr


# ----- each arm's intervals given the plan --------------------------------------------------


def test_the_per_task_baseline_interval_covers_given_the_plan_where_wilson_does_not() -> None:
    """A task at 0.3 whose PR got its runs because the baseline passed ≥ 10 of 20 (range
    10..20): given that plan the baseline's rate reads high, and its Wilson interval covers
    the true rate less than 95 % of the time (about 63 %); the interval given the plan
    covers it."""
    rng = np.random.default_rng(1)
    plain = given = drawn = 0
    while drawn < 2000:
        b = int(rng.binomial(20, 0.3))
        if b < 10:
            continue  # another plan
        drawn += 1
        lo, hi = wilson(b, 20, 0.95)
        plain += lo <= 0.3 <= hi
        lo, hi = given_plan_limits(b, 20, 10, 20, 0.95)
        given += lo <= 0.3 <= hi
    assert plain / drawn < 0.8
    assert given / drawn >= 0.95


def test_the_baseline_arm_interval_covers_given_the_plan_where_the_plain_one_does_not() -> None:
    rng = np.random.default_rng(2)
    nb, bounds = np.full(3, 20), np.array([[10, 20]] * 3)
    plain = given = drawn = 0
    while drawn < 1000:
        b = rng.binomial(20, 0.5, size=3)
        if (b < 10).any():
            continue
        drawn += 1
        rate, n_eff = float(np.mean(b / nb)), 20 * 3
        lo, hi = wilson(rate * n_eff, n_eff, 0.95)
        plain += lo <= 0.5 <= hi
        limits = arm_limits_given(b, nb, bounds, 0.95)
        assert limits is not None
        given += limits[0] <= 0.5 <= limits[1]
    assert plain / drawn < 0.94
    assert given / drawn >= 0.95


def test_intervals_take_the_comparisons_plan_and_only_a_conditioned_one() -> None:
    """easy 20/20, mid 12/20, hard 4/20 (tests/unit/test_plan_gaps.py): the plan's bands cut
    mid's and hard's counts; the baseline's intervals are given the plan, the candidate's not."""
    base = _baseline()
    pr = _pr(base, FIXED)
    c = judge(base, pr, GateSettings(power_simulations=0), names=NAMES)
    assert c.plan is not None and c.plan.conditioned
    given = c.plan.given()
    assert given == {"easy": (10, 20), "hard": (1, 9), "mid": (10, 20)}
    tasks = ["easy", "hard", "mid"]
    iv = intervals(pr, base, tasks, given=given)
    plain = intervals(pr, base, tasks)
    for t, b in (("mid", 12), ("hard", 4)):
        want = given_plan_limits(b, 20, *given[t], 0.95)
        assert iv.per_task[t]["baseline"].interval == want
        assert plain.per_task[t]["baseline"].interval == wilson(b, 20, 0.95) != want
        assert iv.per_task[t]["candidate"] == plain.per_task[t]["candidate"]
    # easy at 20 of 20 is the range's top: the exact lower limit given b ≥ 10, not Wilson's
    assert iv.per_task["easy"]["baseline"].interval == given_plan_limits(20, 20, 10, 20, 0.95)
    assert iv.baseline is not None and plain.baseline is not None
    arm = arm_limits_given(np.array([20, 4, 12]), np.full(3, 20),
                           np.array([given[t] for t in tasks]), 0.95)
    assert iv.baseline.intervals["pass_rate"] == arm
    assert plain.baseline.intervals["pass_rate"] != arm
    assert iv.candidate.intervals == plain.candidate.intervals
    # a plan the tests did not condition on gives nothing to condition the intervals on
    assert c.plan.model_copy(update={"conditioned": False}).given() == {}
    # the ranges are on the plain runs: a task whose baseline here holds a skill condition's
    # runs too keeps Wilson over what it shows
    extra = base.runs[0].model_copy(update={"task": "hard", "condition": "target"})
    mixed = base.model_copy(update={"runs": [*base.runs, extra]})
    hard = intervals(pr, mixed, tasks, given=given).per_task["hard"]["baseline"]
    assert hard.interval == wilson(hard.passed, hard.runs, 0.95) and not hard.given_plan


def test_the_report_page_shows_the_baseline_interval_given_the_plan(tmp_path: Path) -> None:
    base = _baseline()
    pr = _pr(base, FIXED)
    c = judge(base, pr, GateSettings(power_simulations=0), names=NAMES)
    b_path, r_path = tmp_path / "base.json", tmp_path / "pr.json"
    write_results(b_path, base)
    write_results(r_path, pr)
    page = render_html(pr, results_path=r_path, baseline=base, baseline_path=b_path,
                       comparison=c)
    lo, hi = given_plan_limits(4, 20, 1, 9, 0.95)
    plain_lo = wilson(4, 20, 0.95)[0]
    assert (f"baseline: 4/20 passed, 95 % interval {lo * 100:.0f}–{hi * 100:.0f} % given the "
            "plan") in page
    assert f"baseline: 4/20 passed, 95 % interval {plain_lo * 100:.0f}–" not in page
    # the candidate's fresh runs keep their Wilson interval
    assert "candidate: 3/3 passed, 95 % interval 44–100 %<" in page


def test_the_skill_split_says_the_looks_share_of_the_pass_rate_half() -> None:
    """With skill conditions the pass-rate test has α/2, and a sequential look its share of
    that: α/8 at the first of three looks, α/4 at the last (and the second of two)."""
    from gate.compare._judge import alpha_note

    settings = GateSettings()
    assert "pass rate at α/2 = 0.005 (α/8 = 0.00125 at this sequential look)" in alpha_note(
        settings, share=0.25)
    assert "(α/4 = 0.0025 at this sequential look)" in alpha_note(settings, share=0.5)
    assert "sequential look" not in alpha_note(settings, share=1.0)
