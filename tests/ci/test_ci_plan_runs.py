"""Issue 40: ``gate ci --sim`` on a PR plans each task's runs from the base branch's baseline
before the first look, and runs the plan's looks. Main holds part of the bundled suite (one
task per band of the rule) with the bundled agent and its committed baseline.json (never
regenerated): the plan spreads the runs unevenly, and a harmless PR and a broken one get the
same plan for the first look (it is made before either runs)."""

from __future__ import annotations

import shutil
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from gate.compare import PlanSettings, RunPlan, plan_runs
from gate.core.config import load_config
from gate.core.results import Results, load_results
from tests.helpers import ROOT
from tests.helpers.ci import REPO, TOKEN, Project, sh
from tests.helpers.fake_github import FakeGitHub

#: passed 9, 5 and 4 of 9 in the committed baseline: one task per band of the rule
TASKS = ("add-dry-run-flag", "export-percentile", "robust-env-parser")


@pytest.fixture
def bundled(tmp_path: Path) -> Iterator[Project]:
    origin = tmp_path / "origin.git"
    sh(tmp_path, "git", "init", "-q", "--bare", "-b", "main", str(origin))
    seed = tmp_path / "seed"
    seed.mkdir()
    sh(seed, "git", "init", "-q", "-b", "main")
    for part in ("agent", "skills"):
        shutil.copytree(ROOT / part, seed / part)
    for task in TASKS:
        shutil.copytree(ROOT / "tasks" / task, seed / "tasks" / task)
    shutil.copy(ROOT / "gate.toml", seed / "gate.toml")
    shutil.copy(ROOT / "baseline.json", seed / "baseline.json")
    (seed / ".gitignore").write_text("results.json\n*.transcripts/\ngate-report.md\n")
    sh(seed, "git", "add", "-A")
    sh(seed, "git", "commit", "-q", "-m", "bundled tasks, agent and baseline")
    sh(seed, "git", "remote", "add", "origin", f"file://{origin}")
    sh(seed, "git", "push", "-q", "origin", "main")
    with FakeGitHub(REPO, token=TOKEN) as gh:
        yield Project(tmp_path, origin, gh)


def _edit(old: str, new: str) -> Callable[[Path], None]:
    def change(work: Path) -> None:
        text = (work / "gate.toml").read_text()
        assert old in text
        (work / "gate.toml").write_text(text.replace(old, new, 1))
    return change


def _expected(checkout: Path) -> RunPlan:
    """The public rule's plan for the base's suite, from its committed baseline."""
    cfg = load_config(checkout / "gate.toml")
    baseline = load_results(checkout / "baseline.json", "baseline")
    return plan_runs(baseline, [(t, baseline.suite.tasks[t].digest) for t in TASKS],
                     PlanSettings.of(cfg.gate, replications=cfg.suite.replications,
                                     sequential=cfg.gate.sequential))


def _pr(project: Project, name: str, change: Callable[[Path], None]) -> Results:
    ci = project.pr_branch(name, change)
    run = project.gate_ci(ci, "--sim", env={"ANTHROPIC_API_KEY": ""})
    assert run.code in (0, 1, 3), run.stderr
    return load_results(ci / "results.json")


@pytest.mark.slow
def test_a_pr_runs_the_plan_and_a_broken_agent_gets_the_same_first_look(
        bundled: Project) -> None:
    plan = _expected(bundled.clone("main-view"))
    assert plan.settings.sequential and plan.source == "baseline"
    assert len(set(plan.look(0).values())) > 1, plan.look(0)  # spread unevenly
    harmless = _pr(bundled, "harmless", _edit("max_tokens = 4096", "max_tokens = 4095"))
    broken = _pr(bundled, "broken", _edit("max_turns = 30", "max_turns = 1"))
    for res in (harmless, broken):
        assert res.plan is not None
        rec = res.plan
        assert rec.model_copy(update={"looks_run": 1}) == plan.record(1)
        # exactly the planned runs of the looks the file holds, each task its own count
        through = plan.through(rec.looks_run)
        assert Counter(r.task for r in res.runs) == through
        assert {(r.task, r.replication) for r in res.runs} == {
            (t, i) for t, n in through.items() for i in range(n)}
        assert res.schedule is not None and res.schedule.sequential == [
            max(plan.look(i).values()) for i in range(rec.looks_run)]
    assert harmless.plan is not None and broken.plan is not None
    assert harmless.plan.tasks == broken.plan.tasks  # planned before either ran
