"""`gate init`'s own two workflows, played as the runner plays them: each workflow's gate step
`with:` goes through action.yml's `env:` mapping into `gate ci`, against the GitHub stand-in,
in a repository that holds nothing but what `gate init` wrote.

Where the baselines live is the scaffold's gate.toml's alone (`[ci] baseline_refresh`), so the
pull requests read what main's refresh wrote: a regression is judged against the data branch's
baseline (never a same-job A/B), and a Dependabot bump of a pinned third-party action, which
gets no key, leaves the agent as measured and is skipped (exit 0), as the scaffold's
dependabot.yml promises. No model is reachable here: the refresh and the regressing PR add the
action's `sim: true` input (the stand-in for the repository secret); the Dependabot run is the
workflow exactly as written, with no key. After a PR's run, the third workflow (the trusted
`workflow_run` report job) publishes its report on the data branch that Pages serves and points
the PR job's comment at the page.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.helpers.action import _gate_step_env
from tests.helpers.ci import PR, REPO, TOKEN, CIRun, Project, push_event, sh
from tests.helpers.fake_github import FakeGitHub
from tests.helpers.process import gate, user_env

pytestmark = pytest.mark.slow
SECRET = re.compile(r"\$\{\{\s*secrets\.ANTHROPIC_API_KEY\s*\}\}")


@pytest.fixture
def scaffold(tmp_path: Path) -> Iterator[Project]:
    """An empty repository after `gate init` (committed and pushed), and GitHub's stand-in."""
    seed = tmp_path / "seed"
    seed.mkdir()
    sh(seed, "git", "init", "-q", "-b", "main")
    p = gate("init", "--branch", "main", cwd=seed, base=user_env())
    assert p.returncode == 0, p.stderr
    (tmp_path / "init-output.txt").write_text(p.stdout)
    sh(seed, "git", "add", "-A")
    sh(seed, "git", "commit", "-q", "-m", "gate init")
    origin = tmp_path / "origin.git"
    sh(tmp_path, "git", "init", "-q", "--bare", "-b", "main", str(origin))
    sh(seed, "git", "remote", "add", "origin", f"file://{origin}")
    sh(seed, "git", "push", "-q", "origin", "main")
    with FakeGitHub(REPO, token=TOKEN) as gh:
        gh.origin = origin  # the contents API reads the repository's files
        yield Project(tmp_path, origin, gh)


def _workflow_inputs(checkout: Path, name: str, key: str, **extra: str) -> dict[str, str]:
    """The gate step's `with:` of the checkout's workflow ``name``, its one expression (the
    repository secret) expanded to ``key``, with ``extra`` inputs added."""
    wf: dict[str, Any] = yaml.safe_load((checkout / ".github" / "workflows" / name).read_text())
    (job,) = wf["jobs"].values()
    (step,) = [s for s in job["steps"] if s.get("id") == "gate"]
    inputs = {k: SECRET.sub(key, str(v)) for k, v in (step.get("with") or {}).items()}
    assert not any("${{" in v for v in inputs.values()), inputs
    return {**inputs, **extra}


def _play(project: Project, checkout: Path, workflow: str, inputs: dict[str, str],
          action: dict[str, Any], **kw: Any) -> CIRun:
    _, step_env, _ = _gate_step_env(action, inputs, TOKEN)
    env = {**step_env, **kw.pop("env", {})}
    return project.gate_ci(checkout, env=env, **kw)


def _post(project: Project, run: CIRun, action: dict[str, Any], artifact_id: str = "") -> None:
    """The action's last step, as it runs: `gate ci` from an empty directory, told the pending
    comment by the gate step's output (only when there is one, as its `if:` says), and the
    report artifact's id by the upload step's output."""
    (step,) = [s for s in action["runs"]["steps"] if s.get("id") == "post"]
    assert step["if"] == "!cancelled() && steps.gate.outputs.comment_pending != ''"
    if not run.outputs.get("comment_pending"):
        return
    empty = project.tmp / f"post-{len(project.gh.requests)}"
    empty.mkdir()
    posted = project.gate_ci(empty, env={"GATE_GITHUB_TOKEN": TOKEN,
                                         "GATE_ARTIFACT_ID": artifact_id,
                                         "GATE_POST_COMMENT": run.outputs["comment_pending"]})
    assert posted.code == 0, posted.stderr


def _report_job(project: Project, pr: Path, action: dict[str, Any]) -> CIRun:
    """The report workflow after the PR run of ``pr`` (the stand-in's run 4242): its download
    step as the artifact's contract has it (the PR run's report under RUNNER_TEMP, when it
    uploaded one), then its gate step in an empty directory (no checkout), origin reached as
    the server's URL (git's insteadOf stands in for the network)."""
    wf = yaml.safe_load((pr / ".github/workflows/agent-gate-report.yml").read_text())
    assert wf[True] == {"workflow_run": {"workflows": ["agent-gate"], "types": ["completed"]}}
    (job,) = wf["jobs"].values()
    download, step = job["steps"]
    assert download["uses"].startswith("actions/download-artifact@")
    assert download["with"]["run-id"] == "${{ github.event.workflow_run.id }}"
    assert step["if"] == "steps.download.outcome == 'success'"
    temp = project.tmp / f"runner-temp-{len(project.gh.requests)}"
    artifact = Path(download["with"]["path"].replace("${{ runner.temp }}", str(temp)))
    artifact.mkdir(parents=True)
    for name in ("gate-report.md", "gate-report.html"):
        shutil.copy(pr / name, artifact / name)
    inputs = {k: str(v).replace("${{ runner.temp }}", str(temp)) for k, v in step["with"].items()}
    head = sh(pr, "git", "rev-parse", "HEAD").strip()
    branch = sh(pr, "git", "rev-parse", "--abbrev-ref", "HEAD").strip()
    project.gh.pulls = [{"number": PR, "head": {"sha": head}, "_head": f"acme:{branch}"}]
    event = temp / "workflow-run.json"
    event.write_text(json.dumps({
        "workflow_run": {"id": 4242, "event": "pull_request", "conclusion": "failure",
                         "head_sha": head, "head_branch": branch,
                         "head_repository": {"full_name": REPO}},
        "repository": {"full_name": REPO, "private": False, "visibility": "public"}}))
    work = temp / "work"
    work.mkdir()
    return _play(project, work, "agent-gate-report.yml", inputs, action, event="workflow_run",
                 event_path=event, ref="refs/heads/main", env={
                     "RUNNER_TEMP": str(temp), "GIT_CONFIG_COUNT": "1",
                     "GIT_CONFIG_KEY_0": f"url.file://{project.origin}.insteadOf",
                     "GIT_CONFIG_VALUE_0": f"https://github.example/{REPO}.git"})


def _regressing_pr(scaffold: Project, action: dict[str, Any]) -> tuple[Path, CIRun]:
    """A PR that collapses the example task (one turn), played through the PR workflow on the
    simulator: its checkout and its run, a regression (exit 1)."""
    def one_turn(work: Path) -> None:
        cfg = work / "gate.toml"
        cfg.write_text(re.sub(r"(?m)^max_turns = \d+", "max_turns = 1", cfg.read_text()))

    pr = scaffold.pr_branch("fewer-turns", one_turn)
    run = _play(scaffold, pr, "agent-gate.yml",
                _workflow_inputs(pr, "agent-gate.yml", "", sim="true"), action,
                env={"ANTHROPIC_API_KEY": ""})
    assert run.code == 1 and run.outputs["verdict"] == "regression", run.stderr
    return pr, run


def _bump_checkout(work: Path) -> None:
    """What the scaffold's dependabot.yml opens: a newer pin of actions/checkout."""
    for wf in (work / ".github" / "workflows").glob("*.yml"):
        text = wf.read_text()
        wf.write_text(re.sub(r"actions/checkout@[0-9a-f]{40}", "actions/checkout@" + "b" * 40,
                             text))


def test_the_scaffolds_pull_requests_read_the_baseline_its_refresh_writes(
        scaffold: Project, action: dict[str, Any]) -> None:
    pages = scaffold.gh.enable_pages()  # as gate init's next steps say
    main = scaffold.clone("main-ci")
    refresh = _play(scaffold, main, "agent-gate-main.yml",
                    _workflow_inputs(main, "agent-gate-main.yml", "", sim="true"), action,
                    event="push", event_path=push_event(main), ref="refs/heads/main",
                    env={"ANTHROPIC_API_KEY": ""})
    assert refresh.code == 0, refresh.stderr
    assert refresh.outputs["refresh"] == "committed", refresh.outputs
    # the run is uploaded once, by the action (its report artifact holds the results); the
    # scaffold's main workflow has no upload step of its own
    assert refresh.outputs["report_artifact"] == "agent-gate-report"
    assert str(main / "results.json") in refresh.outputs["report_files"].splitlines()
    steps = yaml.safe_load((main / ".github/workflows/agent-gate-main.yml").read_text())
    assert not any("upload-artifact" in str(s.get("uses", ""))
                   for job in steps["jobs"].values() for s in job["steps"])
    data = subprocess.run(["git", "--git-dir", str(scaffold.origin), "show",
                           "agent-gate-data:main/baseline.json"], capture_output=True, text=True)
    assert data.returncode == 0 and '"runs"' in data.stdout, data.stderr
    # the badge and main's report on the data branch, which Pages serves as gate init says
    published = subprocess.run(["git", "--git-dir", str(scaffold.origin), "ls-tree", "-r",
                                "--name-only", "agent-gate-data"], capture_output=True,
                               text=True).stdout.split()
    assert {"badge.svg", "reports/main/index.html", ".nojekyll"} <= set(published), published
    assert refresh.outputs["report_url"] == f"{pages}reports/main/"
    told = (scaffold.tmp / "init-output.txt").read_text()
    assert "Deploy from a branch → agent-gate-data, / (root)" in told
    assert "agent-gate-report.yml each pull request's at reports/pr-<number>/" in told
    assert "[![agent-gate](https://github.com/OWNER/REPO/raw/agent-gate-data/badge.svg)]" in told

    # a PR that collapses the example task: judged against the data branch's baseline
    pr, run = _regressing_pr(scaffold, action)
    _post(scaffold, run, action, artifact_id="31337")
    (comment,) = scaffold.gh.comments.get(PR, [])  # something to read: a comment
    assert "no baseline" not in run.summary and "same-job A/B" not in run.summary
    assert "agent-gate-data (main/)" in run.summary + run.stderr, run.summary
    posted = str(comment["body"])
    assert f"/{REPO}/actions/runs/4242/artifacts/31337)" in posted  # the artifact zip

    # the report workflow after it: the PR's report is published, the comment links the page
    report = _report_job(scaffold, pr, action)
    assert report.code == 0, report.stderr
    page = f"{pages}reports/pr-{PR}/"
    assert report.outputs["report_url"] == page
    (comment,) = scaffold.gh.comments[PR]  # the PR job's comment, edited
    linked = str(comment["body"])
    assert f"[The full report]({page})" in linked and "artifacts/" not in linked
    def others(body: str) -> list[str]:
        return [line for line in body.split("\n")
                if "[The full report](" not in line and not line.startswith("📎 [Report](")]

    assert others(linked) == others(posted)  # only the report's links changed
    assert f"📎 [Report]({page}) · " in linked  # on the first screen too
    published = sh(scaffold.tmp, "git", "--git-dir", str(scaffold.origin), "show",
                   f"agent-gate-data:reports/pr-{PR}/index.html")
    assert '<iframe sandbox="" ' in published and "<script" not in published  # wrapped
    publishes = sh(scaffold.tmp, "git", "--git-dir", str(scaffold.origin), "rev-list",
                   "--count", "agent-gate-data")
    report.no_secrets(scaffold.gh)
    # the job re-run (or a late one, after a newer push's run took the comment over): the
    # comment links no artifact of that run any more; it is left alone, nothing is published
    again = _report_job(scaffold, pr, action)
    assert again.code == 0 and "no comment of this suite linking run 4242's" in again.stderr
    assert scaffold.gh.comments[PR][0]["body"] == linked
    assert sh(scaffold.tmp, "git", "--git-dir", str(scaffold.origin), "rev-list", "--count",
              "agent-gate-data") == publishes

    # an agent change that moves nothing: a pass with nothing to read makes no comment (the
    # scaffold's comment_mode = "on-change"); the step summary has the verdict
    def same_behaviour(work: Path) -> None:
        cfg = work / "gate.toml"
        cfg.write_text(re.sub(r"(?m)^max_turns = \d+", "max_turns = 29", cfg.read_text()))

    quiet = scaffold.pr_branch("roomier", same_behaviour)
    scaffold.gh.comments.clear()
    run = _play(scaffold, quiet, "agent-gate.yml",
                _workflow_inputs(quiet, "agent-gate.yml", "", sim="true"), action,
                env={"ANTHROPIC_API_KEY": ""})
    assert run.code == 0 and run.outputs["verdict"] == "pass", run.stderr
    _post(scaffold, run, action)
    assert scaffold.gh.comments.get(PR, []) == [] and "No regression" in run.summary
    # no comment to point at the page: nothing is published (a page nobody links)
    report = _report_job(scaffold, quiet, action)
    assert report.code == 0, report.stderr
    assert "no comment of this suite linking run 4242's report" in report.stderr
    assert sh(scaffold.tmp, "git", "--git-dir", str(scaffold.origin), "rev-list", "--count",
              "agent-gate-data") == publishes and scaffold.gh.comments.get(PR, []) == []

    # a README edit in the repository itself, with the key: nothing under test changed, nothing
    # is run
    docs = scaffold.pr_branch("docs", lambda w: (w / "README.md").write_text("# agent\n"))
    run = _play(scaffold, docs, "agent-gate.yml",
                _workflow_inputs(docs, "agent-gate.yml", "", sim="true"), action,
                env={"ANTHROPIC_API_KEY": ""})
    assert run.code == 0 and run.outputs["verdict"] == "skipped", run.stderr
    assert "nothing was run" in run.summary and not (docs / "results.json").exists()

    # Dependabot bumps actions/checkout: no key, the workflow as written, nothing to measure
    bump = scaffold.pr_branch("dependabot/github_actions/actions/checkout-4.3", _bump_checkout)
    run = _play(scaffold, bump, "agent-gate.yml", _workflow_inputs(bump, "agent-gate.yml", ""),
                action, env={"GITHUB_ACTOR": "dependabot[bot]"})
    assert run.code == 0 and run.outputs["verdict"] == "skipped", run.stderr
    assert "Nothing under test changed" in run.summary, run.summary


def test_the_report_job_follows_the_default_branchs_ci_settings(
        scaffold: Project, action: dict[str, Any]) -> None:
    """The report workflow has no checkout: its [ci] settings are main's gate.toml, read
    through the API. A suite that names its own comment id and data branch there gets its PR's
    comment found and relinked, and its page published on its branch, which Pages serves."""
    pages = scaffold.gh.enable_pages("gate-pages")
    owner = scaffold.clone("main-settings")
    cfg = owner / "gate.toml"
    text = cfg.read_text().replace('# data_branch = "agent-gate-data"',
                                   'data_branch = "gate-pages"\ncomment_id = "agent"')
    assert 'data_branch = "gate-pages"' in text
    cfg.write_text(text)
    sh(owner, "git", "commit", "-q", "-am", "own comment id and data branch")
    sh(owner, "git", "push", "-q", "origin", "main")
    main = scaffold.clone("main-ci")
    refresh = _play(scaffold, main, "agent-gate-main.yml",
                    _workflow_inputs(main, "agent-gate-main.yml", "", sim="true"), action,
                    event="push", event_path=push_event(main), ref="refs/heads/main",
                    env={"ANTHROPIC_API_KEY": ""})
    assert refresh.code == 0 and refresh.outputs["refresh"] == "committed", refresh.stderr

    pr, run = _regressing_pr(scaffold, action)
    assert "gate-pages (main/)" in run.summary + run.stderr, run.stderr
    _post(scaffold, run, action, artifact_id="31337")
    (comment,) = scaffold.gh.comments[PR]
    assert "agent-gate:comment id=agent" in str(comment["body"])
    report = _report_job(scaffold, pr, action)
    assert report.code == 0, report.stderr
    page = f"{pages}reports/pr-{PR}-agent/"
    assert report.outputs["report_url"] == page, report.stderr
    (comment,) = scaffold.gh.comments[PR]
    assert f"[The full report]({page})" in str(comment["body"])
    published = sh(scaffold.tmp, "git", "--git-dir", str(scaffold.origin), "show",
                   f"gate-pages:reports/pr-{PR}-agent/index.html")
    assert '<iframe sandbox="" ' in published
    assert any(c.path.endswith("/contents/gate.toml") for c in scaffold.gh.requests)
