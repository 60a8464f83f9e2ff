"""Planned results files for the plan check's tests: a real ``gate run --sim`` file cut to the
runs the plan gives (gate/compare/_plan.py) and the plan recorded, as a planned run writes it.
Until ``gate run`` records plans itself, this is how a test gets one from real runs."""

from __future__ import annotations

from pathlib import Path

from gate.compare import PlanSettings, RunPlan, plan_runs
from gate.core.config import GateSettings
from gate.core.results import Results, load_results, write_results

#: a fixed schedule of 3 runs a task, planned by pass rate (the rule's defaults)
FIXED = PlanSettings.of(GateSettings(), replications=3, sequential=False)


def plan_for(results: Results, baseline: Results, settings: PlanSettings = FIXED) -> RunPlan:
    """The plan the rule gives ``results``' tasks from ``baseline``."""
    return plan_runs(baseline, [(t, i.digest) for t, i in results.suite.tasks.items()], settings)


def planned(results: Results, baseline: Results, settings: PlanSettings = FIXED, *,
            looks_run: int = 1) -> Results:
    """``results`` holding exactly the plan's runs through ``looks_run`` and the plan: the
    file needs at least that many runs of each task (``gate run -k`` the plan's most)."""
    plan = plan_for(results, baseline, settings)
    through = plan.through(looks_run)
    runs = [r for r in results.runs if r.replication < through[r.task]]
    for tid, n in through.items():
        have = sum(1 for r in runs if r.task == tid and r.condition is None)
        assert have == n, f"{tid}: the run holds {have} of the {n} planned runs"
    return results.model_copy(update={"runs": runs, "plan": plan.record(looks_run)})


def write_planned(source: Path, baseline: Path, out: Path,
                  settings: PlanSettings = FIXED) -> Results:
    """:func:`planned` of the results file ``source`` against ``baseline``, written to
    ``out``."""
    res = planned(load_results(source), load_results(baseline), settings)
    write_results(out, res)
    return res
