"""Git for CI: the base branch's files, what a PR changed, and committing a refreshed baseline.

A PR is judged against the baseline *of its base branch*, read with ``git show`` from the base
ref, never from the PR's own checkout: a PR cannot move its own yardstick. CI checkouts are
shallow (``actions/checkout`` fetches one commit), so the base ref is fetched when missing.
The token for fetching and pushing goes through ``GIT_CONFIG_*`` environment variables as an
``http.extraheader``: never on a command line (``ps``), never in ``.git/config``, never
printed; git otherwise runs without the gate's credentials in its environment.
"""

from __future__ import annotations

import base64
import hashlib
import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

from gate.errors import BadInput
from gate.secrets import scrubbed_env

BOT_NAME = "github-actions[bot]"
BOT_EMAIL = "41898282+github-actions[bot]@users.noreply.github.com"


@dataclass(frozen=True)
class GitResult:
    returncode: int
    stdout: str
    stderr: str


def git(root: Path, *args: str, env: dict[str, str] | None = None,
        timeout: float = 120.0) -> GitResult:
    full_env = {**_base_env(), "GIT_TERMINAL_PROMPT": "0", **(env or {})}
    try:
        p = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True,
                           timeout=timeout, env=full_env, check=False)
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


def remote_ref(base: str) -> str:
    return f"refs/remotes/origin/{base}"


def ensure_base_ref(root: Path, base: str, *, token: str | None = None,
                    server_url: str = "https://github.com") -> str:
    """Make ``origin/<base>`` available (fetching one commit of it when absent); return it.

    The fetch authenticates with ``token`` itself: the documented workflows check out with
    ``persist-credentials: false``, so no task finds a token in ``.git/config``."""
    ref = remote_ref(base)
    if git(root, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}").returncode != 0:
        r = git(root, "fetch", "--no-tags", "--depth=1", "origin", f"+refs/heads/{base}:{ref}",
                env=_auth_env(token, server_url))
        if r.returncode != 0:
            raise BadInput(f"cannot fetch the base branch {base!r} from origin: "
                           f"{_last_line(r.stderr)}")
    return ref


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


def config_state(root: Path) -> str:
    """A digest of what decides what git runs and where it sends the token: the repository's
    config and hooks, and the user's global config. The suite runs as the gate's user and can
    write all of them; a push after it carries the token, so it is made only when this is
    unchanged (a planted ``pre-push`` hook would read the token from its environment, a
    planted proxy without TLS checks would receive it)."""
    r = git(root, "rev-parse", "--git-common-dir")
    common = (root / r.stdout.strip()) if r.returncode == 0 else root / ".git"
    files = [common / "config", Path.home() / ".gitconfig",
             Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config") / "git" / "config"]
    hooks = common / "hooks"
    if hooks.is_dir():
        files += sorted(hooks.iterdir())
    digest = hashlib.sha256()
    for f in files:
        digest.update(str(f).encode() + b"\0")
        try:
            digest.update(hashlib.sha256(f.read_bytes()).digest() if f.is_file() else b"-")
        except OSError as exc:
            digest.update(f"unreadable {exc.errno}".encode())
        digest.update(b"\0")
    return digest.hexdigest()


def commit_and_push(root: Path, paths: list[Path], branch: str, message: str, *,
                    token: str | None, server_url: str) -> str | None:
    """Commit ``paths`` as the Actions bot and push to ``branch``. Returns the new commit,
    or None when nothing changed. Raises ``BadInput`` with git's reason when the push fails."""
    rel = [repo_relative(root, p) for p in paths]
    r = git(root, "add", "--", *rel)
    if r.returncode != 0:
        raise BadInput(f"cannot stage {', '.join(rel)}: {_last_line(r.stderr)}")
    if git(root, "diff", "--cached", "--quiet", "--", *rel).returncode == 0:
        return None
    ident = {"GIT_AUTHOR_NAME": BOT_NAME, "GIT_AUTHOR_EMAIL": BOT_EMAIL,
             "GIT_COMMITTER_NAME": BOT_NAME, "GIT_COMMITTER_EMAIL": BOT_EMAIL}
    r = git(root, "commit", "--no-verify", "-m", message, "--", *rel, env=ident)
    if r.returncode != 0:
        raise BadInput(f"cannot commit the refreshed baseline: {_last_line(r.stderr)}")
    sha = git(root, "rev-parse", "HEAD").stdout.strip()
    r = git(root, "push", "origin", f"HEAD:refs/heads/{branch}", env=_auth_env(token, server_url))
    if r.returncode != 0:
        reason = _last_line(r.stderr)
        if "rejected" in r.stderr or "non-fast-forward" in r.stderr or "fetch first" in r.stderr:
            raise BadInput(f"cannot push the refreshed baseline to {branch}: the branch moved "
                           "on while the suite ran; the next refresh pools this run's "
                           f"successor ({reason})")
        raise BadInput(f"cannot push the refreshed baseline to {branch}: {reason} (the token "
                       "needs `contents: write`, and branch protection must let the bot push; "
                       "or set [ci] baseline_refresh = \"artifact\")")
    return sha


def _base_env() -> dict[str, str]:
    """The gate's environment without its credentials: git (and any hook or helper it runs)
    is a process a task could read the environment of. Inherited ``GIT_CONFIG_*`` entries
    (e.g. ``safe.directory`` in a container) stay whole: a ``GIT_CONFIG_KEY_<n>`` is a config
    name, never a secret, and dropping one would break the group."""
    env = scrubbed_env()
    env.update({k: v for k, v in os.environ.items() if _CONFIG_KEY.fullmatch(k)})
    return env


_CONFIG_KEY = re.compile(r"GIT_CONFIG_KEY_\d+")


def _auth_env(token: str | None, server_url: str) -> dict[str, str]:
    """``http.<server>/.extraheader`` via ``GIT_CONFIG_*`` (after any inherited entries):
    first reset (``actions/checkout`` may have set its own, and two Authorization headers
    fail), then the token's."""
    if not token:
        return {}
    basic = base64.b64encode(f"x-access-token:{token}".encode()).decode()
    key = f"http.{server_url.rstrip('/')}/.extraheader"
    raw = os.environ.get("GIT_CONFIG_COUNT", "0").strip()
    n = int(raw) if raw.isdigit() else 0
    return {
        "GIT_CONFIG_COUNT": str(n + 2),
        f"GIT_CONFIG_KEY_{n}": key, f"GIT_CONFIG_VALUE_{n}": "",
        f"GIT_CONFIG_KEY_{n + 1}": key,
        f"GIT_CONFIG_VALUE_{n + 1}": f"AUTHORIZATION: basic {basic}",
    }


def _last_line(text: str) -> str:
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    return lines[-1][:300] if lines else "(no output)"
