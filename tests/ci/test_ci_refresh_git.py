"""The refresh's git pieces against real repositories, fast: how a refused push is told apart
(a moved branch, GH006 branch protection, GH013 rulesets), commits made without touching the
checkout, and a bad ``data_branch`` named in one line."""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

import pytest

from gate import _git as plain_git
from gate.github import _git
from tests.helpers.ci import gate_in_process

GH013 = ("error: GH013: Repository rule violations found for refs/heads/main.\n"
         "error: Review all repository rules at http://github.example/acme/agent/rules?ref=main\n"
         "error: - Changes must be made through a pull request.\n")


def sh(cwd: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "dev", "GIT_AUTHOR_EMAIL": "d@example.com",
           "GIT_COMMITTER_NAME": "dev", "GIT_COMMITTER_EMAIL": "d@example.com"}
    p = subprocess.run(args, cwd=cwd, capture_output=True, text=True, env=env, check=False)
    assert p.returncode == 0, p.stderr
    return p.stdout.strip()


@pytest.fixture
def repos(tmp_path: Path) -> tuple[Path, Path]:
    origin = tmp_path / "origin.git"
    sh(tmp_path, "git", "init", "-q", "--bare", "-b", "main", str(origin))
    work = tmp_path / "work"
    sh(tmp_path, "git", "init", "-q", "-b", "main", str(work))
    (work / "code.py").write_text("print(1)\n")
    sh(work, "git", "add", "-A")
    sh(work, "git", "commit", "-q", "-m", "code")
    sh(work, "git", "remote", "add", "origin", f"file://{origin}")
    sh(work, "git", "push", "-q", "origin", "main")
    return origin, work


def test_a_commit_is_made_on_a_given_parent_without_touching_the_checkout(
        repos: tuple[Path, Path]) -> None:
    _, work = repos
    head = plain_git.head(work)
    sha = _git.commit_files(work, head, {"baseline.json": "{}\n", "d/h.jsonl": "x\n"}, "m")
    assert plain_git.head(work) == head and sh(work, "git", "status", "--porcelain") == ""
    assert sh(work, "git", "ls-tree", "-r", "--name-only", sha).split() == [
        "baseline.json", "code.py", "d/h.jsonl"]
    assert sh(work, "git", "log", "-1", "--format=%P|%an", sha) == \
        f"{head}|github-actions[bot]"
    orphan = _git.commit_files(work, None, {"main/baseline.json": "{}\n"}, "data")
    assert sh(work, "git", "ls-tree", "-r", "--name-only", orphan) == "main/baseline.json"
    assert sh(work, "git", "log", "-1", "--format=%P", orphan) == ""


def test_a_moved_branch_is_told_apart_from_a_rule(repos: tuple[Path, Path],
                                                   tmp_path: Path) -> None:
    origin, work = repos
    stale = _git.commit_files(work, plain_git.head(work), {"b.json": "1\n"}, "refresh")
    other = tmp_path / "other"
    sh(tmp_path, "git", "clone", "-q", f"file://{origin}", str(other))
    (other / "merged.txt").write_text("m\n")
    sh(other, "git", "add", "-A")
    sh(other, "git", "commit", "-q", "-m", "merge")
    sh(other, "git", "push", "-q", "origin", "main")
    assert _git.push(work, stale, "main", token=None, server_url="https://github.com") is False
    tip = _git.fetch_branch(work, "main", token=None, server_url="https://github.com")
    assert tip == sh(other, "git", "rev-parse", "HEAD")
    assert _git.fetch_branch(work, "no-such-branch", token=None,
                             server_url="https://github.com") is None
    fresh = _git.commit_files(work, tip, {"b.json": "1\n"}, "refresh")

    hook = origin / "hooks" / "pre-receive"
    hook.write_text("#!/bin/sh\n" + "".join(f"echo '{ln}' >&2\n" for ln in GH013.splitlines())
                    + "exit 1\n")
    hook.chmod(hook.stat().st_mode | stat.S_IEXEC)
    with pytest.raises(_git.ProtectedBranch) as err:
        _git.push(work, fresh, "main", token=None, server_url="https://github.com")
    text = str(err.value)
    assert "main is a protected branch (GH013 repository rules refused the push: GH013: " \
        "Repository rule violations found for refs/heads/main.)" in text
    assert "moved on" not in text

    hook.write_text("#!/bin/sh\necho 'error: disk quota exceeded' >&2\nexit 1\n")
    with pytest.raises(_git.BadInput) as other_err:
        _git.push(work, fresh, "main", token=None, server_url="https://github.com")
    assert not isinstance(other_err.value, _git.ProtectedBranch)
    assert "contents: write" in str(other_err.value)
    hook.unlink()
    assert _git.push(work, fresh, "main", token=None, server_url="https://github.com")


def test_ancestry(repos: tuple[Path, Path]) -> None:
    _, work = repos
    first = plain_git.head(work)
    assert first
    (work / "more.py").write_text("x\n")
    sh(work, "git", "add", "-A")
    sh(work, "git", "commit", "-q", "-m", "more")
    second = plain_git.head(work)
    assert second
    assert plain_git.is_ancestor(work, first, second) is True
    assert plain_git.is_ancestor(work, second, first) is False
    assert plain_git.is_ancestor(work, "0" * 40, second) is None


@pytest.mark.slow
def test_a_bad_data_branch_is_one_line_exit_2(tmp_path: Path) -> None:
    (tmp_path / "gate.toml").write_text('[ci]\nbaseline_refresh = "branch"\n'
                                        'data_branch = "../main"\n')
    code, _, stderr = gate_in_process(["ci", "--mode", "main"], tmp_path, {
        k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "GATE_"))})
    assert code == 2, stderr
    assert "gate.toml" in stderr and "ci.data_branch" in stderr
    assert "Traceback" not in stderr and len(stderr.strip().splitlines()) == 1


def test_the_base_branch_is_fetched_even_when_a_copy_of_it_is_there(
        repos: tuple[Path, Path], tmp_path: Path) -> None:
    """A checkout's ``origin/main`` can be stale (a self-hosted runner's reused workspace, a
    checkout made before main moved on): the base is fetched every time, never used as is."""
    origin, work = repos
    ci = tmp_path / "ci"
    sh(tmp_path, "git", "clone", "-q", f"file://{origin}", str(ci))
    stale = sh(ci, "git", "rev-parse", "refs/remotes/origin/main")
    (work / "code.py").write_text("print(2)\n")
    sh(work, "git", "commit", "-qam", "main moves on")
    sh(work, "git", "push", "-q", "origin", "main")
    ref = _git.ensure_base_ref(ci, "main")
    assert sh(ci, "git", "rev-parse", ref) == sh(work, "git", "rev-parse", "HEAD") != stale
