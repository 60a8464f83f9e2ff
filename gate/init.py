"""``gate init``: adopt the gate in an existing repository with one command.

Writes a commented ``gate.toml``, one example task in the suite layout (``setup.sh``,
``task.md``, ``verify.sh``, ``task.toml``, ``solution/solve.sh``) and the two workflows (the PR
check and the baseline refresh on the default branch). It never overwrites: when any file it
would write exists, it writes nothing and names the file (exit 2). The files come from
``gate/templates/init``; the workflows name the repository's default branch.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import jinja2

from gate.errors import BadInput

EXAMPLE_TASK = "example-count-words"
_TEMPLATES = "templates/init"
# (template, destination relative to the repository root, executable)
_FILES: tuple[tuple[str, str, bool], ...] = (
    ("gate.toml", "gate.toml", False),
    ("task/task.md", f"tasks/{EXAMPLE_TASK}/task.md", False),
    ("task/task.toml", f"tasks/{EXAMPLE_TASK}/task.toml", False),
    ("task/setup.sh", f"tasks/{EXAMPLE_TASK}/setup.sh", True),
    ("task/verify.sh", f"tasks/{EXAMPLE_TASK}/verify.sh", True),
    ("task/solution/solve.sh", f"tasks/{EXAMPLE_TASK}/solution/solve.sh", True),
    ("workflows/agent-gate.yml", ".github/workflows/agent-gate.yml", False),
    ("workflows/agent-gate-main.yml", ".github/workflows/agent-gate-main.yml", False),
)


@dataclass(frozen=True)
class InitResult:
    root: Path
    written: tuple[Path, ...]
    branch: str

    def next_steps(self) -> str:
        return f"""\
Next steps:
  1. gate validate                      # the example task is sound: verify.sh fails untouched,
                                        # passes after solution/solve.sh
  2. gate run --sim --agent oracle      # a first run, no model and no key
     gate run --sim                     # the agent in gate.toml, on the built-in simulator
  3. Replace tasks/{EXAMPLE_TASK} with tasks from your own project, and point [agent] in
     gate.toml at your agent (its model, system prompt, tools, or your own command).
  4. Make the first baseline and commit it with the rest:
       gate run && gate baseline results.json     # needs ANTHROPIC_API_KEY
       git add gate.toml tasks .github/workflows baseline.json && git commit
     (or push without one: the refresh on {self.branch} writes it; until then each PR is
     judged by a same-job A/B against its base commit's agent, at twice the cost)
  5. Add the repository secret ANTHROPIC_API_KEY (Settings → Secrets and variables → Actions),
     push to {self.branch}, and open a pull request: the check comments on it.
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


def _render(template: str, branch: str) -> str:
    text = resources.files("gate").joinpath(f"{_TEMPLATES}/{template}").read_text("utf-8")
    if not template.startswith("workflows/"):
        return text
    # `<< >>`: a workflow's own `${{ }}` expressions pass through untouched
    env = jinja2.Environment(variable_start_string="<<", variable_end_string=">>",
                             block_start_string="<%", block_end_string="%>",
                             comment_start_string="<#", comment_end_string="#>",
                             keep_trailing_newline=True, undefined=jinja2.StrictUndefined,
                             autoescape=False)
    return env.from_string(text).render(branch=branch)


def init_repository(root: Path, *, branch: str | None = None) -> InitResult:
    """Write the gate's files into ``root``; refuse (BadInput, nothing written) if any exists."""
    root = root.resolve()
    if not root.is_dir():
        raise BadInput(f"{root}: not a directory")
    for _, rel, _ in _FILES:
        dest = root / rel
        if dest.exists() or dest.is_symlink():
            raise BadInput(f"{dest}: already exists; gate init never overwrites a file "
                           "(move it away and run gate init again)")
    branch = branch or default_branch(root)
    rendered = [(root / rel, _render(template, branch), executable)
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
    return InitResult(root, tuple(written), branch)
