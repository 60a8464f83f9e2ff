"""`gate init`'s own two workflows, played as the runner plays them: each workflow's gate step
`with:` goes through action.yml's `env:` mapping into `gate ci`, against the GitHub stand-in,
in a repository that holds nothing but what `gate init` wrote.

Where the baselines live is the scaffold's gate.toml's alone (`[ci] baseline_refresh`), so the
pull requests read what main's refresh wrote: a regression is judged against the data branch's
baseline (never a same-job A/B), and a Dependabot bump of a pinned third-party action, which
gets no key, leaves the agent as measured and is skipped (exit 0), as the scaffold's
dependabot.yml promises. No model is reachable here: the refresh and the regressing PR add the
action's `sim: true` input (the stand-in for the repository secret); the Dependabot run is the
workflow exactly as written, with no key.
"""

from __future__ import annotations

import re
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


def _post(project: Project, run: CIRun, action: dict[str, Any]) -> None:
    """The action's last step, as it runs: `gate ci` from an empty directory, told the pending
    comment by the gate step's output (only when there is one, as its `if:` says)."""
    (step,) = [s for s in action["runs"]["steps"] if s.get("id") == "post"]
    assert step["if"] == "!cancelled() && steps.gate.outputs.comment_pending != ''"
    if not run.outputs.get("comment_pending"):
        return
    empty = project.tmp / f"post-{len(project.gh.requests)}"
    empty.mkdir()
    posted = project.gate_ci(empty, env={"GATE_GITHUB_TOKEN": TOKEN, "GATE_ARTIFACT_ID": "",
                                         "GATE_POST_COMMENT": run.outputs["comment_pending"]})
    assert posted.code == 0, posted.stderr


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
    assert "[![agent-gate](https://github.com/OWNER/REPO/raw/agent-gate-data/badge.svg)]" in told

    # a PR that collapses the example task: judged against the data branch's baseline
    def one_turn(work: Path) -> None:
        cfg = work / "gate.toml"
        cfg.write_text(re.sub(r"(?m)^max_turns = \d+", "max_turns = 1", cfg.read_text()))

    pr = scaffold.pr_branch("fewer-turns", one_turn)
    run = _play(scaffold, pr, "agent-gate.yml",
                _workflow_inputs(pr, "agent-gate.yml", "", sim="true"), action,
                env={"ANTHROPIC_API_KEY": ""})
    assert run.code == 1 and run.outputs["verdict"] == "regression", run.stderr
    _post(scaffold, run, action)
    assert len(scaffold.gh.comments.get(PR, [])) == 1  # something to read: a comment
    assert "no baseline" not in run.summary and "same-job A/B" not in run.summary
    assert "agent-gate-data (main/)" in run.summary + run.stderr, run.summary

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
