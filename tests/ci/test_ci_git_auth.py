"""``gate ci`` authenticates its own git with the token it holds.

The documented workflows check out with ``persist-credentials: false``, so no task finds the
token in ``.git/config``; the base-branch fetch (a shallow PR checkout has no base ref) and the
baseline push must then carry the token themselves. The remote here is real smart HTTP:
``git http-backend`` behind a loopback server that refuses every request without the token.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from gate.github import _git
from tests.helpers.ci import REPO, TOKEN, Project, _project, sh, store_baselines
from tests.helpers.git_http import GitOverHTTP, _clone
from tests.helpers.process import user_env

SURVIVOR = Path(__file__).parents[1] / "helpers" / "survivor.py"


@pytest.fixture
def private(tmp_path: Path) -> Iterator[tuple[Project, GitOverHTTP]]:
    for project in _project(tmp_path, sim=False):
        with GitOverHTTP(project.origin.parent, TOKEN) as server:
            yield project, server


@pytest.mark.slow
def test_pr_run_fetches_the_base_branch_with_its_own_token(
    private: tuple[Project, GitOverHTTP],
) -> None:
    project, server = private
    author = project.clone("author")
    sh(author, "git", "checkout", "-q", "-b", "docs")
    (author / "README.md").write_text("docs\n")
    sh(author, "git", "add", "-A")
    sh(author, "git", "commit", "-q", "-m", "docs")
    sh(author, "git", "push", "-q", "origin", "docs")
    ci = _clone(server, project, "ci", "docs")
    # without the token the base branch cannot be fetched: the server really refuses
    anon = subprocess.run(["git", "fetch", "--depth=1", "origin", "main"], cwd=ci,
                          capture_output=True, text=True, check=False,
                          env={**user_env(), "GIT_TERMINAL_PROMPT": "0"})
    assert anon.returncode != 0 and server.refused
    server.authorized.clear()
    run = project.gate_ci(ci, env={"GITHUB_SERVER_URL": server.url})
    assert run.code == 0, run.stderr
    assert run.outputs["verdict"] == "pass"
    assert any("git-upload-pack" in r for r in server.authorized)
    assert TOKEN not in (ci / ".git" / "config").read_text()
    run.no_secrets(project.gh)


@pytest.mark.slow
def test_main_run_pushes_the_refreshed_baseline_with_its_own_token(
    private: tuple[Project, GitOverHTTP],
) -> None:
    project, server = private
    main = _clone(server, project, "main-ci", "main")
    event = main.parent / "push-event.json"
    event.write_text(json.dumps({"ref": "refs/heads/main",
                                 "repository": {"full_name": REPO, "default_branch": "main"}}))
    store_baselines(main, "commit")
    run = project.gate_ci(main, event="push", event_path=event,
                          ref="refs/heads/main", env={"GITHUB_SERVER_URL": server.url})
    assert run.code == 0, run.stderr
    assert run.outputs["baseline_commit"]
    assert any("git-receive-pack" in r for r in server.authorized)
    pushed = sh(project.tmp, "git", "--git-dir", str(project.origin), "rev-parse", "main")
    assert pushed.strip() == run.outputs["baseline_commit"]
    assert TOKEN not in (main / ".git" / "config").read_text()
    run.no_secrets(project.gh)


def test_git_runs_without_the_gates_credentials(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """git, and any hook or helper it starts, is a process a task could read the environment
    of: the gate's credentials are not in it, nor is the token it authenticates with (a
    credential helper reads that from a pipe); an inherited GIT_CONFIG_* group stays whole,
    and the gate's entries come after it."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-git-env-SECRET-1")
    monkeypatch.setenv("GATE_GITHUB_TOKEN", "ghs_gitENVsecret12345")
    monkeypatch.setenv("GIT_CONFIG_COUNT", "1")
    monkeypatch.setenv("GIT_CONFIG_KEY_0", "safe.directory")
    monkeypatch.setenv("GIT_CONFIG_VALUE_0", "*")
    sh(tmp_path, "git", "init", "-q")
    r = _git._with_token(tmp_path, "-c", "alias.showenv=!env", "showenv",
                         token="ghs_gitENVsecret12345", server_url="https://github.example")
    assert r.returncode == 0, r.stderr
    env = dict(line.split("=", 1) for line in r.stdout.splitlines() if "=" in line)
    assert "sk-ant-git-env-SECRET-1" not in r.stdout and "ghs_gitENVsecret12345" not in r.stdout
    assert "ANTHROPIC_API_KEY" not in env and "GATE_GITHUB_TOKEN" not in env
    assert env["GIT_CONFIG_KEY_0"] == "safe.directory" and env["GIT_CONFIG_COUNT"] == "4"
    assert env["GIT_CONFIG_KEY_1"] == "http.https://github.example/.extraheader"
    assert env["GIT_CONFIG_KEY_3"] == "credential.https://github.example/.helper"
    r = _git.git(tmp_path, "config", "--get-all", "http.https://github.example/.extraheader")
    assert r.returncode == 1  # nothing written to .git/config


@pytest.mark.slow
def test_a_hook_planted_during_the_suite_never_runs_with_the_token(
    private: tuple[Project, GitOverHTTP], tmp_path: Path,
) -> None:
    """The suite runs as the gate's user and can write the checkout's ``.git``: a hook or a
    config entry (a proxy, no TLS check) planted there would run with, or send away, the
    token the baseline push carries. A git configuration changed by the suite stops the push."""
    project, server = private
    main = _clone(server, project, "main-ci", "main")
    loot = tmp_path / "loot"
    hostile = tmp_path / "hostile.sh"
    hostile.write_text(
        'echo "$1" > out.txt\n'
        f'mkdir -p {main}/.git/hooks\n'
        f"printf '#!/bin/sh\\nenv >> {loot}\\ncat > /dev/null\\n' > {main}/.git/hooks/pre-push\n"
        f'chmod +x {main}/.git/hooks/pre-push\n')
    event = main.parent / "push-event.json"
    event.write_text(json.dumps({"ref": "refs/heads/main",
                                 "repository": {"full_name": REPO, "default_branch": "main"}}))
    before = sh(project.tmp, "git", "--git-dir", str(project.origin), "rev-parse", "main")
    store_baselines(main, "commit")
    run = project.gate_ci(main, event="push", event_path=event,
                          ref="refs/heads/main", env={"GITHUB_SERVER_URL": server.url,
                                                      "AGENT_HELPER": str(hostile)})
    assert (main / ".git" / "hooks" / "pre-push").exists()  # the suite did plant it
    assert not loot.exists() or server.expected.split()[1] not in loot.read_text()
    assert run.code == 3, run.stderr
    assert "git configuration changed while the suite ran" in run.stderr
    after = sh(project.tmp, "git", "--git-dir", str(project.origin), "rev-parse", "main")
    assert after == before


@pytest.mark.slow
@pytest.mark.skipif(sys.platform != "linux", reason="Linux's /proc and subreapers")
def test_a_survivor_of_a_task_is_gone_before_the_push_and_finds_no_token(
    private: tuple[Project, GitOverHTTP], tmp_path: Path,
) -> None:
    """A task's process that double-forks, ``setsid``s, clears its environment, leaves the
    run's cgroup (as root may) and kills its launcher escapes everything but its parentage: the
    gate, a child subreaper, adopts it and kills it when the command ends. It watched every
    process below the gate (environments, command lines, the pipes and files of git's
    descriptors) and never saw the push nor the token; the push landed."""
    project, server = private
    main = _clone(server, project, "main-ci", "main")
    spy = tmp_path / "spy"
    spy.mkdir()
    hostile = tmp_path / "hostile.sh"
    hostile.write_text(
        'echo "$1" > out.txt\n'
        f'if mkdir {spy}/started 2>/dev/null; then\n'
        f'  {sys.executable} {SURVIVOR} {spy}\n'
        f'  for i in $(seq 100); do [ -e {spy}/escaped ] && break; sleep 0.1; done\n'
        'fi\n')
    before = sh(project.tmp, "git", "--git-dir", str(project.origin), "rev-parse", "main")
    event = main.parent / "push-event.json"
    event.write_text(json.dumps({"ref": "refs/heads/main",
                                 "repository": {"full_name": REPO, "default_branch": "main"}}))
    store_baselines(main, "commit")
    try:
        run = project.gate_ci(main, event="push",
                              event_path=event, ref="refs/heads/main", process=True,
                              env={"GITHUB_SERVER_URL": server.url,
                                   "AGENT_HELPER": str(hostile)})
    finally:
        pid = int((spy / "pid").read_text()) if (spy / "pid").exists() else None
        alive = pid is not None and _alive(pid)
        if alive:
            os.kill(pid, signal.SIGKILL)
    assert (spy / "escaped").exists(), "the survivor did not get away from its launcher"
    loot = (spy / "loot").read_bytes() if (spy / "loot").exists() else b""
    basic = server.expected.split()[1].encode()
    assert TOKEN.encode() not in loot and basic not in loot, loot[:2000]
    assert not (spy / "seen").exists(), (spy / "seen").read_text()  # dead before any git push
    assert not alive
    assert run.code == 0, run.stderr
    after = sh(project.tmp, "git", "--git-dir", str(project.origin), "rev-parse", "main")
    assert after != before and after.strip() == run.outputs["baseline_commit"]
    assert any("git-receive-pack" in r for r in server.authorized)


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            return fh.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except OSError:
        return False
