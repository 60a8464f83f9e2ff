"""``gate ci``'s HTML report and the action's comment that links to its artifact.

The real CLI against the fake GitHub (tests/ci/test_ci.py's project): a judged run writes the
report beside its results and says what to upload; a report that cannot be written is a
warning and the verdict stands; with ``--defer-comment`` the final comment waits in a file
for ``--post-comment``, which posts it with a link to the uploaded artifact on the run's
server (GHES too), and corrects a "running" comment whose gate step died without a verdict.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.helpers.ci import (
    API_KEY,
    REPO,
    TOKEN,
    Project,
    _break_agent,
    _marker_comments,
    gate_in_process,
    sh,
)

pytestmark = pytest.mark.slow

DATA_OPEN = '<script type="application/json" id="gate-data">'


def parse_report(path: Path) -> tuple[str, list[str]]:
    """The page's verdict heading and its task table's tasks (from the page's data block)."""
    page = path.read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>") or page.lstrip().lower().startswith("<!doctype")
    heading = page[page.index("<h1>") + 4:page.index("</h1>")]
    start = page.index(DATA_OPEN) + len(DATA_OPEN)
    data = json.loads(page[start:page.index("</script>", start)])
    return heading, [t["task"] for t in data["tasks"]]


def uploaded(files: str) -> list[Path]:
    """Every file the upload step's `path:` list takes (directories whole)."""
    out: list[Path] = []
    for line in filter(None, files.splitlines()):
        p = Path(line)
        out += sorted(f for f in p.rglob("*") if f.is_file()) if p.is_dir() else [p]
    return out


def test_a_judged_pr_run_writes_the_html_report_and_lists_what_to_upload(
        project: Project) -> None:
    ci = project.pr_branch("feature", _break_agent)
    run = project.gate_ci(ci)
    assert run.code == 1, run.stderr
    html = Path(run.outputs["html_report_path"])
    assert html == (ci / "gate-report.html").resolve()
    heading, tasks = parse_report(html)
    assert heading == "agent-gate: Regression"
    assert sorted(tasks) == ["alpha", "beta", "gamma"]
    assert run.outputs["report_artifact"] == "agent-gate-report"
    files = run.outputs["report_files"].splitlines()
    assert files[:2] == [str(html), run.outputs["report_path"]]
    assert run.outputs["results_path"] in files
    transcripts = ci / "results.transcripts"
    assert transcripts.is_dir() and str(transcripts.resolve()) in files
    # nothing secret in anything the action uploads
    contents = [f.read_bytes() for f in uploaded(run.outputs["report_files"])]
    # html, md, results, a transcript per run (2 per task: the sequential first look blocks)
    assert len(contents) >= 3 + 6
    assert not any(TOKEN.encode() in c or API_KEY.encode() in c for c in contents)
    # without the action's deferral the comment is posted by this step, with no link
    (comment,) = _marker_comments(project.gh)
    assert "/artifacts/" not in comment["body"]
    assert "comment_pending" not in run.outputs


def test_mains_refresh_writes_the_html_report_against_the_baseline_it_replaces(
        project: Project) -> None:
    from tests.helpers.ci import refresh

    main = project.clone("main-ci")
    run = refresh(project, main, store="commit")
    assert run.code == 0, run.stderr
    assert run.outputs["refresh"] == "committed"
    html = Path(run.outputs["html_report_path"])
    assert html == (main / "gate-report.html").resolve()
    heading, tasks = parse_report(html)
    assert heading == "agent-gate: No regression"  # the self-check against the old baseline
    assert sorted(tasks) == ["alpha", "beta", "gamma"]
    assert run.outputs["report_artifact"] == "agent-gate-report"
    files = run.outputs["report_files"].splitlines()
    assert files[0] == str(html) and run.outputs["results_path"] in files
    contents = [f.read_bytes() for f in uploaded(run.outputs["report_files"])]
    assert not any(TOKEN.encode() in c or API_KEY.encode() in c for c in contents)


def test_a_report_that_cannot_be_written_leaves_the_verdict_and_the_comment(
        project: Project) -> None:
    ci = project.pr_branch("feature", _break_agent)
    (ci / "gate-report.html").mkdir()  # the report's path is taken: it cannot be written
    run = project.gate_ci(ci)
    assert run.code == 1, run.stderr
    assert run.outputs["verdict"] == "regression" and run.outputs["exit_code"] == "1"
    assert "::warning title=agent-gate::the HTML report was not written (the verdict " \
        "stands)" in run.stdout
    assert "html_report_path" not in run.outputs and "report_artifact" not in run.outputs
    (comment,) = _marker_comments(project.gh)
    assert "Regression" in comment["body"] or "regression" in comment["body"]
    assert Path(run.outputs["report_path"]).read_text().strip() in comment["body"]


def _post(project: Project, checkout: Path, pending: str, artifact_id: str,
          server: str = "https://github.example") -> subprocess.CompletedProcess[str]:
    env, out, _ = project.ci_env(checkout, env={
        "GITHUB_SERVER_URL": server, "GATE_POST_COMMENT": pending,
        "GATE_ARTIFACT_ID": artifact_id, "ANTHROPIC_API_KEY": ""})
    empty = checkout.parent / "post-cwd"
    empty.mkdir(exist_ok=True)
    code, stdout, stderr = gate_in_process(["ci"], empty, env)
    stdout += "\n" + (out.read_text() if out.exists() else "")
    return subprocess.CompletedProcess(["gate", "ci"], code, stdout, stderr)


@pytest.mark.parametrize("server", ["https://github.example", "https://ghes.corp.example"])
def test_the_deferred_comment_links_to_the_uploaded_artifact(project: Project,
                                                             server: str) -> None:
    ci = project.pr_branch("feature", _break_agent)
    run = project.gate_ci(ci, "--defer-comment", env={"GITHUB_SERVER_URL": server,
                                                      "RUNNER_TEMP": str(project.tmp)})
    assert run.code == 1, run.stderr
    pending = run.outputs["comment_pending"]
    assert Path(pending).parent == project.tmp  # under RUNNER_TEMP, not in the workspace
    # the gate step posted "running" and left the verdict for the posting step
    (comment,) = _marker_comments(project.gh)
    assert "running for" in comment["body"]
    assert "comment_url" not in run.outputs

    post = _post(project, ci, pending, "31337", server)
    assert post.returncode == 0, post.stderr
    (comment,) = _marker_comments(project.gh)
    link = f"{server}/{REPO}/actions/runs/4242/artifacts/31337"
    assert f"[The full report]({link})" in comment["body"]
    assert "agent-gate-report" in comment["body"] and "gate-report.html" in comment["body"]
    # the report as the gate step wrote it, with the report's link put on its first screen
    body = comment["body"]
    first = body[:body.index("<details>")]  # the first screen: the report, the run, the command
    assert (f"\n📎 [Report]({link}) · [CI run]({server}/{REPO}/actions/runs/4242)"
            " · locally: `gate compare --base-ref origin/main results.json`\n") in first
    assert Path(run.outputs["report_path"]).read_text().strip() in comment["body"].replace(
        f"[Report]({link}) · ", "")
    assert "comment_url<<" in post.stdout and comment["html_url"] in post.stdout
    assert TOKEN not in post.stdout.replace(f"::add-mask::{TOKEN}", "") + post.stderr


def test_no_upload_no_link(project: Project) -> None:
    """The upload failed or was skipped (no artifact id): the verdict is posted, linking to
    nothing that does not exist."""
    ci = project.pr_branch("feature", _break_agent)
    run = project.gate_ci(ci, "--defer-comment", env={"RUNNER_TEMP": str(project.tmp)})
    assert run.code == 1, run.stderr
    post = _post(project, ci, run.outputs["comment_pending"], "")
    assert post.returncode == 0, post.stderr
    (comment,) = _marker_comments(project.gh)
    assert "/artifacts/" not in comment["body"] and "The full report" not in comment["body"]
    assert Path(run.outputs["report_path"]).read_text().strip() in comment["body"]
    bad = _post(project, ci, run.outputs["comment_pending"], "../../x")
    assert bad.returncode == 0 and "/artifacts/" not in _marker_comments(project.gh)[0]["body"]


def test_a_gate_step_killed_mid_suite_does_not_leave_the_comment_running(
        project: Project) -> None:
    ci = project.pr_branch("slow", lambda w: (w / "agent" / "solve.sh").write_text(
        "sleep 120\n"))
    env, _, _ = project.ci_env(ci, env={"RUNNER_TEMP": str(project.tmp)})
    proc = subprocess.Popen([sys.executable, "-m", "gate", "ci", "--defer-comment"], cwd=ci,
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while not (_marker_comments(project.gh)
                   and "running for" in _marker_comments(project.gh)[0]["body"]):
            assert time.monotonic() < deadline and proc.poll() is None, proc.communicate()
            time.sleep(0.2)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # no handler runs: a crash, an OOM kill
        proc.communicate()
    (pending,) = project.tmp.glob("agent-gate-comment-*.json")
    post = _post(project, ci, str(pending), "")
    assert post.returncode == 0, post.stderr
    (comment,) = _marker_comments(project.gh)
    assert "running for" not in comment["body"]
    assert "stopped before it reached a verdict" in comment["body"]
    assert f"https://github.example/{REPO}/actions/runs/4242" in comment["body"]


def test_a_failed_gate_step_leaves_its_failure_for_the_posting_step(project: Project) -> None:
    seed = project.tmp / "seed"
    with (seed / "gate.toml").open("a") as fh:
        fh.write('\n[ci]\njudge = "baseline"\n')
    sh(seed, "git", "rm", "-q", "baseline.json")
    sh(seed, "git", "commit", "-q", "-am", "drop baseline")
    sh(seed, "git", "push", "-q", "origin", "main")
    ci = project.pr_branch("feature", lambda w: (w / "README.md").write_text("x\n"))
    run = project.gate_ci(ci, "--defer-comment", env={"RUNNER_TEMP": str(project.tmp)})
    assert run.code == 3, run.stderr
    assert _marker_comments(project.gh) and \
        "unmeasurable" not in _marker_comments(project.gh)[0]["body"]  # not posted yet
    post = _post(project, ci, run.outputs["comment_pending"], "")
    assert post.returncode == 0, post.stderr
    (comment,) = _marker_comments(project.gh)
    assert "unmeasurable" in comment["body"] and "running for" not in comment["body"]
    assert "no baseline.json on the base branch main" in comment["body"]


def test_a_same_job_ab_report_shows_the_base_arms_own_transcripts(project: Project) -> None:
    """No baseline anywhere: the PR is judged by a same-job A/B, and the report (and the
    artifact) carries the base arm's results and transcripts beside the PR's."""
    seed = project.tmp / "seed"
    sh(seed, "git", "rm", "-q", "baseline.json")
    sh(seed, "git", "commit", "-q", "-m", "no baseline yet")
    sh(seed, "git", "push", "-q", "origin", "main")
    ci = project.pr_branch("feature", lambda w: (w / "README.md").write_text("x\n"))
    run = project.gate_ci(ci)
    assert run.code == 0 and run.outputs["verdict"] == "pass", run.stderr
    files = run.outputs["report_files"].splitlines()
    base = (ci / "results.base.json").resolve()
    assert str(base) in files and str(ci.resolve() / "results.base.transcripts") in files
    page = Path(run.outputs["html_report_path"]).read_text()
    assert page.count('<div class="col"><h4>baseline</h4>') == 3  # one per task
    assert "transcript not available" not in page and "no transcript recorded" not in page
