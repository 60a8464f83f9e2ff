"""The few git facts the gate needs, read without changing anything.

Plain git, with no token and none of the gate's credentials in its environment: the commit
under test, the repository root, a file at a ref, what a branch changed. Fetching and pushing
with the token is ``gate.github``'s (its ``_git``): only ``gate ci`` talks to a remote."""

from __future__ import annotations

import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

from gate.errors import BadInput
from gate.secrets import PROXY_NAMES, scrubbed_env


def current_commit(cwd: str | Path | None = None, known: str | None = None) -> str | None:
    """``known`` (the caller's: ``GITHUB_SHA`` in Actions), else ``git rev-parse HEAD``, else
    None."""
    if known:
        return known
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=cwd, capture_output=True, text=True, timeout=10,
            check=False, env=scrubbed_env(),
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None


@dataclass(frozen=True)
class GitResult:
    returncode: int
    stdout: str
    stderr: str


def git(root: Path, *args: str, env: dict[str, str] | None = None,
        timeout: float = 120.0, pass_fds: tuple[int, ...] = ()) -> GitResult:
    full_env = {**base_env(), "GIT_TERMINAL_PROMPT": "0", **(env or {})}
    try:
        p = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True,
                           timeout=timeout, env=full_env, check=False, pass_fds=pass_fds)
    except FileNotFoundError:
        raise BadInput("git is not installed: gate ci needs git to read the base branch") \
            from None
    except subprocess.TimeoutExpired:
        return GitResult(124, "", f"git {args[0]} timed out")
    return GitResult(p.returncode, p.stdout, p.stderr)


def toplevel(cwd: Path) -> Path:
    r = git(cwd, "rev-parse", "--show-toplevel")
    if r.returncode != 0:
        raise BadInput(f"{cwd}: not inside a git repository (gate ci needs the checkout's "
                       "history: use actions/checkout first)")
    return Path(r.stdout.strip())


def repo_relative(root: Path, path: Path) -> str:
    """``path`` relative to the repository root, in git's forward-slash form."""
    try:
        return path.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        raise BadInput(f"{path}: outside the git repository {root}") from None


def show_file(root: Path, ref: str, relpath: str) -> str | None:
    """The file's text at ``ref``, or None when it does not exist there."""
    r = git(root, "show", f"{ref}:{relpath}")
    if r.returncode != 0:
        return None
    return r.stdout


def pr_changes_file(root: Path, base_ref: str, relpath: str) -> bool | None:
    """Whether the commits since the merge base change ``relpath``; None when git cannot tell.

    Three dots: the PR's own changes, not whatever the base branch did since (a baseline
    refresh on main after the PR branched must not count as "the PR edits baseline.json").
    Shallow checkouts have no merge base; the caller then asks the API instead.
    """
    r = git(root, "diff", "--name-only", f"{base_ref}...HEAD", "--", relpath)
    if r.returncode != 0:
        return None
    return relpath in r.stdout.splitlines()


def pr_changed_files(root: Path, base_ref: str, relpath: str) -> list[str] | None:
    """The files under ``relpath`` the commits since the merge base change (three dots, as
    :func:`pr_changes_file`); None when git cannot tell (a shallow checkout)."""
    r = git(root, "diff", "--name-only", f"{base_ref}...HEAD", "--", relpath or ".")
    if r.returncode != 0:
        return None
    return [line for line in r.stdout.splitlines() if line]


def is_ancestor(root: Path, ancestor: str, descendant: str) -> bool | None:
    """``git merge-base --is-ancestor``: True, False, or None when git cannot tell (a commit
    is not in this clone)."""
    r = git(root, "merge-base", "--is-ancestor", ancestor, descendant)
    return {0: True, 1: False}.get(r.returncode)


def head(root: Path) -> str | None:
    r = git(root, "rev-parse", "--verify", "--quiet", "HEAD^{commit}")
    return r.stdout.strip() or None if r.returncode == 0 else None


CONFIG_KEY = re.compile(r"GIT_CONFIG_KEY_\d+")


def base_env() -> dict[str, str]:
    """The gate's environment without its credentials: git (and any hook or helper it runs)
    is a process a task could read the environment of. Inherited ``GIT_CONFIG_*`` entries
    (e.g. ``safe.directory`` in a container) stay whole: a ``GIT_CONFIG_KEY_<n>`` is a config
    name, never a secret, and dropping one would break the group. The proxy settings stay,
    even with a password in them: git reaches origin through them, as the gate does."""
    env = scrubbed_env(pass_env=PROXY_NAMES)
    env.update({k: v for k, v in os.environ.items() if CONFIG_KEY.fullmatch(k)})
    return env


def last_line(text: str) -> str:
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    return lines[-1][:300] if lines else "(no output)"


def show_bounded(root: Path, ref: str, rel: str, limit: int, label: str) -> str | None:
    """The file's text at ``ref`` (None when absent there), refused past ``limit`` bytes
    before it is read: the base branch's files are bounded like the working tree's."""
    size = git(root, "cat-file", "-s", f"{ref}:{rel}")
    if size.returncode != 0:
        return None
    if int(size.stdout.strip() or 0) > limit:
        raise BadInput(f"{rel} on {label}: larger than {limit:,} bytes")
    shown = subprocess.run(["git", "show", f"{ref}:{rel}"], cwd=root, capture_output=True,
                           timeout=120, check=False)
    if shown.returncode != 0:
        return None
    try:
        return shown.stdout.decode("utf-8")
    except UnicodeDecodeError:
        raise BadInput(f"{rel} on {label}: not UTF-8 text") from None
