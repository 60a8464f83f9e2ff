"""Which skill conditions ``gate ci`` adds (gate/github/_skills.py), on the bundled suite:
what a skill PR runs, what main's refresh keeps, and the one results file they make."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from gate.ci._skills import (
    ConditionPlan,
    changed_skills,
    condition_request,
    joined,
    kept_conditions,
    pr_plan,
    refresh_plan,
)
from gate.compare._synthetic import synthetic_condition_runs, synthetic_results
from gate.config import load_config
from gate.results import Schedule, summarize
from gate.run import RunRequest

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


def test_the_conditions_join_the_suites_runs_in_one_file(tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    suite = synthetic_results([0.5], 3, rng).model_copy(
        update={"schedule": Schedule(replications=3, jobs=2)})
    cond_runs = synthetic_condition_runs([0.5], [0.9], 3, rng)
    cond = suite.model_copy(update={"runs": cond_runs, "summary": summarize(cond_runs),
                                    "schedule": Schedule(conditions=["control", "target"])})
    both = joined(suite, cond)
    assert len(both.runs) == 9 and both.summary.total == 9
    assert both.schedule is not None and both.schedule.conditions == ["control", "target"]
    assert both.schedule.replications == 3
    req = condition_request(RunRequest(config=_config(), output=tmp_path / "results.json",
                                       sequential=[2, 3], first_replication=2),
                            ConditionPlan(["control", "target"], ["find-api-rate-limit"], ""))
    assert req.conditions == ["control", "target"]
    assert req.task_ids == ["find-api-rate-limit"]
    assert req.output == tmp_path / "results.conditions.json"
    assert req.sequential is None and req.first_replication == 0


def test_an_interrupted_conditions_run_is_neither_judged_nor_pooled() -> None:
    import pytest

    from gate.errors import Unmeasurable
    from gate.results import Interruption

    rng = np.random.default_rng(2)
    suite = synthetic_results([0.5], 2, rng)
    cut = suite.model_copy(update={"interrupted": Interruption(reason="interrupted: SIGTERM",
                                                               missing=[])})
    with pytest.raises(Unmeasurable, match="skill conditions' run was interrupted"):
        joined(suite, cut)
