"""Re-judge on demand: ``gate ci --rejudge RESULTS`` judges a finished run's stored results (the
run's artifact) against the base branch's baseline, without running the suite again — after the
accept label, or from a ``workflow_dispatch`` on the PR's branch."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.helpers.ci import (
    OURS,
    PR,
    REPO,
    Project,
    _break_agent,
    sh,
)

pytestmark = pytest.mark.slow


def _tripwire(checkout: Path, ran: Path) -> None:
    """From now on, any run of the agent leaves ``ran`` behind."""
    (checkout / "agent" / "solve.sh").write_text(f'touch "{ran}"\necho nope > out.txt\n')


def test_the_accept_label_rejudges_the_stored_results(project: Project) -> None:
    gh = project.gh
    gh.collaborators["alice"] = "maintain"
    ci = project.pr_branch("feature", _break_agent)
    first = project.gate_ci(ci)
    assert first.code == 1, first.stderr
    stored = project.tmp / "artifact" / "results.json"  # what download-artifact leaves
    stored.parent.mkdir()
    shutil.copy(ci / "results.json", stored)
    ran = project.tmp / "agent-ran"
    _tripwire(ci, ran)

    gh.label(PR, "gate:accept-regression", by="alice")
    again = project.gate_ci(ci, "--rejudge", str(stored))
    assert again.code == 0, again.stderr
    assert not ran.exists()  # no suite run
    assert again.outputs["verdict"] == "regression" and again.outputs["accepted"] == "true"
    assert again.outputs["results_path"] == str(stored)
    assert again.outputs["headline"] == first.outputs["headline"]
    (comment,) = [c for c in gh.comments[PR] if c["body"].startswith(OURS)]
    assert "Re-judged on demand from stored results (`results.json`)" in comment["body"]
    assert "**Regression accepted** by **alice**" in comment["body"]
    assert not any("running for" in r.body["body"] for r in gh.calls("PATCH")[1:])


def test_a_dispatch_on_the_branch_rejudges_and_updates_its_pr(project: Project) -> None:
    gh = project.gh
    ci = project.pr_branch("feature", _break_agent)
    first = project.gate_ci(ci)
    assert first.code == 1, first.stderr
    ran = project.tmp / "agent-ran"
    _tripwire(ci, ran)
    head = sh(ci, "git", "rev-parse", "HEAD").strip()
    gh.pulls = [{"number": PR, "head": {"sha": head}, "_head": "acme:feature"}]
    event = project.tmp / "dispatch.json"
    event.write_text(json.dumps({"inputs": {"rejudge": "true"},
                                 "repository": {"full_name": REPO, "default_branch": "main"}}))
    run = project.gate_ci(ci, event="workflow_dispatch", event_path=event,
                          ref="refs/heads/feature",
                          env={"GITHUB_SHA": head, "GATE_REJUDGE": "true"})
    assert run.code == 1, run.stderr
    assert not ran.exists()
    assert run.outputs["mode"] == "check" and run.outputs["verdict"] == "regression"
    assert run.outputs["pr_number"] == str(PR)
    (comment,) = [c for c in gh.comments[PR] if c["body"].startswith(OURS)]
    assert run.outputs["comment_id"] == str(comment["id"]) == first.outputs["comment_id"]
    assert "Re-judged on demand" in comment["body"]


def test_rejudge_refuses_what_it_cannot_judge(project: Project) -> None:
    ci = project.pr_branch("feature", _break_agent)
    missing = project.gate_ci(ci, "--rejudge", "nowhere.json")
    assert missing.code == 2 and "nowhere.json: no results to re-judge" in missing.stderr
    stopped = json.loads((ci / "baseline.json").read_text())  # a finished run's file, then
    stopped["interrupted"] = {"reason": "interrupted: Ctrl-C or SIGTERM",  # one that stopped
                              "missing": [{"task": "alpha", "replication": 3}]}
    (ci / "stopped.json").write_text(json.dumps(stopped))
    partial = project.gate_ci(ci, "--rejudge", "stopped.json")
    assert partial.code == 3 and "an incomplete run is not judged" in partial.stderr
    main = project.clone("main-rejudge")
    push = project.tmp / "push.json"
    push.write_text(json.dumps({"repository": {"full_name": REPO, "default_branch": "main"}}))
    refused = project.gate_ci(main, "--rejudge", "true", event="push", event_path=push,
                              ref="refs/heads/main")
    assert refused.code == 2 and "not mode main" in refused.stderr
    assert "Traceback" not in missing.stderr + partial.stderr + refused.stderr
