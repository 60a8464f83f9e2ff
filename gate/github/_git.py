"""Git for CI with the token: fetching the base and data branches, committing and pushing a
refreshed baseline (plain, token-less reads are ``gate/_git.py``'s).

A PR is judged against the baseline *of its base branch*, read with ``git show`` from the base
ref, never from the PR's own checkout: a PR cannot move its own yardstick. CI checkouts are
shallow (``actions/checkout`` fetches one commit), so the base ref is fetched when missing.
The token for fetching and pushing reaches git through a credential helper that reads it from
a pipe the gate writes and hands to that one git process (``_with_token``): never in an
environment (``/proc/<pid>/environ``), never on a command line (``ps``), never in
``.git/config``, never printed; git otherwise runs without the gate's credentials. A pipe is
readable through ``/proc/<pid>/fd`` by a process of the same user, as an environment is: what
keeps the token from a task is that none is alive at a fetch or push with it (the caller's
guard, ``gate.sandbox.assert_no_task_alive``, after the gate, a child subreaper, killed every
orphan of its runs).
"""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import tempfile
from pathlib import Path

from gate._git import GitResult, git
from gate._git import base_env as _base_env
from gate._git import last_line as _last_line
from gate.errors import BadInput

BOT_NAME = "github-actions[bot]"
BOT_EMAIL = "41898282+github-actions[bot]@users.noreply.github.com"


def remote_ref(base: str) -> str:
    return f"refs/remotes/origin/{base}"


def ensure_base_ref(root: Path, base: str, *, token: str | None = None,
                    server_url: str = "https://github.com") -> str:
    """Fetch ``origin/<base>`` as origin has it now, and return it.

    Always fetched, never an ``origin/<base>`` the checkout already has used as is: a reused
    workspace, or a checkout made before the base moved on, would judge the PR by a stale
    yardstick. One commit in a shallow checkout (as ``actions/checkout`` makes), the branch
    in a full one (a shallow fetch would cut the history a merge base needs). The fetch
    authenticates with ``token`` itself: the documented workflows check out with
    ``persist-credentials: false``, so no task finds a token in ``.git/config``."""
    ref = remote_ref(base)
    shallow = git(root, "rev-parse", "--is-shallow-repository").stdout.strip() == "true"
    r = _with_token(root, "fetch", "--no-tags", *(["--depth=1"] if shallow else []), "origin",
                    f"+refs/heads/{base}:{ref}", token=token, server_url=server_url)
    if r.returncode != 0:
        raise BadInput(f"cannot fetch the base branch {base!r} from origin: "
                       f"{_last_line(r.stderr)}")
    return ref


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


#: What GitHub (and GitHub Enterprise) print when branch protection or a ruleset refuses a
#: push: GH006 (protected branch), GH013 (repository rules), and git's own wording of it.
_PROTECTED = re.compile(r"GH006|GH013|protected branch|repository rule violations",
                        re.IGNORECASE)
#: A push refused because the branch moved on: the tip is not an ancestor of what was pushed.
_MOVED = re.compile(r"non-fast-forward|\(fetch first\)|\[rejected\]|stale info|"
                    r"cannot lock ref|failed to update ref|incorrect old value")


class ProtectedBranch(BadInput):
    """The remote refused the push by rule (branch protection, a ruleset): not a race, and
    retrying cannot help."""


def fetch_branch(root: Path, branch: str, *, token: str | None, server_url: str) -> str | None:
    """Fetch ``origin/<branch>`` (its tip only, in a shallow checkout); return the tip's commit,
    or None when origin has no such branch. Other failures (auth, network) raise ``BadInput``."""
    ref = remote_ref(branch)
    shallow = git(root, "rev-parse", "--is-shallow-repository").stdout.strip() == "true"
    depth = 1 if shallow else None
    args = ["fetch", "--no-tags", *([f"--depth={depth}"] if depth else []), "origin",
            f"+refs/heads/{branch}:{ref}"]
    r = _with_token(root, *args, token=token, server_url=server_url)
    if r.returncode != 0:
        if "couldn't find remote ref" in r.stderr.lower():
            return None
        raise BadInput(f"cannot fetch the branch {branch!r} from origin: {_last_line(r.stderr)}")
    return git(root, "rev-parse", ref).stdout.strip() or None


def deepen(root: Path, branch: str, *, token: str | None, server_url: str) -> None:
    """All of ``branch``'s history (a shallow CI checkout has one commit): for ancestry."""
    shallow = git(root, "rev-parse", "--is-shallow-repository").stdout.strip() == "true"
    _with_token(root, "fetch", "--no-tags", *(["--unshallow"] if shallow else []), "origin",
                f"+refs/heads/{branch}:{remote_ref(branch)}", token=token, server_url=server_url)


def commit_files(root: Path, parent: str | None, files: dict[str, str], message: str) -> str:
    """A commit of ``parent``'s tree with ``files`` (repo-relative path → text) written into
    it, as the Actions bot; ``parent`` None makes a root commit (an orphan branch). Built with
    a private index: the checkout's working tree, index and HEAD are left alone."""
    with tempfile.TemporaryDirectory(prefix="gate-index-") as tmp:
        env = {"GIT_INDEX_FILE": str(Path(tmp) / "index")}
        r = git(root, "read-tree", *([parent] if parent else ["--empty"]), env=env)
        if r.returncode != 0:
            raise BadInput(f"cannot read the tree of {parent}: {_last_line(r.stderr)}")
        for rel, text in files.items():
            blob = _git_input(root, ["hash-object", "-w", "--stdin"], text)
            r = git(root, "update-index", "--add", "--cacheinfo", f"100644,{blob},{rel}",
                    env=env)
            if r.returncode != 0:
                raise BadInput(f"cannot stage {rel}: {_last_line(r.stderr)}")
        r = git(root, "write-tree", env=env)
        if r.returncode != 0:
            raise BadInput(f"cannot write the refreshed tree: {_last_line(r.stderr)}")
        tree = r.stdout.strip()
    ident = {"GIT_AUTHOR_NAME": BOT_NAME, "GIT_AUTHOR_EMAIL": BOT_EMAIL,
             "GIT_COMMITTER_NAME": BOT_NAME, "GIT_COMMITTER_EMAIL": BOT_EMAIL}
    r = git(root, "commit-tree", tree, *(["-p", parent] if parent else []), "-m", message,
            env=ident)
    if r.returncode != 0:
        raise BadInput(f"cannot commit the refreshed baseline: {_last_line(r.stderr)}")
    return r.stdout.strip()


def push(root: Path, sha: str, branch: str, *, token: str | None, server_url: str) -> bool:
    """Push ``sha`` to ``branch`` (never forced). True when it landed; False when the branch
    moved on (a non-fast-forward: fetch, re-pool and try again). A push refused by branch
    protection or a ruleset raises ``ProtectedBranch``; any other failure ``BadInput``."""
    r = _with_token(root, "push", "--porcelain", "origin", f"{sha}:refs/heads/{branch}",
                    token=token, server_url=server_url)
    if r.returncode == 0:
        return True
    text = f"{r.stderr}\n{r.stdout}"
    if _PROTECTED.search(text):
        rule = "GH013 repository rules" if "GH013" in text else "branch protection"
        raise ProtectedBranch(
            f"cannot push the refreshed baseline to {branch}: {branch} is a protected branch "
            f"({rule} refused the push: {_protected_line(text)}). Keep the baseline off it: "
            "[ci] baseline_refresh = \"branch\" in gate.toml (a data branch, no protection "
            "rules needed), or \"artifact\" (upload the files); or push with a token allowed to "
            "bypass the rule (a GitHub App or admin token added to the bypass list)")
    if _MOVED.search(text):
        return False
    raise BadInput(f"cannot push the refreshed baseline to {branch}: {_last_line(r.stderr)} "
                   "(the token needs `contents: write`; or set [ci] baseline_refresh = "
                   "\"artifact\")")


def _protected_line(text: str) -> str:
    for line in text.splitlines():
        line = line.removeprefix("remote:").strip()
        if _PROTECTED.search(line) and line.lower().startswith(("error:", "gh0")):
            return line.removeprefix("error:").strip()[:200]
    return _last_line(text)


def _git_input(root: Path, args: list[str], text: str) -> str:
    try:
        p = subprocess.run(["git", *args], cwd=root, input=text, capture_output=True,
                           text=True, timeout=120, env={**_base_env(), "GIT_TERMINAL_PROMPT": "0"},
                           check=False)
    except subprocess.TimeoutExpired:
        raise BadInput(f"git {args[0]} timed out") from None
    if p.returncode != 0:
        raise BadInput(f"git {args[0]}: {_last_line(p.stderr)}")
    return p.stdout.strip()


#: How many times one git process may ask for the token (each ``get`` reads one line).
_TOKEN_COPIES = 8


def _with_token(root: Path, *args: str, token: str | None, server_url: str) -> GitResult:
    """``git *args`` authenticated with ``token`` for ``server_url`` (plain git without one).

    The token goes into a pipe, written and closed before git starts, whose read end only this
    git process (and the helpers it runs) inherits; the credential helper reads one line of it
    per ``get``."""
    if not token:
        return git(root, *args)
    if any(c in token for c in "\r\n\0") or len(token) > 2048:
        raise BadInput("the GitHub token is not a single line of at most 2048 characters")
    r, w = os.pipe()
    try:
        os.write(w, f"{token}\n".encode() * _TOKEN_COPIES)
    finally:
        os.close(w)
    try:
        return git(root, *args, env=_auth_env(server_url, r), pass_fds=(r,))
    finally:
        os.close(r)


def _auth_env(server_url: str, fd: int) -> dict[str, str]:
    """The ``GIT_CONFIG_*`` entries (after any inherited ones) that make git ask the pipe at
    ``fd`` for ``server_url``'s credential: names and a helper's command, no secret. First
    resets: ``http.<server>/.extraheader`` (``actions/checkout`` may have persisted its own,
    and two Authorization headers fail) and the credential helpers configured for the server
    (a user's helper would answer first with another credential); then the helper, which
    answers ``get`` and ignores ``store`` and ``erase``."""
    server = server_url.rstrip("/")
    header, helper = f"http.{server}/.extraheader", f"credential.{server}/.helper"
    answer = (f"!f() {{ test \"$1\" = get || exit 0; read -r t </dev/fd/{fd} || exit 1; "
              "printf 'username=x-access-token\\npassword=%s\\n' \"$t\"; }; f")
    raw = os.environ.get("GIT_CONFIG_COUNT", "0").strip()
    n = int(raw) if raw.isdigit() else 0
    entries = [(header, ""), (helper, ""), (helper, answer)]
    env = {"GIT_CONFIG_COUNT": str(n + len(entries))}
    for i, (key, value) in enumerate(entries, start=n):
        env[f"GIT_CONFIG_KEY_{i}"], env[f"GIT_CONFIG_VALUE_{i}"] = key, value
    return env
