"""The plan's loose ends (issue 40): the sequential note, the power figure, the interval, the
resolution and the skill conditions read the plan and each task's own runs."""

from __future__ import annotations

import dataclasses

import numpy as np

from gate.compare import PlanSettings, RunPlan, _stats, compare, judge, plan_runs
from gate.compare._synthetic import synthetic_results
from gate.config import GateSettings
from gate.results import Results, Schedule
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
    settings = GateSettings(power_simulations=0)
    one = judge(base, _pr(base), settings, names=NAMES)
    (note,) = [n for n in one.notes if n.startswith("Sequential run:")]
    assert note.startswith("Sequential run: 1–2 runs per task (mean 1.7, 5 in all) were enough")
    two = judge(base, _pr(base, looks_run=2), settings, names=NAMES)
    (note,) = [n for n in two.notes if n.startswith("Sequential run:")]
    assert note.startswith(
        "Sequential run: the first 1–2 runs per task (mean 1.7, 5 in all) were not "
        "conclusive, so 2–5 per task (mean 4.0, 12 in all) more ran; decided on all 3–7 per "
        "task (mean 5.7, 17 in all) at α/2 = 0.005"), note


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
