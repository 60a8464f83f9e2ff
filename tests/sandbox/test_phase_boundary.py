"""The agent/verifier phase boundary of a Harbor task, through ``gate run`` on a real container.

A process the agent phase leaves behind must not outlive it into the verifier, whatever it
looks like: one holding a listening socket, one named ``sleep 3600`` under pid 1 (the look of
the container's own keep-alive sleep), one whose command line carries the gate's own listing
marker. Each kept rewriting ``/logs/verifier/reward.txt`` to 1 after ``test.sh`` wrote 0, and
the task passed with 0 turns. Where the suite's owner lets an agent's services run into the
verifier (``[suite].reward_unprotected``), the reward is read twice and a change between the
reads fails the run as tampering.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers.docker import IMAGE, ours
from tests.helpers.harbor import harbor_task
from tests.helpers.process import gate

#: rewrites the reward to 1 forever, whole (never an empty file), forking nothing: as the
#: verifier empties /logs/verifier, it recreates it
LOOP = """import os, time
while True:
    try:
        os.makedirs("/logs/verifier", exist_ok=True)
        with open("/logs/verifier/.r", "w") as fh:
            fh.write("1\\n")
        os.replace("/logs/verifier/.r", "/logs/verifier/reward.txt")
    except OSError:
        pass
    time.sleep(0.05)
"""
HOP = """import os, time
last = 0.0
while True:
    try:
        if os.fork():
            os._exit(0)
    except OSError:
        continue
    if time.monotonic() - last > 0.05:
        last = time.monotonic()
        try:
            os.makedirs("/logs/verifier", exist_ok=True)
            with open(f"/logs/verifier/.r{os.getpid()}", "w") as fh:
                fh.write("1\\n")
            os.replace(f"/logs/verifier/.r{os.getpid()}", "/logs/verifier/reward.txt")
        except OSError:
            pass
"""
SOCKET = """import socket
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", 9911))
s.listen()
"""
DETACH = "> /dev/null 2>&1 < /dev/null &)\n"
ATTACKS = {
    # (a) a process holding a listening socket: what the phase boundary took for a service
    "socket": f"cat > /tmp/a.py <<'EOF'\n{SOCKET}{LOOP}EOF\n(setsid python3 /tmp/a.py {DETACH}",
    # (b) named `sleep 3600` under pid 1: the look of the keep-alive loop's own sleep
    "sleep": f"cat > /tmp/a.py <<'EOF'\n{LOOP}EOF\n"
             f"(setsid bash -c 'exec -a \"sleep 3600\" python3 < /tmp/a.py' {DETACH}",
    # (c) the gate's own listing marker in its command line
    "marker": f"cat > /tmp/a.py <<'EOF'\n{LOOP}EOF\n"
              f"(setsid python3 -c \"$(cat /tmp/a.py)\" : gate-process-listing {DETACH}",
    # (d) never at one pid for long: forks, its parent exits, and the child goes on (the
    # listing never sees it, or a listed pid is gone by the time it is killed)
    "hopper": f"cat > /tmp/a.py <<'EOF'\n{HOP}EOF\n(setsid python3 /tmp/a.py {DETACH}",
}
#: the verifier writes 0, and takes its time before and after
HONEST_ZERO = "#!/bin/bash\nsleep 1\necho 0 > /logs/verifier/reward.txt\nsleep 1\n"


def _attack_task(suite: Path, name: str, attack: str) -> None:
    d = harbor_task(suite, name, test=HONEST_ZERO,
                    dockerfile=f"FROM {IMAGE}\nWORKDIR /app\nCOPY attack.sh /opt/attack.sh\n")
    (d / "environment" / "attack.sh").write_text(f"#!/bin/bash\n{attack}sleep 1\necho left\n")


def _run(tmp_path: Path, suite: Path, unprotected: list[str]) -> dict[str, dict]:
    cfg = tmp_path / "gate.toml"
    cfg.write_text('[agent]\nkind = "command"\ncommand = "bash /opt/attack.sh"\n'
                   f'[suite]\ntasks = "{suite}"\n'
                   + (f"reward_unprotected = {json.dumps(unprotected)}\n" if unprotected else ""))
    out = tmp_path / "r.json"
    p = gate("run", "--config", cfg, "-k", "1", "-j", "2", "-o", out, "--sim", timeout=600)
    assert out.exists(), p.stdout + p.stderr
    return {r["task"]: r for r in json.loads(out.read_text())["runs"]}


@pytest.mark.docker
@pytest.mark.slow
@pytest.mark.usefixtures("engine")
def test_nothing_the_agent_phase_started_outlives_it_whatever_it_looks_like(
        tmp_path: Path) -> None:
    suite = tmp_path / "suite"
    for name, attack in ATTACKS.items():
        _attack_task(suite, name, attack)
    runs = _run(tmp_path, suite, [])
    assert set(runs) == set(ATTACKS)
    for name, run in sorted(runs.items()):
        assert run["turns"] == 0, run
        assert run["status"] == "failed", (name, run["status"], run["reason"])
        assert run["score"] == {"reward": 0.0}, (name, run["reason"])
        # the one the agent left, named; the gate's own relay stopped too, never named
        assert "the agent phase left 1 process running, stopped before the verifier" in (
            run["reason"]), (name, run["reason"])
        assert "relay.py" not in run["reason"], (name, run["reason"])
    assert ours() == []


@pytest.mark.docker
@pytest.mark.slow
@pytest.mark.usefixtures("engine")
def test_a_service_kept_for_the_verifier_that_rewrites_the_reward_is_tampering(
        tmp_path: Path) -> None:
    suite = tmp_path / "suite"
    _attack_task(suite, "served", ATTACKS["socket"])
    (run,) = _run(tmp_path, suite, ["served"]).values()
    assert run["status"] == "failed", run
    assert run["reason"].startswith("reward changed after the verifier wrote it: tampering"), \
        run["reason"]
    assert ours() == []
