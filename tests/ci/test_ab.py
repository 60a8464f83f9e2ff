"""Same-job A/B (gate/execution/ab.py): a PR with no baseline anywhere is judged against its base
commit's agent, run in the same job, interleaved run by run, on the simulator.

Through the real CLI: ``gate ci`` against the fake GitHub and real git repositories (a bare
origin, main, PR branches), and ``gate run --ab`` + ``gate compare`` locally.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from gate.core.results import load_results
from gate.core.tasks import load_suite
from gate.execution.ab import BASE, PR, ab_plan
from gate.execution.runner import Arm, RunOptions
from tests.helpers.ci import PR as PR_NUMBER
from tests.helpers.ci import (
    REPO,
    TOKEN,
    Project,
    _marker_comments,
    _origin,
    ab_project,
    set_max_turns,
    sh,
    touch_agent,
    write_sim_suite,
)
from tests.helpers.fake_github import FakeGitHub
from tests.helpers.process import gate, user_env


def _readme(work: Path) -> None:
    (work / "README.md").write_text("# agent\n")


def _ab_line(body: str) -> str:
    return next(ln for ln in body.splitlines() if "same-job A/B against" in ln)


@pytest.mark.slow
def test_a_pr_with_no_baseline_anywhere_is_judged_by_a_same_job_ab(fresh: Project) -> None:
    base_sha = sh(fresh.tmp / "seed", "git", "rev-parse", "HEAD").strip()
    ci = fresh.pr_branch("docs", _readme)
    run = fresh.gate_ci(ci, "--sim", env={"ANTHROPIC_API_KEY": ""})
    assert run.code == 0, run.stderr
    assert run.outputs["verdict"] == "pass"
    (comment,) = _marker_comments(fresh.gh)
    body = comment["body"]
    line = _ab_line(body)
    assert f"Judged by a same-job A/B against `{base_sha[:7]}`'s agent (9 runs each, cost $" \
        in line
    assert "no baseline for `main` anywhere" in line
    assert "Baseline from" not in body  # no stored baseline was used
    assert f"same-job A/B: {base_sha[:12]}'s agent (3 runs/task) vs this PR" in body
    # the cost shown is both arms' spend
    pr = load_results(ci / "results.json")
    base = load_results(ci / "results.base.json")
    total = (pr.summary.spend_usd or 0) + (base.summary.spend_usd or 0)
    assert f"cost ${total:.4f} total" in line and total > 0
    assert base.commit == base_sha and base.schedule and base.schedule.arm == BASE
    assert pr.schedule and pr.schedule.arm == PR
    assert {r.arm for r in base.runs} == {BASE} and {r.arm for r in pr.runs} == {PR}
    assert len(base.runs) == len(pr.runs) == 9
    assert "judged by a same-job A/B against main" in run.stderr
    assert "alpha #0 [base] (" in run.stderr and "alpha #0 [pr] (" in run.stderr
    run.no_secrets(fresh.gh)


@pytest.mark.slow
def test_a_pr_that_breaks_the_agent_is_blocked_by_the_ab(fresh: Project) -> None:
    """The base arm is the base commit's [agent] (max_turns = 10), the PR arm the PR's (1):
    the simulator's agent cannot finish in one turn, so the PR regresses against its base."""
    ci = fresh.pr_branch("fewer-turns", lambda w: set_max_turns(w, 1))
    run = fresh.gate_ci(ci, "--sim", env={"ANTHROPIC_API_KEY": ""})
    assert run.code == 1, run.stderr
    assert run.outputs["verdict"] == "regression"
    (comment,) = _marker_comments(fresh.gh)
    assert "same-job A/B against" in comment["body"]
    base = load_results(ci / "results.base.json")
    pr = load_results(ci / "results.json")
    assert (base.summary.pass_rate or 0) >= 0.8 and pr.summary.pass_rate == 0.0
    assert base.agent.fingerprint != pr.agent.fingerprint

    # the pair is re-judged from the stored files (the run's artifact): no suite run; a
    # maintainer's accept label applies as on any verdict
    stored = fresh.tmp / "artifact"
    stored.mkdir()
    for name in ("results.json", "results.base.json"):
        shutil.copy(ci / name, stored / name)
    (ci / "results.json").unlink()
    fresh.gh.collaborators["alice"] = "maintain"
    fresh.gh.label(PR_NUMBER, "gate:accept-regression", by="alice")
    again = fresh.gate_ci(ci, "--rejudge", str(stored / "results.json"), "--sim",
                          env={"ANTHROPIC_API_KEY": ""})
    assert again.code == 0, again.stderr
    assert again.outputs["verdict"] == "regression" and again.outputs["accepted"] == "true"
    assert again.outputs["headline"] == run.outputs["headline"]
    assert not (ci / "results.json").exists()  # nothing ran
    (comment,) = _marker_comments(fresh.gh)
    assert "same-job A/B against" in comment["body"]
    assert "Re-judged on demand from stored results (`results.json`)" in comment["body"]


@pytest.mark.slow
def test_a_system_prompt_the_base_does_not_have_is_the_prs_arm_only(fresh: Project) -> None:
    """The files [agent] names come from each arm's own commit: the PR's prompt file (absent
    on the base) makes only the PR's arm spend more, and blocks it on cost."""
    def prompt(work: Path) -> None:
        (work / "prompt.md").write_text("Think out loud about every step first. " * 1500)
        toml = (work / "gate.toml").read_text().replace(
            "max_turns = 10\n", 'max_turns = 10\nsystem_prompt = "prompt.md"\n')
        (work / "gate.toml").write_text(toml)

    ci = fresh.pr_branch("prompt", prompt)
    run = fresh.gate_ci(ci, "--sim", env={"ANTHROPIC_API_KEY": ""})
    assert run.code == 1, run.stderr
    base = load_results(ci / "results.base.json")
    pr = load_results(ci / "results.json")
    assert "prompt" in pr.agent.parts and pr.agent.parts["prompt"] != base.agent.parts["prompt"]
    assert pr.summary.cost_usd > 1.3 * base.summary.cost_usd
    assert run.outputs["verdict"] == "regression"


@pytest.mark.slow
def test_the_setting_forces_the_ab_even_with_a_baseline(tmp_path: Path) -> None:
    for project in ab_project(tmp_path, baseline=True, ci='judge = "ab"'):
        ci = project.pr_branch("roomier", touch_agent)
        run = project.gate_ci(ci, "--sim", env={"ANTHROPIC_API_KEY": ""})
        assert run.code == 0, run.stderr
        body = _marker_comments(project.gh)[0]["body"]
        assert '`[ci] judge = "ab"` on `main`' in _ab_line(body)
        assert "Baseline from" not in body
        assert (ci / "results.base.json").is_file()


@pytest.mark.slow
def test_judge_baseline_without_one_is_still_exit_3(tmp_path: Path) -> None:
    for project in ab_project(tmp_path, ci='judge = "baseline"'):
        ci = project.pr_branch("docs", _readme)
        run = project.gate_ci(ci, "--sim", env={"ANTHROPIC_API_KEY": ""})
        assert run.code == 3, run.stderr
        assert "no baseline.json on the base branch main" in run.stderr
        assert not (ci / "results.base.json").exists()


@pytest.mark.slow
def test_a_pr_that_adds_the_gate_is_told_the_first_baseline_comes_from_main(
        tmp_path: Path) -> None:
    seed = tmp_path / "seed"
    seed.mkdir()
    sh(seed, "git", "init", "-q", "-b", "main")
    (seed / "README.md").write_text("# a project without the gate\n")
    origin = _origin(tmp_path, seed)
    with FakeGitHub(REPO, token=TOKEN) as gh:
        project = Project(tmp_path, origin, gh)
        ci = project.pr_branch("adopt", write_sim_suite)
        run = project.gate_ci(ci, "--sim", env={"ANTHROPIC_API_KEY": ""})
    assert run.code == 3, run.stderr
    assert ("gate.toml does not exist on the base branch main: this pull request adds the "
            "gate") in run.stderr
    assert "the refresh on a push to main writes the first baseline" in run.stderr
    assert "Traceback" not in run.stderr
    (comment,) = _marker_comments(gh)
    assert "this pull request adds the gate" in comment["body"]


def _gate(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return gate(*args, cwd=cwd, base=user_env())


@pytest.mark.slow
def test_gate_run_ab_interleaves_the_arms_run_by_run(tmp_path: Path) -> None:
    """`gate run --ab REF`: one plan, the two arms alternating ABBA in the order the runs
    started (one at a time here, so start order is plan order); `gate compare` judges the
    two files it writes."""
    repo = tmp_path / "repo"
    repo.mkdir()
    sh(repo, "git", "init", "-q", "-b", "main")
    write_sim_suite(repo)
    sh(repo, "git", "add", "-A")
    sh(repo, "git", "commit", "-q", "-m", "suite")
    set_max_turns(repo, 1)  # the working tree's agent: one turn
    p = _gate(repo, "run", "--sim", "--ab", "main", "--jobs", "1", "-k", "2")
    assert p.returncode == 0, p.stderr
    base = load_results(repo / "results.base.json")
    pr = load_results(repo / "results.json")
    runs = sorted([*base.runs, *pr.runs], key=lambda r: r.started_at or "")
    assert all(r.started_at for r in runs) and len(runs) == 12
    arms = [r.arm for r in runs]
    pairs = [tuple(arms[i:i + 2]) for i in range(0, 12, 2)]
    assert pairs == [(BASE, PR), (PR, BASE)] * 3  # ABBA: neither arm always first
    keys = [(r.task, r.replication) for r in runs]
    assert all(keys[i] == keys[i + 1] for i in range(0, 12, 2))  # each pair: one task-rep
    assert "Judged by a same-job A/B against" in p.stdout
    for arm in (base, pr):  # each arm's shared prefix counted (issue 39, item 3)
        record = (arm.model_extra or {})["cache_prefix"]
        assert record["tokens"] > 0 and record["minimum"] > 0, record
    assert "gate compare results.base.json results.json" in p.stdout.replace(
        str(repo) + "/", "")
    # transcripts and simulator draws are per arm: the run names carry the arm
    assert (repo / "results.base.transcripts").is_dir() and (repo / "results.transcripts").is_dir()
    compared = _gate(repo, "compare", "results.base.json", "results.json")
    assert compared.returncode == 1, compared.stdout + compared.stderr
    assert "Regression" in compared.stdout or "regression" in compared.stdout


def test_ab_plan_is_abba_per_task_and_replication(tmp_path: Path) -> None:
    for word in ("a", "b", "c"):
        d = tmp_path / word
        d.mkdir()
        (d / "task.md").write_text("x\n")
        (d / "verify.sh").write_text("true\n")
    tasks = list(load_suite(tmp_path).tasks)
    base, pr = (Arm(n, None, RunOptions(arm=n)) for n in (BASE, PR))  # type: ignore[arg-type]
    plan = ab_plan(tasks, 2, base, pr)
    assert [(t.id, r, a.name) for t, r, a in plan][:8] == [
        ("a", 0, BASE), ("a", 0, PR), ("b", 0, PR), ("b", 0, BASE),
        ("c", 0, BASE), ("c", 0, PR), ("a", 1, PR), ("a", 1, BASE)]
    assert len(plan) == 12
    assert sum(1 for *_, a in plan if a is base) == 6


@pytest.mark.slow
def test_gate_run_ab_refuses_resume_and_a_budget(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    sh(repo, "git", "init", "-q", "-b", "main")
    write_sim_suite(repo)
    sh(repo, "git", "add", "-A")
    sh(repo, "git", "commit", "-q", "-m", "suite")
    for extra, said in ((("--resume",), "--resume: a same-job A/B is not journaled"),
                        (("--max-cost", "1"), "--max-cost and --shard do not apply")):
        p = _gate(repo, "run", "--sim", "--ab", "main", *extra)
        assert p.returncode == 2, p.stderr
        assert said in p.stderr and "Traceback" not in p.stderr


@pytest.mark.slow
def test_gate_merge_refuses_two_arms(tmp_path: Path) -> None:
    """The arm is part of a file's schedule: the two arms of an A/B are never one run."""
    repo = tmp_path / "repo"
    repo.mkdir()
    sh(repo, "git", "init", "-q", "-b", "main")
    write_sim_suite(repo)
    for arm in (BASE, PR):
        data = {"schema_version": 1, "gate_version": "0", "created_at": "2026-12-01T00:00:00Z",
                "commit": None, "model": "m", "agent": {"kind": "oracle", "fingerprint": "f"},
                "suite": {"digest": "d", "tasks": {"alpha": {"digest": "a"}}},
                "runs": [], "summary": {"passed": 0, "failed": 0, "errors": 0, "total": 0,
                                        "pass_rate": None, "mean_turns": None, "cost_usd": 0,
                                        "cache_hit_rate": None},
                "schedule": {"replications": 1, "arm": arm, "shard": f"{1 + (arm == PR)}/2"},
                "shard": {"index": 1 + (arm == PR), "count": 2, "tasks": ["alpha"]}}
        (repo / f"{arm}.json").write_text(json.dumps(data))
    p = _gate(repo, "merge", "out.json", "base.json", "pr.json")
    assert p.returncode == 2, p.stdout + p.stderr
    assert "schedule" in p.stderr and not (repo / "out.json").exists()


@pytest.mark.slow
def test_gate_init_then_a_first_pr_is_judged_by_a_same_job_ab(tmp_path: Path) -> None:
    """Adoption: `gate init` in an empty repository, pushed without a baseline; the first PR
    is judged by a same-job A/B on the simulator, not failed for want of a baseline."""
    seed = tmp_path / "seed"
    seed.mkdir()
    sh(seed, "git", "init", "-q", "-b", "main")
    init = _gate(seed, "init")
    assert init.returncode == 0, init.stderr
    assert "same-job A/B" in init.stdout
    origin = _origin(tmp_path, seed)
    with FakeGitHub(REPO, token=TOKEN) as gh:
        project = Project(tmp_path, origin, gh)
        ci = project.pr_branch("first", _readme)
        run = project.gate_ci(ci, "--sim", env={"ANTHROPIC_API_KEY": ""})
    assert run.code == 0, run.stdout + run.stderr
    # one task: turns or cost past a margin by noise reads "unclear" (exit 0), never a block
    assert run.outputs["verdict"] == "pass" or str(run.outputs["headline"]).startswith(
        "Unclear: "), run.outputs
    # the scaffold comments on a change only (comment_mode = "on-change"): the summary says it
    assert "Judged by a same-job A/B against" in run.summary
    assert "no baseline for `main` anywhere" in run.summary
    assert load_results(ci / "results.base.json").schedule.arm == BASE  # type: ignore[union-attr]
