"""Processes: the gate as a user starts it (``gate``) in a developer's environment
(``user_env``), whether a command line starts the gate, whether a pid is still alive."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from tests.helpers.docker import launch


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/status") as fh:
            state = next(ln for ln in fh if ln.startswith("State:"))
    except (FileNotFoundError, StopIteration, ProcessLookupError):
        return False
    return "Z" not in state.split()[1]


def starts_gate(args: Any) -> bool:
    """Whether a subprocess command line runs the gate (``python -m gate``, or the ``gate``
    console script)."""
    argv = [os.fsdecode(a) for a in args] if isinstance(args, Sequence) \
        and not isinstance(args, (str, bytes)) else [os.fsdecode(args)]
    if len(argv) == 1:
        argv = argv[0].split()
    return (bool(argv) and Path(argv[0]).name == "gate") \
        or any(argv[i:i + 2] == ["-m", "gate"] for i in range(len(argv) - 1))


def user_env(**extra: str) -> dict[str, str]:
    """This process's environment as a developer's shell has it: no Actions, gate or model API
    variables (a test sets the ones it means), with ``extra`` over it."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("GITHUB_", "GATE_", "ANTHROPIC_", "RUNNER_", "GH_"))}
    return {**env, **extra}


def gate(*args: str | os.PathLike[str], cwd: Path | None = None,
         env: Mapping[str, str] | None = None, base: Mapping[str, str] | None = None,
         timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """``python -m gate ARGS`` in a subprocess, as a user runs it: its environment is ``base``
    (this process's when None) with ``env`` over it. Its pid is recorded
    (``tests.helpers.docker.LAUNCHED``), so ``ours()`` finds the containers it made."""
    argv = [sys.executable, "-m", "gate", *map(os.fspath, args)]
    with launch(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=cwd,
                env={**(os.environ if base is None else base), **(env or {})}) as proc:
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            raise
    return subprocess.CompletedProcess(argv, proc.returncode, out, err)
