"""Processes: whether a command line starts the gate, whether a pid is still alive."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any


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
