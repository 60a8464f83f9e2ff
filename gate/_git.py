"""The few git facts the gate needs, read without changing anything."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from gate.secrets import scrubbed_env


def current_commit(cwd: str | Path | None = None) -> str | None:
    """``GITHUB_SHA`` in Actions, else ``git rev-parse HEAD``, else None."""
    sha = os.environ.get("GITHUB_SHA")
    if sha:
        return sha
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=cwd, capture_output=True, text=True, timeout=10,
            check=False, env=scrubbed_env(),
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None
