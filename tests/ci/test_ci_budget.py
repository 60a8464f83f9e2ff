"""A budget in CI (`gate ci --max-cost`, the action's `max-cost:`): the real CLI against the
fake GitHub and the simulator (tests/ci/test_ci.py's project). A run the budget stopped is a
partial sample: not judged, never pooled, exit 3 with what was skipped; a run within it says
what it spent in the comment."""

from __future__ import annotations

import json
import re

import pytest

from gate.core.results import load_results
from tests.helpers.ci import Project, _marker_comments, refresh, sh, touch_agent

pytestmark = pytest.mark.slow

NO_KEY = {"ANTHROPIC_API_KEY": ""}


def _baseline_spend(project: Project) -> float:
    base = json.loads(sh(project.tmp, "git", "--git-dir", str(project.origin), "show",
                         "main:baseline.json"))
    return sum(r["cost_usd"] + (r.get("overhead_usd") or 0.0) for r in base["runs"])


def test_a_pr_run_the_budget_stops_is_not_judged_and_says_what_was_skipped(
        sim_project: Project) -> None:
    ci = sim_project.pr_branch("roomier", touch_agent)
    budget = round(_baseline_spend(sim_project) / 3, 6)  # about a third of the suite, as given
    run = sim_project.gate_ci(ci, "--sim", "--max-cost", f"{budget:.6f}", env=NO_KEY)
    assert run.code == 3, run.stderr
    assert run.outputs["verdict"] == "unmeasurable"
    assert "stopped by the budget" in run.outputs["reason"]
    assert re.search(r"planned runs? not started", run.outputs["reason"])
    (comment,) = _marker_comments(sim_project.gh)
    assert "stopped by the budget" in comment["body"]
    results = load_results(ci / "results.json")  # the honest partial result stays
    assert results.interrupted is not None and results.interrupted.reason.startswith("budget")
    assert results.interrupted.missing
    spent = sum(r.cost_usd + (r.overhead_usd or 0.0) for r in results.runs)
    assert spent <= budget


def test_a_pr_run_within_its_budget_is_judged_and_the_comment_says_what_it_spent(
        sim_project: Project) -> None:
    ci = sim_project.pr_branch("roomier", touch_agent)
    budget = _baseline_spend(sim_project) * 3
    run = sim_project.gate_ci(ci, "--sim", env={**NO_KEY, "GATE_MAX_COST": f"{budget:.6f}"})
    assert run.code == 0, run.stderr
    assert run.outputs["verdict"] == "pass"
    (comment,) = _marker_comments(sim_project.gh)
    line = next(ln for ln in comment["body"].splitlines() if "Budget (`max-cost`)" in ln)
    assert f"${budget:.4f}" in line and "spent" in line and "forecast before the suite" in line
    assert f"budget ${budget:.4f}: forecast $" in run.stderr  # printed before the suite


def test_mains_refresh_the_budget_stops_refreshes_nothing(sim_project: Project) -> None:
    main = sim_project.clone("main-ci")
    before = sh(sim_project.tmp, "git", "--git-dir", str(sim_project.origin), "rev-parse", "main")
    budget = _baseline_spend(sim_project) / 3
    run = refresh(sim_project, main, "--sim", "--max-cost",
                  f"{budget:.6f}", env=NO_KEY, store="commit")
    assert run.code == 3, run.stderr
    assert "stopped by the budget" in run.stderr and "refreshes nothing" in run.stderr
    after = sh(sim_project.tmp, "git", "--git-dir", str(sim_project.origin), "rev-parse", "main")
    assert after == before
