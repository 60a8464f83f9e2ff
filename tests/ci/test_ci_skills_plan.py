"""Which skill conditions ``gate ci`` adds (gate/github/_skills.py), on the bundled suite:
what a skill PR runs, what main's refresh keeps, and the one results file they make."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from gate.ci._skills import (
    ConditionPlan,
    changed_skills,
    condition_request,
    kept_conditions,
    pr_plan,
    refresh_plan,
)
from gate.compare._synthetic import synthetic_condition_runs, synthetic_results
from gate.core.config import load_config
from gate.execution.run import ConditionArms, RunRequest

ROOT = Path(__file__).resolve().parents[2]
TASKS = ROOT / "tasks"


def _config():  # the repository's own: [agent] skills = "skills/"
    cfg = load_config(ROOT / "gate.toml")
    assert cfg.agent.skills
    return cfg


def _baseline(conditions: list[str]):
    rng = np.random.default_rng(0)
    base = synthetic_results([0.5], 2, rng)
    runs = [*base.runs, *[r for r in synthetic_condition_runs([0.5], [0.9], 2, rng,
                                                              extra=["full"])
                          if r.condition in conditions]]
    return base.model_copy(update={"runs": runs})


def test_changed_skills_are_the_folders_under_the_skills_directory() -> None:
    files = ["skills/context-offloading/SKILL.md", "skills/context-offloading/scripts/x.sh",
             "skills/README.md", "skillset/a/SKILL.md", "agent/system.md"]
    assert changed_skills(files, "skills") == ["context-offloading"]
    assert changed_skills(["a/SKILL.md"], ".") == ["a"]
    assert changed_skills([], "skills") == []


def test_a_skill_pr_runs_the_kept_conditions_on_the_tasks_that_target_it() -> None:
    plan = pr_plan(_config(), TASKS, ["context-offloading"], _baseline(["control", "target"]))
    assert plan == ConditionPlan(["control", "target"], ["find-api-rate-limit"], plan.why)
    assert "the conditions the baseline keeps" in plan.why


def test_without_kept_conditions_a_skill_pr_runs_the_standard_ones() -> None:
    plan = pr_plan(_config(), TASKS, ["context-offloading"], _baseline([]))
    assert plan is not None and plan.tasks == ["find-api-rate-limit"]
    assert plan.conditions == ["control", "target", "negative", "full", "target_plus_one",
                               "target_plus_unrelated"]
    assert "nothing is tested" in plan.why


def test_a_skill_no_task_targets_runs_nothing() -> None:
    assert pr_plan(_config(), TASKS, ["git-commit-messages"], None) is None
    assert pr_plan(_config(), TASKS, [], None) is None


def test_main_keeps_what_the_baseline_keeps_and_the_two_the_test_needs() -> None:
    plan = refresh_plan(_config(), TASKS, None)
    assert plan is not None and plan.conditions == ["control", "target"]
    assert plan.tasks == ["find-api-rate-limit"]
    kept = refresh_plan(_config(), TASKS, _baseline(["control", "target", "full"]))
    assert kept is not None and kept.conditions == ["control", "target", "full"]
    assert kept_conditions(_baseline(["full", "control"])) == ["control", "full"]
    without = _config().model_copy(update={"agent": _config().agent.model_copy(
        update={"skills": None})})
    assert refresh_plan(without, TASKS, None) is None


def test_the_conditions_run_beside_the_suite_whatever_look_it_is(tmp_path: Path) -> None:
    req = condition_request(RunRequest(config=_config(), output=tmp_path / "results.json",
                                       sequential=[2, 3], first_replication=2),
                            ConditionPlan(["control", "target"], ["find-api-rate-limit"], ""))
    # the suite's request, unchanged but for the conditions beside it: one session, one file
    assert req.output == tmp_path / "results.json" and req.conditions == []
    assert req.task_ids == [] and req.sequential == [2, 3] and req.first_replication == 2
    assert req.beside == ConditionArms(("control", "target"), ("find-api-rate-limit",),
                                       _config().suite.replications)
