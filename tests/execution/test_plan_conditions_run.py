"""Skill conditions under a plan, executed (issue 40, item 3): ``gate ci``'s run of a PR that
touches a skill — plain runs planned from the baseline, the conditions beside them in the same
session — records the conditions' plan, runs exactly it, and the judge's plan check passes
the file; one condition run beyond it is refused (exit 2)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from gate.compare import PlanSettings, judge, plan_conditions
from gate.core.config import load_config
from gate.core.results import load_results
from gate.errors import BadInput
from gate.execution.run import ConditionArms, PlanFrom, RunRequest, run_suite
from tests.helpers import ROOT

BASELINE = ROOT / "baseline.json"
TASK = "find-api-rate-limit"  # names its target skill in the bundled suite
OTHER = "add-dry-run-flag"
K = 3


@pytest.mark.slow
def test_conditions_beside_a_planned_run_run_their_plan_and_are_checked(
        tmp_path: Path) -> None:
    cfg = load_config(ROOT / "gate.toml")
    baseline = load_results(BASELINE, "baseline")
    res = run_suite(RunRequest(
        config=cfg, output=tmp_path / "r.json", task_ids=[TASK, OTHER], replications=K,
        jobs=3, sim=True, seed=3, transcripts=False,
        beside=ConditionArms(("control", "target"), (TASK,), K),
        plan_from=PlanFrom(baseline, "baseline")))
    assert res.plan is not None and res.plan.conditions is not None
    settings = PlanSettings.of(cfg.gate, replications=K, sequential=False)
    assert res.plan.conditions == plan_conditions(settings, ["control", "target"],
                                                  [TASK]).record()
    ran = Counter((r.task, r.condition) for r in res.runs if r.condition is not None)
    assert ran == {(TASK, "control"): K, (TASK, "target"): K}
    on_disk = load_results(tmp_path / "r.json")
    assert on_disk.plan == res.plan
    judge(baseline, on_disk, cfg.gate)  # the plan check passes what ran
    one = next(r for r in res.runs if r.condition == "target")
    beyond = on_disk.model_copy(update={"runs": [*on_disk.runs, one.model_copy(
        update={"replication": K})]})
    with pytest.raises(BadInput, match=r"plan\.conditions\.runs gives 3 runs a condition"):
        judge(baseline, beyond, cfg.gate)
