"""A task of the base branch that cannot load, through ``gate ci`` (issue 39, item 4).

On a PR the tasks are the base branch's and no PR can fix them: the run goes on without the
broken task, which is listed as broken (never "removed"), counts as not compared against
``min_comparable`` and is named in the headline of the comment, the step summary and the HTML
report. Main's refresh is where a broken task gets fixed: it exits 2 naming it, unless
``--skip-broken`` (the action's ``skip-broken``) runs the rest on purpose.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.helpers.ci import Project, _marker_comments, gate_in_process, refresh, sh

pytestmark = pytest.mark.slow


def _break_gamma_on_main(project: Project) -> None:
    """A commit on main that leaves the task ``gamma`` without its verifier."""
    work = project.clone("breaker")
    (work / "tasks" / "gamma" / "verify.sh").unlink()
    sh(work, "git", "commit", "-q", "-am", "gamma loses its verify.sh")
    sh(work, "git", "push", "-q", "origin", "main")


def test_a_pr_names_the_base_branchs_broken_task_in_its_headline(project: Project) -> None:
    _break_gamma_on_main(project)
    ci = project.pr_branch("docs", lambda w: (w / "README.md").write_text("# agent\n"))
    run = project.gate_ci(ci)
    # 2 of 3 baseline tasks compared < min_comparable (80 %): inconclusive, never a pass
    assert run.code == 3, run.stderr
    assert run.outputs["verdict"] == "inconclusive"
    (comment,) = _marker_comments(project.gh)
    body = comment["body"]
    headline = next(ln for ln in body.splitlines() if ln.startswith("**"))
    assert "gamma" in headline and "broken" in headline, body
    assert "1 task broken, not run: gamma (missing verify.sh)" in body
    assert "⛔ broken: not run, not compared" in body
    assert "removed" not in body
    # the PR did not break it: no "this PR changes what measures it" line about it
    assert "cannot load in this PR" not in body
    assert "gamma (missing verify.sh)" in run.summary
    results = json.loads(Path(run.outputs["results_path"]).read_text())
    assert results["problems"] == {"gamma": "missing verify.sh"}
    html = (ci / "gate-report.html").read_text()
    assert "1 task broken, not run: gamma (missing verify.sh)" in html
    run.no_secrets(project.gh)


def test_mains_refresh_refuses_a_broken_task_unless_told_to_skip_it(project: Project) -> None:
    _break_gamma_on_main(project)
    main = project.clone("main-ci")
    before = (main / "baseline.json").read_text()
    run = refresh(project, main)
    assert run.code == 2, run.stdout + run.stderr
    assert "task gamma cannot load: missing verify.sh" in run.stderr
    assert "--skip-broken" in run.stderr
    assert (main / "baseline.json").read_text() == before  # nothing pooled

    run = refresh(project, main, "--skip-broken")
    assert run.code == 0, run.stdout + run.stderr
    assert json.loads((main / "results.json").read_text())["problems"] == {
        "gamma": "missing verify.sh"}


def test_locally_base_ref_runs_around_the_broken_task_as_ci_does(project: Project) -> None:
    """`gate run --base-ref` measures with the base's tasks, as a PR's run does: the broken
    one is run around (no flag needed), and `gate compare --base-ref` says what `gate ci`
    says."""
    _break_gamma_on_main(project)
    ci = project.pr_branch("local", lambda w: (w / "README.md").write_text("# agent\n"))
    env = {**{k: v for k, v in os.environ.items()
              if not k.startswith(("GITHUB_", "GATE_", "ANTHROPIC_"))},
           "AGENT_HELPER": str(ci / "agent" / "solve.sh")}
    code, _, err = gate_in_process(["run", "--base-ref", "origin/main", "-o", "local.json"],
                                   ci, env)
    assert code == 0, err
    assert "task gamma not run: missing verify.sh" in err
    code, out, err = gate_in_process(["compare", "--base-ref", "origin/main", "local.json"],
                                     ci, env)
    assert code == 3, out + err
    assert "1 task broken, not run: gamma (missing verify.sh)" in out.splitlines()[0]
    assert project.gate_ci(ci).code == code
