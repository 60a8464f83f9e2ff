"""``gate ci`` in ``comment`` mode (the trusted ``workflow_run`` half of the fork pattern) holds a
write token next to files a fork wrote: it reads no gate.toml of its workspace (its [ci] is the
default branch's, through the API) and imports nothing from the working directory. Run
through the installed console script, as the action's step runs it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from gate.github import marker
from tests.helpers.ci import API_KEY, PR, REPO, TOKEN, _parse_output_file
from tests.helpers.fake_github import FakeGitHub
from tests.helpers.process import user_env

pytestmark = pytest.mark.slow

GATE = Path(sys.executable).parent / "gate"


@pytest.fixture
def gh() -> Iterator[FakeGitHub]:
    with FakeGitHub(REPO, token=TOKEN) as fake:
        fake.pulls = [{"number": PR, "head": {"sha": "a" * 40}, "_head": "stranger:feature"}]
        yield fake


def _comment_run(gh: FakeGitHub, workspace: Path, report: Path, *args: str,
                 env: dict[str, str] | None = None, conclusion: str = "failure",
                 ) -> tuple[subprocess.CompletedProcess[str], dict[str, str]]:
    event = report.parent / "workflow-run.json"
    event.write_text(json.dumps({"workflow_run": {
        "event": "pull_request", "conclusion": conclusion, "head_sha": "a" * 40,
        "head_branch": "feature", "head_repository": {"full_name": "stranger/agent"}}}))
    out = report.parent / "github-output"
    p = subprocess.run(
        [str(GATE), "ci", "--report", str(report), *args], cwd=workspace,
        capture_output=True, text=True, timeout=120, check=False,
        env={**user_env(), "GITHUB_ACTIONS": "true", "GITHUB_EVENT_NAME": "workflow_run",
             "GITHUB_EVENT_PATH": str(event), "GITHUB_REPOSITORY": REPO,
             "GITHUB_API_URL": gh.url, "GITHUB_SERVER_URL": "https://github.example",
             "GITHUB_REF": "refs/heads/main", "GITHUB_WORKSPACE": str(workspace),
             "GITHUB_OUTPUT": str(out), "GITHUB_TOKEN": TOKEN, "ANTHROPIC_API_KEY": API_KEY,
             **(env or {})})
    return p, (_parse_output_file(out.read_text()) if out.exists() else {})


def _dirs(tmp_path: Path) -> tuple[Path, Path]:
    """The workspace (a fork's files may be there) and RUNNER_TEMP (the artifact goes here)."""
    workspace, temp = tmp_path / "workspace", tmp_path / "runner-temp"
    workspace.mkdir()
    temp.mkdir()
    return workspace, temp


@pytest.mark.skipif(not GATE.exists(), reason="needs the installed `gate` console script")
def test_comment_mode_works_from_an_empty_directory(gh: FakeGitHub, tmp_path: Path) -> None:
    workspace, temp = _dirs(tmp_path)
    report = temp / "gate-report.md"
    report.write_text("### agent-gate: skipped\n\nno key on a fork\n")
    p, outputs = _comment_run(gh, workspace, report)
    assert p.returncode == 0, p.stderr
    (comment,) = gh.comments[PR]
    assert comment["body"].startswith(marker("gate.toml")) and "no key on a fork" in comment["body"]
    assert outputs["mode"] == "comment" and outputs["comment_url"] == comment["html_url"]
    assert list(workspace.iterdir()) == []  # and it wrote nothing there


@pytest.mark.skipif(not GATE.exists(), reason="needs the installed `gate` console script")
def test_comment_mode_ignores_a_planted_gate_toml_and_python_package(
    gh: FakeGitHub, tmp_path: Path,
) -> None:
    """The workspace holds what an unpacked artifact could: a gate.toml that would not even
    load, and a `gate` package (plus `pip`, `venv`) that would run with the write token. The
    comment is posted; none of it is read or imported."""
    workspace, temp = _dirs(tmp_path)
    marker = tmp_path / "imported"
    (workspace / "gate.toml").write_text("[ci]\ncomment = not toml at all [[[\n")
    for name in ("gate", "pip", "venv"):
        (workspace / name).mkdir()
        code = (f"open({str(marker)!r}, 'a').write('{name}\\n')\n"
                "import os; os._exit(0)\n")
        (workspace / name / "__init__.py").write_text(code)
        (workspace / name / "__main__.py").write_text(code)
    report = temp / "gate-report.md"
    report.write_text("### agent-gate: no regression\n\nall good\n")
    # an explicit --config (or GATE_CONFIG from a `config:` input) is not read either
    p, outputs = _comment_run(gh, workspace, report, env={"GATE_CONFIG": "gate.toml"})
    assert p.returncode == 0, p.stderr
    assert not marker.exists(), f"imported from the workspace: {marker.read_text()}"
    (comment,) = gh.comments[PR]
    assert "all good" in comment["body"]
    assert outputs["comment_url"] == comment["html_url"]


@pytest.mark.skipif(not GATE.exists(), reason="needs the installed `gate` console script")
def test_comment_mode_posts_no_symlink_fifo_or_binary_report(gh: FakeGitHub,
                                                             tmp_path: Path) -> None:
    """An artifact's gate-report.md that is a symlink (to a file of the runner's), a FIFO (a
    job that blocks forever), or not text: exit 2 naming the file, nothing posted."""
    workspace, temp = _dirs(tmp_path)
    private = tmp_path / "runner-credentials"
    private.write_text("runner-private-SECRET-contents\n")
    report = temp / "gate-report.md"
    report.symlink_to(private)
    p, _ = _comment_run(gh, workspace, report)
    assert p.returncode == 2 and f"{report}: not a regular file" in p.stderr, p.stderr
    report.unlink()
    os.mkfifo(report)
    p, _ = _comment_run(gh, workspace, report)
    assert p.returncode == 2 and f"{report}: not a regular file" in p.stderr, p.stderr
    report.unlink()
    report.write_bytes(b"### report\n\xff\xfe\n")
    p, _ = _comment_run(gh, workspace, report)
    assert p.returncode == 2 and f"{report}: not UTF-8" in p.stderr, p.stderr
    assert "Traceback" not in p.stderr
    assert not gh.comments.get(PR)


@pytest.mark.skipif(not GATE.exists(), reason="needs the installed `gate` console script")
def test_comment_mode_skips_a_cancelled_run(gh: FakeGitHub, tmp_path: Path) -> None:
    workspace, temp = _dirs(tmp_path)
    report = temp / "gate-report.md"
    report.write_text("### agent-gate: half a run\n")
    p, outputs = _comment_run(gh, workspace, report, conclusion="cancelled")
    assert p.returncode == 0, p.stderr
    assert "cancelled" in p.stderr and outputs["comment_url"] == ""
    assert not gh.comments.get(PR)


@pytest.mark.skipif(not GATE.exists(), reason="needs the installed `gate` console script")
def test_comment_mode_reads_ci_from_the_default_branch_and_says_when_it_cannot(
    gh: FakeGitHub, tmp_path: Path,
) -> None:
    """[ci] is the default branch's gate.toml, through the API (no checkout): its comment id
    marks the comment. When GitHub refuses that read, the job says so and posts with the
    defaults; it never reads the workspace's copy instead."""
    origin = tmp_path / "origin"
    subprocess.run(["git", "init", "-q", "-b", "main", str(origin)], check=True, env=user_env())
    (origin / "gate.toml").write_text('[ci]\ncomment_id = "fast-suite"\n')
    for args in (("add", "gate.toml"), ("commit", "-q", "-m", "settings")):
        subprocess.run(["git", "-C", str(origin), *args], check=True, env=user_env())
    gh.origin = origin / ".git"
    workspace, temp = _dirs(tmp_path)
    (workspace / "gate.toml").write_text('[ci]\ncomment_id = "hijacked"\n')
    report = temp / "gate-report.md"
    report.write_text("### agent-gate: regression\n")
    p, _ = _comment_run(gh, workspace, report)
    assert p.returncode == 0, p.stderr
    (comment,) = gh.comments[PR]
    assert comment["body"].startswith(marker("fast-suite")), comment["body"][:80]
    gh.comments.clear()
    gh.fail_next("GET", "/contents/", 403)
    p, _ = _comment_run(gh, workspace, report)
    assert p.returncode == 0, p.stderr
    assert "the default branch's gate.toml could not be read" in p.stdout + p.stderr
    (comment,) = gh.comments[PR]
    assert comment["body"].startswith(marker("gate.toml"))
    # a private repository, a job without `contents: read`: GitHub answers 404, and the log
    # says that this may be why the defaults apply
    gh.comments.clear()
    gh.visibility = "private"
    gh.add_token(TOKEN, "github-actions[bot]", installation=True, contents=False)
    p, _ = _comment_run(gh, workspace, report)
    assert p.returncode == 0, p.stderr
    assert "or the token may not read it: `contents: read`" in p.stderr, p.stderr
    (comment,) = gh.comments[PR]
    assert comment["body"].startswith(marker("gate.toml"))
