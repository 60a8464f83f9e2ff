"""Task suites for tests: ``write_task`` (either layout), tiny suites and a minimal agent tool loop
for the simulator, and the bundled suite with its skills (the conditions tests)."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import textwrap
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gate.core.tasks import Task
from tests.helpers import ROOT as REPO

if TYPE_CHECKING:  # the SDK takes ~2 s of CPU to import: every worker's conftest imports this
    import anthropic

    from gate.core.config import GateConfig

BASH_TOOL: dict[str, Any] = {
    "name": "bash",
    "description": "Run a shell command in the workspace and return its output.",
    "input_schema": {"type": "object", "properties": {"command": {"type": "string"}},
                     "required": ["command"]},
}
READ_TOOL: dict[str, Any] = {
    "name": "read_file",
    "description": "Read a file of the workspace.",
    "input_schema": {"type": "object", "properties": {"path": {"type": "string"}},
                     "required": ["path"]},
}


def write_sim_task(root: Path, task_id: str, *, prompt: str, verify: str, solve: str,
               difficulty: str | None = None, setup: str | None = None,
               starting: dict[str, str] | None = None) -> Path:
    """A simulator task directory in the SWE-lite / effectiveness layouts, from strings
    (task.toml's difficulty steers the simulated model)."""
    d = root / task_id
    (d / "solution").mkdir(parents=True)
    (d / "task.md").write_text(prompt)
    (d / "verify.sh").write_text("#!/usr/bin/env bash\nset -euo pipefail\ncd \"$WORK_DIR\"\n"
                                 + verify)
    (d / "solution" / "solve.sh").write_text(solve)
    if difficulty:
        (d / "task.toml").write_text(f'difficulty = "{difficulty}"\n')
    if setup:
        (d / "setup.sh").write_text(setup)
    for rel, text in (starting or {}).items():
        p = d / "starting" / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return d


def tiny_suite(root: Path) -> Path:
    """Three tiny tasks: an easy edit, a medium answer-style task, a hard multi-step one."""
    root.mkdir(parents=True, exist_ok=True)
    write_sim_task(
        root, "turn-mode-on", difficulty="easy",
        prompt="The service is off. In `config.txt`, change `mode=off` to `mode=on`.\n",
        starting={"config.txt": "name=demo\nmode=off\n"},
        solve="set -euo pipefail\nsed -i 's/^mode=off$/mode=on/' config.txt\n\n"
              "echo 'config.txt now says mode=on'\n",
        verify="grep -qx 'mode=on' config.txt\n",
    )
    write_sim_task(
        root, "count-lines", difficulty="medium",
        prompt="How many lines does `data.txt` have? Answer with the number.\n",
        setup="seq 1 37 > data.txt\n",
        solve="set -euo pipefail\nwc -l < data.txt\n",
        verify="grep -qw 37 .runner/final.txt\n",
    )
    write_sim_task(
        root, "build-report", difficulty="hard",
        prompt="Create `out/report.md` with a title and a summary, and copy `notes.txt` "
               "into `out/`.\n",
        starting={"notes.txt": "remember the milk\n"},
        solve="#!/usr/bin/env bash\nset -euo pipefail\n\nmkdir -p out\n\n"
              "cat > out/report.md <<'EOF'\n# Report\n\nAll good.\nEOF\n\n"
              "cp notes.txt out/\n\necho 'report written to out/report.md'\n",
        verify="grep -q '^# Report' out/report.md\ngrep -q 'All good.' out/report.md\n"
               "cmp notes.txt out/notes.txt\n",
    )
    return root


def judged_repo(parent: Path) -> Path:
    """A git repository whose main holds gate.toml (strict settings the checkout does not
    share), the tiny suite and a 20-replication baseline; the checkout's own gate.toml, a PR's
    that would loosen the gate, is never read by a judge of that PR."""
    import numpy as np

    from gate.compare._synthetic import reference_rates, synthetic_results
    from gate.core.results import write_results

    def git(*args: str) -> None:
        subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True)

    repo = parent / "repo"
    repo.mkdir()
    git("init", "-q", "-b", "main")
    git("config", "user.email", "t@example.invalid")
    git("config", "user.name", "t")
    (repo / "gate.toml").write_text('[agent]\nkind = "oracle"\n[suite]\ntasks = "tasks"\n'
                                    "[gate]\npermutations = 999\npower_simulations = 0\n")
    tiny_suite(repo / "tasks")
    write_results(repo / "baseline.json",
                  synthetic_results(reference_rates(), 20, np.random.default_rng(7)))
    git("add", "-A")
    git("commit", "-q", "-m", "base")
    (repo / "gate.toml").write_text('[agent]\nkind = "oracle"\n[suite]\ntasks = "tasks"\n'
                                    '[gate]\nalpha = 0.4\nblock_on = ["turns"]\n')
    return repo


def prepare_workspace(task: Task, parent: Path) -> Path:
    """A fresh workspace as the runner makes it: ``starting/`` copied, then ``setup.sh``."""
    parent.mkdir(parents=True, exist_ok=True)
    ws = Path(tempfile.mkdtemp(prefix=f"ws-{task.id}-", dir=parent))
    ws.rmdir()
    if task.starting_dir:
        shutil.copytree(task.starting_dir, ws)
    else:
        ws.mkdir(parents=True)
    if task.setup_script:
        subprocess.run(["bash", str(task.setup_script)], cwd=ws, check=True,
                       env=_script_env(task, ws), capture_output=True, timeout=30)
    return ws


def _script_env(task: Task, ws: Path) -> dict[str, str]:
    return {**os.environ, "WORK_DIR": str(ws), "TASK_DIR": str(task.path)}


@dataclass
class Episode:
    passed: bool
    turns: int
    final: str
    commands: list[str] = field(default_factory=list)
    stop_reason: str | None = None
    submitted: bool = False  # ended on the ``submit`` line (run_episode)


def run_episode(client: anthropic.Anthropic, task: Task, parent: Path, *,
                model: str = "claude-sonnet-5-5", tools: list[dict[str, Any]] | None = None,
                max_turns: int = 15, system: str | None = None,
                submit: str | None = None, shell: str = "bash") -> Episode:
    """A minimal agent: call the model, run its bash commands, stop at end_turn or max_turns,
    write ``.runner/final.txt``, then let ``verify.sh`` decide. With ``submit``, it also stops
    as mini-swe-agent does: when a command's output starts with that line; ``shell`` runs the
    commands (mini-swe-agent's is ``/bin/sh``)."""
    ws = prepare_workspace(task, parent)
    offered = [BASH_TOOL] if tools is None else tools
    messages: list[dict[str, Any]] = [{"role": "user", "content": task.prompt}]
    final, commands, stop = "", [], None
    turns, submitted = 0, False
    while turns < max_turns and not submitted:
        kwargs: dict[str, Any] = {"tools": offered} if offered else {}
        if system is not None:
            kwargs["system"] = system
        msg = client.messages.create(model=model, max_tokens=4096, messages=messages,
                                     **kwargs)
        turns += 1
        stop = msg.stop_reason
        content = [b.model_dump(exclude_none=True) for b in msg.content]
        messages.append({"role": "assistant", "content": content})
        final = "\n".join(b.text for b in msg.content if b.type == "text")
        uses = [b for b in msg.content if b.type == "tool_use"]
        if msg.stop_reason != "tool_use" or not uses:
            break
        results = []
        for use in uses:
            command = str(use.input["command"])  # type: ignore[index]
            commands.append(command)
            res = subprocess.run([shell, "-c", command], cwd=ws, capture_output=True,
                                 text=True, timeout=60, env=_script_env(task, ws))
            results.append({"type": "tool_result", "tool_use_id": use.id,
                            "content": (res.stdout + res.stderr) or "(no output)"})
            submitted = submitted or (submit is not None and res.returncode == 0
                                      and res.stdout.lstrip().startswith(submit + "\n"))
        messages.append({"role": "user", "content": results})
    (ws / ".runner").mkdir(exist_ok=True)
    (ws / ".runner" / "final.txt").write_text(final)
    verdict = subprocess.run(["bash", str(task.verify_script)], cwd=ws, capture_output=True,
                             env=_script_env(task, ws), timeout=30)
    return Episode(verdict.returncode == 0, turns, final, commands, stop, submitted)


def long_text(tokens: int, word: str = "context") -> str:
    """Text of about ``tokens`` estimated tokens (four bytes each)."""
    unit = f"{word} "
    return (unit * (tokens * 4 // len(unit) + 1))[: tokens * 4]


RATE = "find-api-rate-limit"  # target: context-offloading; irrelevant: git-commit-messages


def rooted_at(cfg: GateConfig, folder: Path) -> GateConfig:
    """``cfg`` (the repository's gate.toml, say) moved to ``folder``: its ``[agent]`` files
    copied there (an ``[agent]`` path stays inside gate.toml's folder), its tasks still its
    own; a test then puts a prompt of its own beside them (``system_prompt = "mine.md"``)."""
    for key in ("system_prompt", "skills"):
        if rel := getattr(cfg.agent, key):
            src, dst = cfg.root / rel, folder / rel
            dst.parent.mkdir(parents=True, exist_ok=True)
            if src.is_dir():
                shutil.copytree(src, dst, dirs_exist_ok=True)
            else:
                shutil.copy(src, dst)
    return cfg.model_copy(update={"root": folder, "suite": cfg.suite.model_copy(
        update={"tasks": str(cfg.path(cfg.suite.tasks))})})


def bundled_config(tmp_path: Path, extra: str = "") -> Path:
    """The bundled gate.toml's agent and suite, with the bundled skills (the agent's files
    copied beside it: ``[agent]`` paths stay inside gate.toml's folder)."""
    cfg = tmp_path / "gate.toml"
    (tmp_path / "agent").mkdir(exist_ok=True)
    shutil.copy(REPO / "agent" / "system.md", tmp_path / "agent" / "system.md")
    shutil.copytree(REPO / "skills", tmp_path / "skills", dirs_exist_ok=True)
    cfg.write_text('[agent]\nkind = "builtin"\nmodel = "claude-sonnet-5-5"\n'
                   'system_prompt = "agent/system.md"\nskills = "skills"\n'
                   f'[suite]\ntasks = "{REPO / "tasks"}"\n{extra}')
    return cfg


def write_task(
    root: Path,
    name: str,
    *,
    prompt: str = "Make hello.txt contain exactly the line `hi`.",
    verify: str = "set -euo pipefail\ngrep -qx hi hello.txt\n",
    solve: str | None = "echo hi > hello.txt\necho wrote hello.txt\n",
    setup: str | None = None,
    starting: dict[str, str] | None = None,
    toml: str | None = None,
    extra: dict[str, str] | None = None,
) -> Path:
    """Write a task directory; ``None`` leaves a file out."""
    d = root / name
    d.mkdir(parents=True)
    (d / "task.md").write_text(prompt)
    (d / "verify.sh").write_text(textwrap.dedent(verify))
    if solve is not None:
        (d / "solution").mkdir()
        (d / "solution" / "solve.sh").write_text(textwrap.dedent(solve))
    if setup is not None:
        (d / "setup.sh").write_text(textwrap.dedent(setup))
    for rel, body in (starting or {}).items():
        p = d / "starting" / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(body)
    if toml is not None:
        (d / "task.toml").write_text(toml)
    for rel, body in (extra or {}).items():
        p = d / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(body)
    return d
