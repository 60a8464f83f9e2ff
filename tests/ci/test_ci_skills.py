"""A skill that stopped helping is caught, through the real ``gate ci`` against the fake GitHub
and the simulator.

The repository ships the bundled suite's two skills (``context-offloading``, which helps, and
``git-commit-messages``, irrelevant) and one small task whose ``metadata.json`` names the
helpful one as its target. Main's refresh (real ``gate ci``, mode main) builds the baseline,
keeping the ``control`` and ``target`` conditions; then pull requests that touch the skill run
those conditions and are judged by the skill-effect test:

- the simulator gives a skill with ``<!-- sim: no-effect -->`` in its ``SKILL.md`` no effect:
  that PR is blocked, with the effect's drop in the comment;
- a harmless rewording of the same skill is not blocked (and, the simulator reading no
  skill's words, its pass rate is "not judged by the simulator": exit 3 by default);
- a PR that touches no skill runs no conditions.

Each CI run has its own simulator seed (``GITHUB_RUN_ID``), as each CI run is a fresh sample.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from gate.core.results import journal_path, load_results, read_journal
from tests.helpers.ci import (
    PR,
    REPO,
    TOKEN,
    CIRun,
    Project,
    _marker_comments,
    push_event,
    sh,
    touch_agent,
)
from tests.helpers.fake_github import FakeGitHub

pytestmark = pytest.mark.slow

SKILLS = Path(__file__).resolve().parents[2] / "skills"
TASK = "find-needle"
REPLICATIONS = 16  # one task: the pairs it takes to see a lost effect at α/2 (coupled pairs)


def write_skills_suite(root: Path) -> None:
    """One hard task the target skill helps (under the simulator: three quarters of the
    failures become passes), both bundled skills, and an agent that offers them."""
    shutil.copytree(SKILLS, root / "skills")
    d = root / "tasks" / TASK
    (d / "solution").mkdir(parents=True)
    (d / "task.md").write_text("Find the needle: write `needle` into out.txt.\n")
    (d / "task.toml").write_text('difficulty = "hard"\n')
    (d / "metadata.json").write_text(json.dumps({
        "target_skill": "context-offloading", "irrelevant_skill": "git-commit-messages"}))
    (d / "verify.sh").write_text("set -eu\ngrep -qx needle out.txt\n")
    (d / "solution" / "solve.sh").write_text("echo needle > out.txt\n")
    (root / "gate.toml").write_text(
        '[agent]\nkind = "builtin"\nmodel = "claude-haiku-5-5"\nmax_turns = 12\n'
        'skills = "skills"\n\n'
        f'[suite]\ntasks = "tasks"\nreplications = {REPLICATIONS}\njobs = 4\n\n'
        '[gate]\nbaseline = "baseline.json"\npower_simulations = 0\nsequential = false\n\n'
        '[ci]\nbaseline_refresh = "commit"\n')
    (root / ".gitignore").write_text("results*.json\n*.transcripts/\n*.journal.jsonl\n"
                                     "gate-report.md\n")


def refresh(project: Project, checkout: Path, run_id: str) -> CIRun:
    return project.gate_ci(checkout, "--sim", event="push", event_path=push_event(checkout),
                           ref="refs/heads/main", env={"GITHUB_RUN_ID": run_id})


@pytest.fixture(scope="module")
def refreshed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Project]:
    """Origin whose main got its baseline from a real refresh (gate ci, mode main)."""
    tmp = tmp_path_factory.mktemp("skills")
    origin = tmp / "origin.git"
    sh(tmp, "git", "init", "-q", "--bare", "-b", "main", str(origin))
    seed = tmp / "seed"
    seed.mkdir()
    sh(seed, "git", "init", "-q", "-b", "main")
    write_skills_suite(seed)
    sh(seed, "git", "add", "-A")
    sh(seed, "git", "commit", "-q", "-m", "suite and skills, no baseline yet")
    sh(seed, "git", "remote", "add", "origin", f"file://{origin}")
    sh(seed, "git", "push", "-q", "origin", "main")
    with FakeGitHub(REPO, token=TOKEN) as gh:
        project = Project(tmp, origin, gh)
        run = refresh(project, project.clone("main-ci"), "1001")
        assert run.code == 0, run.stderr
        assert run.outputs["refresh"] == "committed", run.stderr
        assert "skill conditions control, target on 1 task (find-needle)" in run.stderr
        yield project


def _baseline(project: Project) -> dict:
    text = sh(project.tmp, "git", "--git-dir", str(project.origin), "show",
              "main:baseline.json")
    return json.loads(text)


def test_the_refresh_keeps_the_conditions_pooled_per_condition(refreshed: Project) -> None:
    base = _baseline(refreshed)
    by = {}
    for r in base["runs"]:
        by.setdefault(r["condition"], []).append(r)
    assert sorted(by, key=str) == sorted([None, "control", "target"], key=str)
    assert all(len(runs) == REPLICATIONS for runs in by.values())
    # pairs survive pooling: each condition run keeps the replication it had in its refresh
    assert sorted(r["source_replication"] for r in by["target"]) == list(range(REPLICATIONS))
    assert base["schedule"]["conditions"] == ["control", "target"]
    # the helpful skill helps on main
    rate = {c: sum(r["status"] == "passed" for r in runs) / len(runs)
            for c, runs in by.items() if c}
    assert rate["target"] > rate["control"]
    # the history's pass rate is the suite's, not the conditions'
    history = sh(refreshed.tmp, "git", "--git-dir", str(refreshed.origin), "show",
                 "main:gate-history.jsonl").splitlines()
    entry = json.loads(history[-1])
    assert entry["total"] == REPLICATIONS


def _edit_skill(edit: str | Callable[[str], str]) -> Callable[[Path], None]:
    """A PR change to the helpful skill's SKILL.md: text appended, or the text rewritten."""
    def change(work: Path) -> None:
        path = work / "skills" / "context-offloading" / "SKILL.md"
        text = path.read_text()
        path.write_text(edit(text) if callable(edit) else text + edit)
    return change


def _comment(project: Project) -> str:
    (comment,) = _marker_comments(project.gh)
    return str(comment["body"])


def test_a_skill_that_stopped_helping_is_blocked_with_the_effect_drop(refreshed: Project
                                                                       ) -> None:
    refreshed.gh.comments.pop(PR, None)
    ci = refreshed.pr_branch("broken-skill", _edit_skill("\n<!-- sim: no-effect -->\n"))
    run = refreshed.gate_ci(ci, "--sim", env={"GITHUB_RUN_ID": "2002"})
    assert run.code == 1, run.stderr
    assert run.outputs["verdict"] == "regression"
    assert "the PR changes the skill context-offloading: the conditions the baseline keeps" \
        in run.stderr
    body = _comment(refreshed)
    lines = body.splitlines()  # the judge's why, under the title
    why = lines[next(i for i, ln in enumerate(lines) if ln.startswith("### ")) + 1]
    assert why.startswith("**Why:** ") and "skill effect −" in why and len(why) <= 90
    # the plain runs offer every skill, so the pass-rate test may see the loss too; the
    # skill-effect test names it, in full right under the first screen (compare's headline)
    reason = next(line for line in body.splitlines()
                  if "skill effect (target − control) +" in line)
    assert "→ +0.0 pts" in reason
    assert "**Skill conditions.** The target skill's effect (target − control) +" in body
    assert "fell significantly: **blocks**." in body
    row = next(line for line in body.splitlines() if line.startswith("| target |"))
    assert row.endswith(" ❌ |")
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[6].startswith("−")  # the change: the effect dropped
    assert "| pass rate |" in body  # the baseline gate's table is still there
    results = load_results(run.outputs["results_path"])
    assert {r.condition for r in results.runs} == {None, "control", "target"}
    # the suite's runs (each task's planned from the baseline), not the conditions'
    assert results.plan is not None
    planned = sum(sum(p.looks) for p in results.plan.tasks.values())
    assert run.outputs["total"] == str(planned)
    assert planned == sum(1 for r in results.runs if r.condition is None)
    run.no_secrets(refreshed.gh)


def test_a_harmless_rewording_of_the_skill_is_not_blocked(refreshed: Project) -> None:
    refreshed.gh.comments.pop(PR, None)

    def reword(text: str) -> str:
        return text.replace("Keep large inputs on disk and bring back only what you need.",
                            "Keep big inputs on disk; bring back only the part you need.")

    ci = refreshed.pr_branch("reworded-skill", _edit_skill(reword))
    assert "bring back only the part" in (ci / "skills" / "context-offloading" /
                                          "SKILL.md").read_text()
    run = refreshed.gate_ci(ci, "--sim", "--max-cost", "50", env={"GITHUB_RUN_ID": "3003"})
    # not blocked; the simulator reads no skill's words, so the rewording is not judged
    # ([ci] sim_unjudged = "inconclusive", the default: exit 3)
    assert run.code == 3, run.stderr
    assert run.outputs["verdict"] == "inconclusive"
    # the conditions are arms of the suite's session: one results file, one journal, one
    # budget whose record counts every run of the job
    out = Path(run.outputs["results_path"])
    results = load_results(out)
    _, journaled = read_journal(journal_path(out))
    def keys(runs: list) -> list:
        return sorted((r.task, r.condition or "", r.replication) for r in runs)

    assert keys(journaled) == keys(results.runs)
    assert {r.condition for r in results.runs} == {None, "control", "target"}
    assert not list(out.parent.glob("results.conditions*"))
    budget = (results.model_extra or {})["budget"]
    assert budget["max_cost_usd"] == 50 and budget["stopped"] is None
    assert budget["spent_usd"] == pytest.approx(
        sum(r.cost_usd + (r.overhead_usd or 0.0) for r in results.runs), abs=1e-5)
    body = _comment(refreshed)
    assert "Budget (`max-cost`)" in body
    assert "**Skill conditions.** The target skill's effect" in body
    assert "fell significantly" not in body
    assert "\n**Why:** pass rate not judged by the simulator" in body, body  # 1st screen
    assert "Not judged by the simulator: the text of the skill context-offloading" in body
    row = next(line for line in body.splitlines() if line.startswith("| target |"))
    assert row.endswith(" ✅ |")


def test_a_pr_that_touches_no_skill_runs_no_conditions(refreshed: Project) -> None:
    refreshed.gh.comments.pop(PR, None)
    ci = refreshed.pr_branch("no-skill", touch_agent)
    run = refreshed.gate_ci(ci, "--sim", env={"GITHUB_RUN_ID": "4004"})
    assert run.code == 0, run.stderr
    assert "skill conditions" not in run.stderr
    assert "Skill conditions" not in _comment(refreshed)
    results = load_results(run.outputs["results_path"])
    assert {r.condition for r in results.runs} == {None}
