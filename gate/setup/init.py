"""``gate init``: adopt the gate in an existing repository with one command.

Writes what a careful maintainer would merge: a commented ``gate.toml`` whose suite can block
a collapse of its example task out of the box (6 runs per task: docs/statistics.md,
"Resolution"), the agent's system prompt (``agent/system.md``, long enough to be cached), one
example task in the suite layout (``setup.sh``, ``task.md``, ``verify.sh``, ``task.toml``,
``solution/solve.sh``, and ``gatecheck.py``, which judges the verifier's checks outside the
checked code's process: docs/tasks.md, "Writing tasks"), the three workflows (the PR check; the
baseline refresh on the default branch, kept on the data branch; the trusted report job after
each PR check, which publishes its report on GitHub Pages and links it), with actions pinned
by commit SHA and ``.github/dependabot.yml`` keeping them current, and the results' entries
in ``.gitignore``.

It never overwrites: when any file it would write exists, it writes nothing and names the file
(exit 2). Two files are shared with the rest of a repository and handled gently: an existing
``.gitignore`` gets the gate's lines appended (once), an existing ``.github/dependabot.yml`` is
left alone and the next steps say what to add. The files come from ``gate/templates/init``;
the workflows name the repository's default branch and the action's ``uses:`` reference.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import jinja2

from gate.errors import BadInput
from gate.upstream import Upstream, get_upstream

EXAMPLE_TASK = "example-count-words"
#: what the workflows' ``uses:`` names when neither ``--action`` nor the install says where this
#: action lives (a repository with its action.yml at the root): a placeholder to replace
DEFAULT_ACTION = "agent-gate/agent-gate@v1"
_GITHUB_REPO = re.compile(r"(?:git\+)?https://github\.com/([A-Za-z0-9-]+)/([A-Za-z0-9._-]+?)"
                          r"(?:\.git)?/?")


def installed_action() -> str | None:
    """``owner/repo@<commit>`` when this gate was installed from a GitHub repository by git
    (pip's ``direct_url.json``: ``pip install "git+https://github.com/OWNER/REPO@REF"``, as
    the README says), so the workflows run the very commit the user installed; else None."""
    from importlib import metadata

    try:
        text = metadata.distribution("agent-gate").read_text("direct_url.json")
        info = json.loads(text) if text else {}
    except (metadata.PackageNotFoundError, ValueError):
        return None
    vcs = info.get("vcs_info") if isinstance(info, dict) else None
    if not isinstance(vcs, dict) or vcs.get("vcs") != "git":
        return None
    commit, m = str(vcs.get("commit_id", "")), _GITHUB_REPO.fullmatch(str(info.get("url", "")))
    if m is None or not re.fullmatch(r"[0-9a-f]{40}", commit):
        return None
    return f"{m.group(1)}/{m.group(2)}@{commit}"
_TEMPLATES = "templates/init"
_GITIGNORE = ".gitignore"
_DEPENDABOT = ".github/dependabot.yml"
# (template, destination relative to the repository root, executable)
_FILES: tuple[tuple[str, str, bool], ...] = (
    ("gate.toml", "gate.toml", False),
    ("agent/system.md", "agent/system.md", False),
    ("task/task.md", f"tasks/{EXAMPLE_TASK}/task.md", False),
    ("task/task.toml", f"tasks/{EXAMPLE_TASK}/task.toml", False),
    ("task/setup.sh", f"tasks/{EXAMPLE_TASK}/setup.sh", True),
    ("task/verify.sh", f"tasks/{EXAMPLE_TASK}/verify.sh", True),
    ("task/gatecheck.py", f"tasks/{EXAMPLE_TASK}/gatecheck.py", False),
    ("task/solution/solve.sh", f"tasks/{EXAMPLE_TASK}/solution/solve.sh", True),
    ("workflows/agent-gate.yml", ".github/workflows/agent-gate.yml", False),
    ("workflows/agent-gate-main.yml", ".github/workflows/agent-gate-main.yml", False),
    ("workflows/agent-gate-report.yml", ".github/workflows/agent-gate-report.yml", False),
)
# shared with the rest of the repository: appended to / left alone when they exist
_SHARED: tuple[tuple[str, str], ...] = (("gitignore", _GITIGNORE),
                                         ("dependabot.yml", _DEPENDABOT))


#: origin's URL on a GitHub server (github.com or GitHub Enterprise Server): https or ssh
_REMOTE = re.compile(r"(?:https://(?:[^@/]+@)?|ssh://git@|git@)([A-Za-z0-9.-]+)[/:]"
                     r"([A-Za-z0-9-]+)/([A-Za-z0-9._-]+?)(?:\.git)?/?")
_DATA_BRANCH = "agent-gate-data"  # the scaffold's gate.toml keeps the default data branch


def origin_repository(root: Path) -> tuple[str, str] | None:
    """(server, owner/repo) of the repository's ``origin``, when it is on a GitHub server."""
    try:
        p = subprocess.run(["git", "remote", "get-url", "origin"], cwd=root,
                           capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    m = _REMOTE.fullmatch(p.stdout.strip()) if p.returncode == 0 else None
    return (m.group(1), f"{m.group(2)}/{m.group(3)}") if m else None


def badge_markdown(server: str, repository: str) -> str:
    """The README's badge: the data branch's ``badge.svg`` by the server's raw route (it
    works for a public repository with Pages off, and for a private one's members), linking
    to the refresh workflow's runs."""
    base = f"https://{server}/{repository}"
    return (f"[![agent-gate]({base}/raw/{_DATA_BRANCH}/badge.svg)]"
            f"({base}/actions/workflows/agent-gate-main.yml)")


@dataclass(frozen=True)
class InitResult:
    root: Path
    written: tuple[Path, ...]
    branch: str
    appended: tuple[Path, ...] = ()  # shared files the gate's lines were added to
    kept: tuple[Path, ...] = ()  # shared files left alone (they exist)
    action: str = DEFAULT_ACTION  # what the workflows' `uses:` names
    origin: tuple[str, str] | None = None  # (server, owner/repo) of origin, when on GitHub
    installed: bool = False  # the action is the commit this gate was installed from
    upstream: str = "anthropic"  # the model API the workflows give the gate a credential for

    @property
    def warnings(self) -> tuple[str, ...]:
        """What the user must hear at once: an ``--action`` that names a moving ref."""
        why = None if self.action == DEFAULT_ACTION else moving_ref(self.action)
        return () if why is None else (
            f"--action {self.action}: {why}: the workflows run whatever it points to when "
            f"they run; pin it: --action {self.action.rpartition('@')[0]}@<commit SHA>",)

    def _uses_step(self) -> str:
        if self.action == DEFAULT_ACTION:
            return (f"  5. The workflows' `uses: {DEFAULT_ACTION}` is a placeholder: replace it "
                    "in .github/workflows/agent-gate*.yml\n     with where you keep this "
                    "action, pinned at a commit SHA (see agent-gate's README, \"Use it in\n"
                    "     your repository\", or gate init --action OWNER/REPO@SHA), and commit:")
        if self.action.startswith("./"):
            return (f"  5. The workflows' `uses: {self.action}` runs the action from this "
                    "repository's checkout; commit:")
        if why := moving_ref(self.action):
            return (f"  5. The workflows' `uses: {self.action}` names a moving ref:\n"
                    f"     {why},\n     so whoever moves it changes what your workflows "
                    "run. Replace it in\n     .github/workflows/agent-gate*.yml with a commit "
                    "SHA (gate init --action\n     OWNER/REPO@SHA), and commit:")
        if self.installed:
            return (f"  5. The workflows' `uses:` is pinned to the gate you installed "
                    f"({self.action}); commit:")
        return f"  5. The workflows' `uses:` is pinned at a commit SHA ({self.action}); commit:"

    def next_steps(self) -> str:
        dependabot = "" if not self.kept else (
            f"\n  Your {_DEPENDABOT} was left alone: add the github-actions ecosystem to it "
            "(directory /) so the\n  SHA-pinned actions of the workflows stay current.\n")
        return f"""\
Next steps:
  1. gate validate                 # the example task is sound: verify.sh fails untouched and
                                   # passes after solution/solve.sh
  2. gate run --sim --agent oracle # a first run: the reference solutions, no model, no key
     gate run --sim                # the agent in gate.toml on the built-in simulator: it
                                   # checks the plumbing (tasks, tools, caching, the verdict)
  3. Try the gate on the simulator, no key needed:
       gate run --sim -o sim-base.json && gate baseline sim-base.json --baseline sim-baseline.json
       # change something, e.g. max_turns = 1 in gate.toml, or {{{{ now }}}} in agent/system.md
       gate run --sim -o pr.json && gate compare sim-baseline.json pr.json
     The simulator replays each task's solution/solve.sh and fails some runs the way models
     do. It shows what a change does to turns, cost and caching, and what breaks a task
     outright; it cannot judge the wording of a prompt, a tool or a skill (only a real model
     can). Such a change reads "not judged by the simulator" and exits 3, locally and on a
     pull request run with the action's sim input: [ci] sim_unjudged = "inconclusive" in
     gate.toml (the default; "pass" exits 0 and the comment still says it first). A system
     prompt below the model's minimum cacheable length (1,024 tokens for Sonnet, tools
     included) is not cached, here and through the API alike: gate run says so, and the
     cache-hit rate is then what the conversation caches once it is that long.
     A simulator baseline never judges a real run: `gate compare` calls that inconclusive.
  4. Replace tasks/{EXAMPLE_TASK} with tasks from your own project, and point [agent] in
     gate.toml at your agent (its model, agent/system.md, tools, or your own command).
{self._uses_step()}
       git add gate.toml agent tasks .github .gitignore && git commit
  6. {get_upstream(self.upstream).ci.adopt},
     and push to {self.branch}: the refresh makes the first baseline (6 runs per task, on the
     data branch agent-gate-data) and each later push pools more. Until one exists, a pull
     request is judged by a same-job A/B against its base commit's agent, at twice the cost.
     Or make one now and commit it: gate run && gate baseline results.json (with the credential
     of step 6 in your shell).
{self._pages_step()}{dependabot}"""

    def _pages_step(self) -> str:
        server, repo = self.origin or ("github.com", "OWNER/REPO")
        owner, name = repo.split("/", 1)
        site = (f"https://{owner.lower()}.github.io/{name}/" if server == "github.com"
                else "your Pages site: ")
        return f"""\
  7. The report in one click: in a public repository, Settings → Pages → Build and deployment
     → Deploy from a branch → {_DATA_BRANCH}, / (root). Main's refresh then publishes its
     report at
       {site}reports/main/
     and agent-gate-report.yml each pull request's at reports/pr-<number>/, which the PR's
     comment then links (docs/github.md, "The report on GitHub Pages"). A private or
     internal repository keeps the artifact link: a Pages site is public. The badge for
     your README (main's pass rate and verdict):
       {badge_markdown(server, repo)}
"""


def default_branch(root: Path) -> str:
    """The branch the refresh workflow runs on: origin's default, else the current one."""
    for args in (["git", "symbolic-ref", "--short", "refs/remotes/origin/HEAD"],
                 ["git", "symbolic-ref", "--short", "HEAD"]):
        try:
            p = subprocess.run(args, cwd=root, capture_output=True, text=True, timeout=30,
                               check=False)
        except (OSError, subprocess.SubprocessError):
            continue
        name = p.stdout.strip()
        if p.returncode == 0 and name:
            return name.removeprefix("origin/")
    return "main"


_COMMIT_SHA = re.compile(r"[0-9a-fA-F]{40}")


def moving_ref(action: str) -> str | None:
    """Why ``action``'s ref (after the ``@``) is no pin, e.g. "'v1' is a tag or branch, not a
    commit SHA"; None for a full commit SHA, or a local ``./path`` (which names no ref)."""
    if action.startswith("./"):
        return None
    ref = action.rpartition("@")[2]
    if _COMMIT_SHA.fullmatch(ref):
        return None
    return f"{ref!r} is a tag or branch, not a commit SHA"


def _pin_note(action: str) -> tuple[str, str]:
    """The workflows' header line on pinning, and the comment after the gate's own ``uses:``:
    the gate's action is never called pinned unless its ref is a commit SHA."""
    if action.startswith("./"):
        return ("# The other actions are pinned by commit SHA (.github/dependabot.yml keeps the "
                f"pins current);\n# agent-gate's own runs from this repository ({action}).", "")
    if moving_ref(action) is None:
        return ("# Actions are pinned by commit SHA; .github/dependabot.yml keeps the pins "
                "current.", "")
    return ("# The other actions are pinned by commit SHA (.github/dependabot.yml keeps the "
            "pins current);\n# agent-gate's own `uses:` names a moving ref (a tag or branch), "
            "so whoever moves it\n# changes what this workflow runs: replace it with a commit "
            "SHA.",
            "  # a moving ref (a tag or branch): replace it with a commit SHA")


def _render(template: str, branch: str, action: str = DEFAULT_ACTION,
            api: Upstream | None = None) -> str:
    """A template as written: a workflow's with the branch, the action, and how its measuring
    job gives the gate the upstream's credential (``api.ci``: the port's); ``gate.toml``
    with the upstream named (``[agent] upstream``) when it is not the default."""
    api = api or get_upstream("anthropic")
    text = resources.files("gate").joinpath(f"{_TEMPLATES}/{template}").read_text("utf-8")
    if template == "gate.toml" and api.name != "anthropic":
        return text.replace("[agent]\n", "[agent]\n# the model API the meter forwards to "
                            "(docs/upstreams.md); its credential is the CI job's\n"
                            f'upstream = "{api.name}"\n', 1)
    if not template.startswith("workflows/"):
        return text
    pin_note, uses_comment = _pin_note(action)
    # `<< >>`: a workflow's own `${{ }}` expressions pass through untouched
    env = jinja2.Environment(variable_start_string="<<", variable_end_string=">>",
                             block_start_string="<%", block_end_string="%>",
                             comment_start_string="<#", comment_end_string="#>",
                             keep_trailing_newline=True, undefined=jinja2.StrictUndefined,
                             autoescape=False)
    return env.from_string(text).render(branch=branch, action=action, pin_note=pin_note,
                                        uses_comment=uses_comment, ci=api.ci)


#: ``uses:`` of a repository action: owner/name[/path]@ref, nothing YAML or a shell would read
_ACTION_REF = re.compile(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_./-]+@[A-Za-z0-9_./-]+$"
                         r"|^\./[A-Za-z0-9_./-]*$")


def _check_action(action: str) -> str:
    if not _ACTION_REF.match(action) or ".." in action:
        raise BadInput(f"--action {action!r}: not an action reference (owner/repo@ref, e.g. "
                       "my-org/agent-gate@<commit sha>, or ./path)")
    return action


def init_repository(root: Path, *, branch: str | None = None,
                    action: str | None = None, upstream: str = "anthropic") -> InitResult:
    """Write the gate's files into ``root``; refuse (BadInput, nothing written) if any exists.
    The shared files (``.gitignore``, ``.github/dependabot.yml``) are appended to / kept.
    ``action``: the workflows' ``uses:``; None: the commit this gate was installed from, when
    known, else the placeholder. ``upstream``: the model API the suite runs on (a registered
    upstream: ``gate.toml``'s ``[agent] upstream`` and the workflows' credential steps)."""
    api = get_upstream(upstream, where="--upstream")
    installed = installed_action() if action is None else None
    action = _check_action(action or installed or DEFAULT_ACTION)
    root = root.resolve()
    if not root.is_dir():
        raise BadInput(f"{root}: not a directory")
    for _, rel, _ in _FILES:
        dest = root / rel
        if dest.exists() or dest.is_symlink():
            raise BadInput(f"{dest}: already exists; gate init never overwrites a file "
                           "(move it away and run gate init again)")
    branch = branch or default_branch(root)
    rendered = [(root / rel, _render(template, branch, action, api), executable)
                for template, rel, executable in _FILES]
    written: list[Path] = []
    for dest, text, executable in rendered:
        dest.parent.mkdir(parents=True, exist_ok=True)
        # "x": a file that appeared since the check above is still never overwritten
        try:
            with dest.open("x", encoding="utf-8", newline="\n") as fh:
                fh.write(text)
        except FileExistsError:
            raise BadInput(f"{dest}: already exists; gate init never overwrites a file") \
                from None
        if executable:
            os.chmod(dest, 0o755)
        written.append(dest)
    appended, kept = _shared_files(root, written)
    return InitResult(root, tuple(written), branch, tuple(appended), tuple(kept), action,
                      origin_repository(root), installed=installed is not None,
                      upstream=api.name)


def _shared_files(root: Path, written: list[Path]) -> tuple[list[Path], list[Path]]:
    """``.gitignore``: written, or the gate's lines appended to the one there (once).
    ``.github/dependabot.yml``: written, or left alone (the next steps say what to add)."""
    appended: list[Path] = []
    kept: list[Path] = []
    for template, rel in _SHARED:
        dest = root / rel
        text = _render(template, "")
        if dest.is_symlink() or (dest.exists() and not dest.is_file()):
            kept.append(dest)
        elif not dest.exists():
            dest.parent.mkdir(parents=True, exist_ok=True)
            with dest.open("x", encoding="utf-8", newline="\n") as fh:
                fh.write(text)
            written.append(dest)
        elif rel == _GITIGNORE:
            old = dest.read_text(encoding="utf-8", errors="replace")
            if text.splitlines()[0] not in old:
                with dest.open("a", encoding="utf-8", newline="\n") as fh:
                    fh.write(("" if old.endswith("\n") or not old else "\n") + "\n" + text)
                appended.append(dest)
        else:
            kept.append(dest)
    return appended, kept
