"""``gate validate`` on a task whose image does not build, through the real CLI and a real
Docker build: the end of the build's output is shown as the lines it wrote, however the engine
chunked it (a writer that flushes a character at a time came out one character a line, and
the cause, "Could not resolve host ...", was lost)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.helpers.process import gate

#: apt's last words offline, written a character at a time (as a progress-writing tool does),
#: after a line written whole
SLOW_WRITER = (
    'echo "Get:1 http://deb.debian.org/debian bookworm InRelease"; '
    "msg='E: Could not resolve host: deb.debian.org'; i=1; "
    'while [ $i -le ${#msg} ]; do printf "%s" "$(echo "$msg" | cut -c$i)"; sleep 0.03; '
    "i=$((i+1)); done; printf '\\r\\n'; printf 'Reading 10%%\\rReading 100%%\\n'; exit 100")


@pytest.mark.docker
@pytest.mark.slow
def test_a_failed_builds_output_is_shown_as_its_lines(tmp_path: Path) -> None:
    from tests.helpers.docker import IMAGE, engine_problem

    if why := engine_problem():
        pytest.fail(why) if os.environ.get("GATE_REQUIRE_DOCKER") == "1" else pytest.skip(why)
    task = tmp_path / "tasks" / "offline"
    (task / "environment").mkdir(parents=True)
    (task / "task.md").write_text("Do it.\n")
    (task / "verify.sh").write_text("#!/bin/sh\ntest -f done\n")
    (task / "task.toml").write_text("[environment]\n")
    (task / "environment" / "Dockerfile").write_text(f"FROM {IMAGE}\nRUN {SLOW_WRITER}\n")
    (tmp_path / "gate.toml").write_text('[suite]\ntasks = "tasks"\nsandbox = "docker"\n')

    p = gate("validate", cwd=tmp_path, timeout=600)
    assert p.returncode == 1, p.stdout + p.stderr
    below = p.stdout.split("offline:\n", 1)[1].splitlines()
    tail = below[below.index("    the build's output ends:") + 1:]
    assert "    Get:1 http://deb.debian.org/debian bookworm InRelease" in tail, p.stdout
    at = tail.index("    E: Could not resolve host: deb.debian.org")  # one line, whole
    assert tail[at + 1] == "    Reading 100%", tail  # a carriage return: what was shown last
    assert not [ln for ln in tail if len(ln.strip()) == 1], tail  # no line of one character
