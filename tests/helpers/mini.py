"""mini-swe-agent for the tests that run it as a command agent: installed once by the
documented script (docs/mini-swe-agent/install.sh) into a cached prefix on the host.

``$GATE_MINI_PREFIX`` names an existing install (``.ci/run`` makes one); otherwise the prefix is
``~/.cache/agent-gate-tests/mini-swe-agent-<digest of install.sh>`` (``$XDG_CACHE_HOME``
honoured), built when missing under a file lock (one build for every xdist worker), so the
package index is asked once per version of the script, not once per test run. A bumped
``VERSION`` in the script is a new digest, a new prefix."""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
INSTALL = REPO / "docs" / "mini-swe-agent" / "install.sh"


def _cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "agent-gate-tests"


def installed() -> tuple[Path | None, str]:
    """(the ``mini-gate`` wrapper, "") once installed, or (None, why not)."""
    named = os.environ.get("GATE_MINI_PREFIX")
    if named:
        wrapper = Path(named) / "bin" / "mini-gate"
        return (wrapper, "") if wrapper.is_file() else (None, f"no {wrapper}")
    digest = hashlib.sha256(INSTALL.read_bytes()).hexdigest()[:12]
    root = _cache_root()
    root.mkdir(parents=True, exist_ok=True)
    prefix = root / f"mini-swe-agent-{digest}"
    wrapper = prefix / "bin" / "mini-gate"
    with (root / "mini-swe-agent.lock").open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another worker's install of the same: wait for it
        if wrapper.is_file():
            return wrapper, ""
        print(f"tests: installing mini-swe-agent into {prefix} with {INSTALL.name} (once)",
              file=sys.__stderr__, flush=True)
        shutil.rmtree(prefix, ignore_errors=True)  # a half-made one
        p = subprocess.run(["sh", str(INSTALL)], env={**os.environ, "PREFIX": str(prefix)},
                           capture_output=True, text=True, timeout=900, check=False)
        if p.returncode != 0 or not wrapper.is_file():
            shutil.rmtree(prefix, ignore_errors=True)
            tail = (p.stderr.strip() or p.stdout.strip() or "no output").splitlines()[-1]
            return None, f"{INSTALL.name} failed (exit {p.returncode}): {tail}"
    return wrapper, ""
