"""This suite's PR comment through the real ``gate ci`` against the fake GitHub: one comment per
suite (the comment id in the marker), the comment modes, the "running" state a run starts with,
and the "cancelled" state a stopped run leaves."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gate.github import MARKER, MARKER_PREFIX, marker
from tests.helpers.ci import (
    GOOD_HELPER,
    OURS,
    PR,
    Project,
    _break_agent,
    ci_run,
    make_baseline,
    sh,
)
from tests.helpers.fake_github import FakeGitHub

pytestmark = pytest.mark.slow


HEAD = "0" * 7  # the short head SHA of the test's pull_request event


def _ours(gh: FakeGitHub) -> list[dict]:
    return [c for c in gh.comments.get(PR, []) if c["body"].startswith(MARKER_PREFIX)
            and c["user"]["login"] == "github-actions[bot]"]


def _by_marker(gh: FakeGitHub) -> dict[str, dict]:
    return {c["body"].split("\n", 1)[0]: c for c in _ours(gh)}


def _patched(gh: FakeGitHub, comment: dict) -> list[str]:
    """The bodies ``comment`` was edited to, in order."""
    return [r.body["body"] for r in gh.calls("PATCH", f"/issues/comments/{comment['id']}$")]


def _harmless(work: Path) -> None:
    (work / "README.md").write_text("# agent\n")


# ----- one comment per suite ----------------------------------------------------------------

def test_two_suites_keep_two_comments_each_updated_in_place(project: Project) -> None:
    """Two configs in one repository (and a matrix entry naming its own id) each keep their
    own comment; the default config's suite adopts the comment an older gate left with the
    id-less marker, and nobody else's."""
    gh = project.gh
    main = project.clone("main-two-suites")
    (main / "fast.toml").write_text((main / "gate.toml").read_text())
    sh(main, "git", "add", "fast.toml")
    sh(main, "git", "commit", "-q", "-m", "a second suite")
    sh(main, "git", "push", "-q", "origin", "main")
    legacy = gh.add_comment(PR, f"{MARKER}\nverdict of an older gate", user="github-actions[bot]")
    foreign = gh.add_comment(PR, f"{marker('fast.toml')}\nnot ours", user="mallory")
    ci = project.pr_branch("feature", _break_agent)

    for round_ in range(2):
        default = project.gate_ci(ci)
        fast = project.gate_ci(ci, "--config", "fast.toml")
        matrix = project.gate_ci(ci, env={"GATE_COMMENT_ID": "model-b"})
        for run in (default, fast, matrix):
            assert run.code == 1, run.stderr
        comments = _by_marker(gh)
        assert set(comments) == {OURS, marker("fast.toml"), marker("model-b")}, round_
        assert comments[OURS]["id"] == legacy["id"]  # migrated, not duplicated
        assert default.outputs["comment_id"] == str(legacy["id"])
        assert fast.outputs["comment_id"] == str(comments[marker("fast.toml")]["id"])
        assert matrix.outputs["comment_id"] == str(comments[marker("model-b")]["id"])
        assert len({default.outputs["comment_id"], fast.outputs["comment_id"],
                    matrix.outputs["comment_id"]}) == 3
        for c in comments.values():
            assert c["body"].count(MARKER_PREFIX) == 1 and "agent-gate: regression" in c["body"]
    # the second round created nothing: each suite edited its own comment
    assert len(gh.calls("POST", "/comments")) == 2  # fast.toml's and model-b's, once each
    assert len(gh.comments[PR]) == 4
    assert foreign["body"] == f"{marker('fast.toml')}\nnot ours"
    assert not gh.calls("PATCH", f"/issues/comments/{foreign['id']}$")


def test_a_bad_comment_id_is_one_clear_error(project: Project) -> None:
    ci = project.pr_branch("feature", _harmless)
    run = project.gate_ci(ci, env={"GATE_COMMENT_ID": "x --><img src=x>"})
    assert run.code == 2 and "comment_id" in run.stderr and "Traceback" not in run.stderr
    assert not project.gh.calls("POST") and not project.gh.calls("PATCH")


# ----- comment modes ------------------------------------------------------------------------

def test_on_regression_creates_only_for_a_regression_then_keeps_it_current(
        project: Project) -> None:
    gh = project.gh
    mode = {"GATE_COMMENT_MODE": "on-regression"}
    harmless = project.pr_branch("docs", _harmless)
    quiet = project.gate_ci(harmless, env=mode)
    assert quiet.code == 0, quiet.stderr
    assert not _ours(gh) and not gh.calls("POST") and not gh.calls("PATCH")
    assert quiet.outputs["comment_url"] == "" and "comment-mode on-regression" in quiet.stderr

    broken = project.pr_branch("feature", _break_agent)
    loud = project.gate_ci(broken, env=mode)
    assert loud.code == 1, loud.stderr
    (comment,) = _ours(gh)
    assert "agent-gate: regression" in comment["body"]
    assert len(gh.calls("POST", "/comments")) == 1  # the verdict's; no "running" one first

    fixed = project.gate_ci(harmless, env=mode)  # the PR is fixed: the comment must follow
    assert fixed.code == 0, fixed.stderr
    (comment,) = _ours(gh)
    bodies = _patched(gh, comment)
    assert f"running for `{HEAD}`" in bodies[0]  # never a stale regression while it runs
    assert "agent-gate: no regression" in bodies[-1] and comment["body"].endswith(
        bodies[-1].split("\n", 1)[1])
    assert fixed.outputs["comment_id"] == str(comment["id"])


def test_on_change_also_creates_for_a_pass_that_changed_something(project: Project) -> None:
    """Main's agent fails every task (its baseline says so); a PR that fixes it passes with
    newly passing tasks: on-change comments, on-regression does not."""
    gh = project.gh
    main = project.clone("main-broken")
    _break_agent(main)
    make_baseline(main)
    sh(main, "git", "commit", "-q", "-am", "a broken agent, and its baseline")
    sh(main, "git", "push", "-q", "origin", "main")
    fix = project.pr_branch("fix", lambda w: (w / "agent" / "solve.sh").write_text(GOOD_HELPER))
    same = project.pr_branch("docs", _harmless)

    for ci, mode in ((same, "on-change"), (fix, "on-regression")):
        run = project.gate_ci(ci, env={"GATE_COMMENT_MODE": mode})
        assert run.code == 0 and run.outputs["verdict"] == "pass", run.stderr
        assert not _ours(gh), mode
    run = project.gate_ci(fix, env={"GATE_COMMENT_MODE": "on-change"})
    assert run.code == 0 and run.outputs["verdict"] == "pass", run.stderr
    (comment,) = _ours(gh)
    assert "newly passing" in comment["body"]


def test_never_touches_no_comment_and_no_comment_is_never(project: Project) -> None:
    gh = project.gh
    ci = project.pr_branch("feature", _break_agent)
    first = project.gate_ci(ci)  # always (the default) creates it
    assert first.code == 1, first.stderr
    (comment,) = _ours(gh)
    body = comment["body"]
    writes = len(gh.calls("POST")) + len(gh.calls("PATCH"))
    for args, env in (((), {"GATE_COMMENT_MODE": "never"}), (("--no-comment",), {}),
                      ((), {"GATE_COMMENT": "false", "GATE_COMMENT_MODE": "always"})):
        run = project.gate_ci(ci, *args, env=env)
        assert run.code == 1, run.stderr
        assert run.outputs["comment_url"] == "" and run.outputs["verdict"] == "regression"
    assert len(gh.calls("POST")) + len(gh.calls("PATCH")) == writes
    assert comment["body"] == body


def test_always_shows_running_from_the_start(project: Project) -> None:
    gh = project.gh
    ci = project.pr_branch("docs", _harmless)
    run = project.gate_ci(ci, env={"GATE_COMMENT_MODE": "always"})
    assert run.code == 0, run.stderr
    (comment,) = _ours(gh)
    (post,) = gh.calls("POST", "/comments")
    assert f"### ⏳ agent-gate: running for `{HEAD}`…" in post.body["body"]
    assert post.body["body"].startswith(OURS)
    assert "agent-gate: no regression" in comment["body"]


# ----- a cancelled run ----------------------------------------------------------------------

@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_run_cancelled_during_the_suite_says_so(project: Project, sig: signal.Signals
                                                    ) -> None:
    """The runner cancels a job with SIGINT, then SIGTERM: the comment must not keep saying
    "running" (or show the previous verdict as current)."""
    gh = project.gh
    started = project.tmp / "suite-started"

    def slow_agent(work: Path) -> None:
        (work / "agent" / "solve.sh").write_text(
            f'touch "{started}"\nsleep 900\necho "$1" > out.txt\n')

    ci = project.pr_branch("slow", slow_agent)
    previous = gh.add_comment(PR, f"{OURS}\n### ✅ agent-gate: no regression\n\nold verdict",
                              user="github-actions[bot]")
    env, out, summary = project.ci_env(ci, env={"GATE_COMMENT_MODE": "on-regression"})
    proc = subprocess.Popen([sys.executable, "-m", "gate", "ci"], cwd=ci, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while not started.exists():
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "the suite never started"
            time.sleep(0.1)
        assert f"running for `{HEAD}`" in previous["body"]  # already, while the suite runs
        proc.send_signal(sig)
        stdout, stderr = proc.communicate(timeout=180)  # the runs sleep far longer
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    run = ci_run(proc.returncode, stdout, stderr, out, summary)
    assert run.code == 130, run.stderr
    assert "### ⏹️ agent-gate: cancelled" in previous["body"]
    assert f"The run for `{HEAD}` was cancelled" in previous["body"]
    assert "old verdict" not in previous["body"] and previous["body"].startswith(OURS)
    assert run.outputs["verdict"] == "cancelled"
    assert not gh.calls("POST")  # on-regression: only the existing comment was edited
    run.no_secrets(gh)
