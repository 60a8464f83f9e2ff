"""Simulator runs of a few bundled tasks, started side by side: what the report's browser
tests and the one-verdict test measure (the repository's own agent, a seed each)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from tests.helpers import ROOT

#: three bundled tasks the simulated model mostly solves in a few turns
TASKS = ("fix-version-compare", "fix-slugify-whitespace", "find-api-rate-limit")


def gate_popen(*args: str | Path, cwd: Path) -> subprocess.Popen[str]:
    """``python -m gate ARGS`` started, not waited for (so runs go side by side)."""
    return subprocess.Popen([sys.executable, "-m", "gate", *(str(a) for a in args)], cwd=cwd,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def sim_run(tmp: Path, name: str, seed: int, *extra: str | Path,
            config: Path = ROOT / "gate.toml", tasks: tuple[str, ...] = TASKS, k: int = 3
            ) -> subprocess.Popen[str]:
    """``gate run --sim`` of ``tasks`` (``k`` runs each) into ``tmp/<name>.json``."""
    picked = [a for t in tasks for a in ("--task", t)]
    return gate_popen("run", "--config", config, "--tasks", ROOT / "tasks", "--sim", *picked,
                      "-k", str(k), "-j", "2", "--seed", str(seed), *extra,
                      "-o", tmp / f"{name}.json", cwd=tmp)


def one_turn_config(tmp: Path) -> Path:
    """The repository's agent with ``max_turns = 1``: every run stops before it can pass."""
    folder = tmp / "one-turn"
    folder.mkdir()
    for part in ("agent", "skills"):
        shutil.copytree(ROOT / part, folder / part)
    text = (ROOT / "gate.toml").read_text()
    assert "max_turns = 30" in text
    (folder / "gate.toml").write_text(text.replace("max_turns = 30", "max_turns = 1"))
    return folder / "gate.toml"
