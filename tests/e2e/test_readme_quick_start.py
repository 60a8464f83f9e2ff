"""The README's quick start, as written: its commands are read out of the README and run one
by one in a fresh git repository, ``gate`` on PATH running this checkout (the install line and
the ``cd`` aside: the checkout is what is under test, the fresh repository is the ``cd``). Each
command's exit code is the one its comment names, and the README's claims hold on the scaffold:
an unchanged agent passes, the task collapsing blocks, a timestamp in the prompt blocks (or
reads "unclear" with the runs that would settle it) and is never "No regression"."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.process import user_env

pytestmark = pytest.mark.slow
README = Path(__file__).resolve().parents[2] / "README.md"


def quick_start() -> list[str]:
    """The quick start's command lines, as the README prints them."""
    section = README.read_text(encoding="utf-8").split("\n## Quick start", 1)[1]
    section = section.split("\n## ", 1)[0]
    (block,) = re.findall(r"```bash\n(.*?)```", section, flags=re.S)
    return [line for line in block.splitlines() if line.strip()]


def _expected(line: str) -> int:
    found = re.search(r"\bexit (\d)\b", line.partition("  #")[2])
    return int(found.group(1)) if found else 0


def _headline(stdout: str) -> str:
    """The comparison's headline (after `gate run`'s own summary line)."""
    found = re.search(r"^(No regression|Regression|Inconclusive|.*unclear).*$", stdout,
                      flags=re.M | re.I)
    assert found, stdout
    return found.group(0)


def test_the_quick_start_as_written_holds_on_the_scaffold(tmp_path: Path) -> None:
    lines = quick_start()
    install, cd, *commands = lines
    assert install.startswith("python3 -m pip install ") and cd.startswith("cd your-repo ")
    repo = tmp_path / "your-repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    shim = bin_dir / "gate"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m gate "$@"\n')
    shim.chmod(0o755)
    env = user_env(PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
                   PYTHONPATH=str(README.parent))
    said: dict[str, str] = {}
    for line in commands:
        p = subprocess.run(["bash", "-c", line], cwd=repo, env=env, capture_output=True,
                           text=True, timeout=900)
        out = p.stdout + p.stderr
        expected = _expected(line)
        unclear = "{{ now }}" in said.get("prompt", "") and "unclear" in p.stdout
        assert p.returncode == expected or (unclear and p.returncode in (0, 3)), \
            f"{line}\nexit {p.returncode}, the README says {expected}\n{out[-3000:]}"
        if "gate compare" in line:
            said[line] = p.stdout
        if "agent/system.md" in line and line.startswith("sed"):
            said["prompt"] = (repo / "agent" / "system.md").read_text()
    compares = [said[line] for line in commands if "gate compare" in line]
    assert len(compares) == 3  # unchanged, collapsed, timestamp
    same, collapse, now = (_headline(c) for c in compares)
    assert same.startswith("No regression")
    assert collapse.startswith("Regression: pass rate 100.0 % → 0.0 %")
    assert now.startswith("Regression:") or "unclear" in now, now
    assert "{{ now }}" in said["prompt"]
