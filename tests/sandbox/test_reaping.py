"""Nothing outlives its run: `setsid` daemons of scripts and agent tools, Ctrl-C, SIGKILL.

Every test plants processes whose argv carries a unique marker and scans /proc for it.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from gate.core.results import load_results
from gate.sandbox import containment
from tests.helpers.process import gate

# where the kernel can contain a run (this machine's cgroup v2 is writable): the tests that
# need it; elsewhere they are skipped with the reason, and the launcher is all there is
CGROUP_KILL = containment() == "cgroup"

pytestmark = [pytest.mark.skipif(sys.platform != "linux", reason="the subreaper is Linux-only"),
              pytest.mark.slow]


def _marked(marker: str) -> list[int]:
    """Live processes whose argv holds ``marker``."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
            state = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if marker.encode() in cmdline and state != "Z":
            found.append(int(entry))
    return found


def _wait_until(cond: object, timeout: float) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if cond():  # type: ignore[operator]
            return True
        time.sleep(0.05)
    return bool(cond())  # type: ignore[operator]


@pytest.fixture
def marker() -> Iterator[str]:
    m = f"gate-test-daemon-{uuid.uuid4().hex[:12]}"
    yield m
    for pid in _marked(m):  # a failing test leaves nothing behind either
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)


def _daemons(marker: str, where: str, flag: Path) -> str:
    """Shell lines that start two `setsid` daemons (one still holding stdout) and say so."""
    return (f"setsid bash -c 'exec -a {marker}-{where}-a sleep 1000' </dev/null >/dev/null 2>&1 &\n"
            f"setsid bash -c 'exec -a {marker}-{where}-b sleep 1000' &\n"
            f"echo {where} >> {flag}\n")


def test_setsid_daemons_of_scripts_die_with_their_run(make_task, suite_dir: Path,
                                                      tmp_path: Path, marker: str) -> None:
    flag = tmp_path / "started"
    for i in range(4):
        make_task(
            f"t{i}",
            setup=_daemons(marker, f"setup{i}", flag),
            solve=_daemons(marker, f"solve{i}", flag) + "echo hi > hello.txt\n",
            # the run's verify holds on a second, so the runs overlap (-j 4)
            verify=_daemons(marker, f"verify{i}", flag) + "sleep 1\ngrep -qx hi hello.txt\n",
        )
    out = tmp_path / "results.json"
    p = gate("run", "--tasks", str(suite_dir), "--agent", "oracle", "-k", "2", "-j", "4",
             "-o", str(out))
    assert p.returncode == 0, p.stderr
    assert [r.status for r in load_results(out).runs] == ["passed"] * 8  # no run killed another
    assert len(flag.read_text().split()) == 24  # every script did start its daemons
    assert _marked(marker) == []


def test_setsid_daemon_of_an_agent_tool_dies(make_task, suite_dir: Path, tmp_path: Path,
                                             marker: str) -> None:
    """The simulator replays solve.sh through the builtin agent's bash tool."""
    flag = tmp_path / "started"
    make_task("tool", toml='difficulty = "easy"\n',
              solve=_daemons(marker, "tool", flag) + "echo hi > hello.txt\n")
    out = tmp_path / "results.json"
    p = gate("run", "--sim", "--tasks", str(suite_dir), "-k", "1", "--seed", "1",
             "-o", str(out))
    assert p.returncode == 0, p.stderr
    events = [json.loads(line) for line in
              (tmp_path / "results.transcripts" / "tool-r0.jsonl").read_text().splitlines()]
    assert any(e["type"] == "tool" and marker in json.dumps(e["input"]) for e in events)
    assert flag.read_text().split() == ["tool"]
    assert _marked(marker) == []


def test_setsid_daemon_of_a_command_agent_dies(make_task, suite_dir: Path, tmp_path: Path,
                                               marker: str) -> None:
    flag = tmp_path / "started"
    make_task("cmd")
    script = tmp_path / "agent.sh"
    script.write_text(_daemons(marker, "agent", flag) + "echo hi > hello.txt\n")
    cfg = tmp_path / "gate.toml"
    cfg.write_text(f'[agent]\nkind = "command"\ncommand = "bash {script}"\n'
                   f'[suite]\ntasks = "{suite_dir}"\n')
    p = gate("run", "--sim", "--config", str(cfg), "-k", "1", "-o", str(tmp_path / "r.json"))
    assert p.returncode == 0, p.stderr
    assert flag.read_text().split() == ["agent"]
    assert _marked(marker) == []


def _start_hanging_run(make_task, suite_dir: Path, tmp_path: Path,
                       marker: str) -> subprocess.Popen[str]:
    flag = tmp_path / "started"
    for i in range(2):
        make_task(f"hang{i}", solve=_daemons(marker, f"hang{i}", flag)
                  + f"exec -a {marker}-fg{i} sleep 1000\n")
    gate = subprocess.Popen([sys.executable, "-m", "gate", "run", "--tasks", str(suite_dir),
                             "--agent", "oracle", "-j", "2", "-k", "1",
                             "-o", str(tmp_path / "r.json")],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    # both runs are under way: 2 daemons + 1 foreground process each
    assert _wait_until(lambda: len(_marked(marker)) == 6, 60), _marked(marker)
    return gate


def test_everything_dies_with_the_gate_on_sigkill(make_task, suite_dir: Path, tmp_path: Path,
                                                  marker: str) -> None:
    gate = _start_hanging_run(make_task, suite_dir, tmp_path, marker)
    gate.kill()
    gate.communicate(timeout=10)
    assert _wait_until(lambda: _marked(marker) == [], 5), _marked(marker)


def test_sigterm_stops_everything_without_waiting_for_the_runs(make_task, suite_dir: Path,
                                                               tmp_path: Path,
                                                               marker: str) -> None:
    """SIGTERM is the Ctrl-C path: the runs are cancelled and their processes killed, the
    results file says the run was interrupted (how fast is bench/'s business)."""
    gate = _start_hanging_run(make_task, suite_dir, tmp_path, marker)
    gate.send_signal(signal.SIGTERM)
    # every run sleeps 1000 s: a gate that waited for its runs would time out here
    _, err = gate.communicate(timeout=180)  # far below 1000 s, far above a loaded runner
    assert gate.returncode == 130 and "interrupted" in err and "Traceback" not in err, err
    results = load_results(tmp_path / "r.json")
    assert results.runs == [] and results.interrupted is not None
    assert _wait_until(lambda: _marked(marker) == [], 5), _marked(marker)


def _kills_its_launcher(marker: str, where: str, flag: Path) -> str:
    """Shell lines that start `setsid` daemons, then SIGKILL the launcher above the script (its
    parent), so the launcher cannot reap them; the script goes on."""
    return _daemons(marker, where, flag) + (
        "sleep 0.2\n"
        'launcher=$PPID\n'
        'kill -9 "$launcher"\n'
        f"echo killed-launcher-{where} >> {flag}\n")


@pytest.mark.skipif(not CGROUP_KILL, reason="needs a writable cgroup v2 with cgroup.kill")
def test_a_script_that_kills_its_launcher_leaves_nothing_behind(
        make_task, suite_dir: Path, tmp_path: Path, marker: str) -> None:
    """The subreaper is a process of the task's user: a task can kill it. The run's cgroup is
    the kernel's: every process of the run is in it, whatever it does, and dies with it."""
    flag = tmp_path / "started"
    make_task("t", solve=_kills_its_launcher(marker, "solve", flag) + "echo hi > hello.txt\n")
    p = gate("run", "--tasks", str(suite_dir), "--agent", "oracle", "-k", "1",
             "-o", str(tmp_path / "r.json"))
    assert p.returncode in (0, 1, 3), p.stderr
    assert "killed-launcher-solve" in flag.read_text()  # the launcher really was killed
    assert _wait_until(lambda: _marked(marker) == [], 2), _marked(marker)


@pytest.mark.skipif(not CGROUP_KILL, reason="needs a writable cgroup v2 with cgroup.kill")
def test_a_command_agent_that_kills_its_launcher_leaves_nothing_behind(
        make_task, suite_dir: Path, tmp_path: Path, marker: str) -> None:
    flag = tmp_path / "started"
    make_task("cmd")
    script = tmp_path / "agent.sh"
    script.write_text(_kills_its_launcher(marker, "agent", flag) + "echo hi > hello.txt\n")
    cfg = tmp_path / "gate.toml"
    cfg.write_text(f'[agent]\nkind = "command"\ncommand = "bash {script}"\n'
                   f'[suite]\ntasks = "{suite_dir}"\n')
    p = gate("run", "--sim", "--config", str(cfg), "-k", "1", "-o", str(tmp_path / "r.json"))
    assert p.returncode in (0, 1, 3), p.stderr
    assert "killed-launcher-agent" in flag.read_text()
    assert _wait_until(lambda: _marked(marker) == [], 2), _marked(marker)
