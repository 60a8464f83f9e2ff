"""What a pull request edits of the yardstick's files (the baseline, the history, the
workflows) is git's diff from the base to the PR's head commit: a file a run left in the
working tree, untracked or changed and not committed, is nobody's edit.

A real repository: the base branch with its suite and baseline, a PR branch on top of it."""

from __future__ import annotations

import subprocess
from pathlib import Path

from gate.core.config import GateConfig
from gate.execution.yardstick import open_yardstick
from tests.helpers.process import user_env


def git(repo: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True,
                   env=user_env(GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@example.com",
                                GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@example.com"))


def repo_with_pr(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    task = repo / "tasks" / "alpha"
    task.mkdir(parents=True)
    (task / "task.md").write_text("Write alpha into out.txt.\n")
    (task / "setup.sh").write_text("true\n")
    (task / "verify.sh").write_text("grep -qx alpha out.txt\n")
    (repo / "baseline.json").write_text("{}\n")
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "base")
    git(repo, "checkout", "-qb", "pr")
    (repo / "README.md").write_text("# a docs-only PR\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "PR")
    return repo


def edited(repo: Path) -> list[str]:
    with open_yardstick(GateConfig(root=repo), root=repo, ref="main") as ys:
        return ys.files


def test_a_leftover_in_the_working_tree_is_not_edited_by_the_pr(tmp_path: Path) -> None:
    repo = repo_with_pr(tmp_path)
    (repo / "gate-history.jsonl").write_text('{"pass_rate": 0.0}\n')  # untracked, left over
    (repo / "baseline.json").write_text('{"changed": "by a run, not committed"}\n')
    assert edited(repo) == []


def test_what_the_pr_commits_is_edited_by_it(tmp_path: Path) -> None:
    repo = repo_with_pr(tmp_path)
    (repo / "baseline.json").write_text('{"edited": true}\n')
    git(repo, "commit", "-qam", "edit the baseline")
    assert edited(repo) == ["baseline.json"]


def test_a_change_on_the_base_after_the_pr_left_it_is_not_the_prs(tmp_path: Path) -> None:
    repo = repo_with_pr(tmp_path)
    git(repo, "checkout", "-q", "main")
    (repo / "baseline.json").write_text('{"refreshed": "on main"}\n')
    git(repo, "commit", "-qam", "main refreshes its baseline")
    git(repo, "checkout", "-q", "pr")
    assert edited(repo) == []


def test_a_shallow_clone_without_the_merge_base_compares_the_two_trees(
        tmp_path: Path) -> None:
    """A pull request's checkout is one commit deep: no merge base, the trees are compared
    (base's and head's), and still never the working tree."""
    repo = repo_with_pr(tmp_path)
    (repo / "baseline.json").write_text('{"edited": true}\n')
    git(repo, "commit", "-qam", "edit the baseline")
    shallow = tmp_path / "shallow"
    git(tmp_path, "clone", "-q", "--depth", "1", "--branch", "pr", f"file://{repo}",
        str(shallow))
    git(shallow, "fetch", "-q", "--depth", "1", "origin", "main:main")
    (shallow / "gate-history.jsonl").write_text('{"pass_rate": 0.0}\n')  # left over
    assert edited(shallow) == ["baseline.json"]
