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


def _run(tmp_path: Path, suite: Path, unprotected: list[str],
         exempt: list[str] | None = None) -> dict[str, dict]:
    """``exempt``: tasks off the tamper check (one whose attack also changes a command the
    verifier runs, so that the phase boundary is what the verdict says of)."""
    cfg = tmp_path / "gate.toml"
    cfg.write_text('[agent]\nkind = "command"\ncommand = "bash /opt/attack.sh"\n'
                   f'[suite]\ntasks = "{suite}"\n'
                   + (f"reward_unprotected = {json.dumps(unprotected)}\n" if unprotected else "")
                   + (f"tamper_exempt = {json.dumps(exempt)}\n" if exempt else ""))
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
    # the kept service writes into /logs/verifier all along: either the gate's reset of that
    # folder before the verifier loses the race to it (its step fails after the agent phase,
    # the agent's doing since round five; it was infra) or the reward changes after test.sh
    assert run["reason"].startswith((
        "reward changed after the verifier wrote it: tampering",
        "the gate's folder-reset step failed after the agent phase")), run["reason"]
    assert ours() == []


#: padding: a shell waiting on a sleep, its command line ~240 kB (two arguments of 120 kB,
#: each under the kernel's 128 kB limit on one argument)
PAD = ("(setsid sh -c 'sleep 1000; :' \"$X\" \"$X\" > /dev/null 2>&1 < /dev/null &)\n")
#: (e) buried in the process listing: the reward loop started between padding processes whose
#: command lines make the listing larger than an exec's kept output (1 MB, head and tail), so
#: that its line fell in the cut middle, unlisted, unkilled
BURIED = ("X=$(head -c 120000 /dev/zero | tr '\\0' x)\n" + PAD * 3
          + f"cat > /tmp/a.py <<'EOF'\n{LOOP}EOF\n(setsid python3 /tmp/a.py {DETACH}" + PAD * 3)


@pytest.mark.docker
@pytest.mark.slow
@pytest.mark.usefixtures("engine")
def test_a_process_buried_in_a_listing_too_long_to_keep_is_stopped_too(
        tmp_path: Path) -> None:
    """Command lines are the agent's to make long, past what an exec's output keeps: the
    first round's listing is cut in the middle, but each round kills what it saw and the
    boundary lists again until a round finds nothing, so the buried loop is found once the
    padding around it is gone (and a table that never shrinks fails the run)."""
    suite = tmp_path / "suite"
    _attack_task(suite, "buried", BURIED)
    (run,) = _run(tmp_path, suite, []).values()
    assert run["status"] == "failed", (run["status"], run["reason"])
    assert run["score"] == {"reward": 0.0}, run["reason"]
    assert "the agent phase left" in run["reason"], run["reason"]
    assert ours() == []


#: the trojan: a process called ``sleep 3600`` (one argument, so its command line reads as
#: the keep-alive's sleep) that waits for the verifier's tests and then does the task
TROJAN = """import os, time
while not os.path.exists("/tests/test.sh"):
    time.sleep(0.02)
with open("/app/count.txt", "w") as fh:
    fh.write("3\\n")
"""
#: a root agent replaces /usr/bin/sleep with the trojan, writes a line to the keep-alive's
#: stdin, and kills the keep-alive's sleep (if it has one) for its loop to start the trojan
TROJAN_ATTACK = f"""cat > /opt/t.py <<'EOF'
{TROJAN}EOF
rm -f /usr/bin/sleep
printf '#!/bin/bash\\nexec -a "sleep 3600" python3 < /opt/t.py\\n' > /usr/bin/sleep
chmod 755 /usr/bin/sleep
echo poke > /proc/1/fd/0
for p in /proc/[0-9]*; do
  [ "$(tr '\\0' ' ' < "$p/cmdline" 2>/dev/null)" = "sleep 3600 " ] && kill "${{p#/proc/}}"
done
"""
#: the verifier gives the task's file a few seconds to appear (sleep itself is the agent's)
PATIENT_TEST = """#!/bin/bash
for i in $(seq 30); do
  [ -s /app/count.txt ] && break
  python3 -c 'import time; time.sleep(0.1)'
done
if [ "$(cat /app/count.txt 2>/dev/null)" = "3" ]; then r=1; else r=0; fi
echo "$r" > /logs/verifier/reward.txt
"""


@pytest.mark.docker
@pytest.mark.slow
@pytest.mark.usefixtures("engine")
def test_a_trojan_sleep_is_never_the_keep_alives(tmp_path: Path) -> None:
    """The keep-alive starts no process, so nothing is spared by its name: a root agent that
    replaced ``/usr/bin/sleep`` with a trojan and killed the keep-alive's ``sleep 3600`` had
    the loop start the trojan, which (called ``sleep 3600``, a child of pid 1 in its session)
    was spared, wrote the task's answer once the verifier's tests arrived, and passed."""
    suite = tmp_path / "suite"
    d = harbor_task(suite, "trojan", test=PATIENT_TEST,
                    dockerfile=f"FROM {IMAGE}\nWORKDIR /app\nCOPY attack.sh /opt/attack.sh\n")
    (d / "environment" / "attack.sh").write_text(f"#!/bin/bash\n{TROJAN_ATTACK}")
    # the trojan replaced /usr/bin/sleep: the tamper check alone fails the run before the
    # verifier (gate/sandbox/_tamper.py); off it, the phase boundary must hold on its own
    (run,) = _run(tmp_path, suite, [], exempt=["trojan"]).values()
    assert run["turns"] == 0, run
    assert run["status"] == "failed", (run["status"], run["reason"])
    assert run["score"] == {"reward": 0.0}, run["reason"]
    assert ours() == []


#: pid 1's CPU time (clock ticks), its command line, and its children's pids
PID1 = ("set -- $(sed 's/.*) //' /proc/1/stat); echo \"cpu $(($12 + $13))\"; "
        "echo \"cmd $(tr '\\0' ' ' < /proc/1/cmdline)\"; for p in /proc/[0-9]*; do "
        "set -- $(sed 's/.*) //' \"$p/stat\" 2>/dev/null); "
        "[ \"$2\" = 1 ] && echo \"child ${p#/proc/}\"; done; true")
#: an ENTRYPOINT that hands the command a closed stdin
NO_STDIN = 'ENTRYPOINT ["/bin/sh", "-c", "exec \\"$@\\" < /dev/null", "entry"]\n'


@pytest.mark.docker
@pytest.mark.slow
@pytest.mark.usefixtures("engine")
@pytest.mark.parametrize(("entrypoint", "keeper"), [
    ("", "sh -c trap 'exit 0' TERM; while read _; do :; done; exec sleep infinity"),
    (NO_STDIN, "sleep infinity")])
def test_the_keep_alive_starts_nothing_and_waits_without_cpu(
        tmp_path: Path, entrypoint: str, keeper: str) -> None:
    """Through the sandbox's own container: pid 1 is the keep-alive, with no child (nothing to
    renew, so nothing to spare by name), idle, and still there after a line written to its
    stdin and the phase boundary's stop-and-resume; an ENTRYPOINT that closed stdin leaves
    the image's ``sleep infinity`` in the same process."""
    import time

    from gate.core.tasks import load_task
    from gate.sandbox import SandboxOptions
    from gate.sandbox._docker import DockerSandboxProvider

    d = harbor_task(tmp_path / "suite", "idle", dockerfile=f"FROM {IMAGE}\n{entrypoint}")
    with DockerSandboxProvider(SandboxOptions()) as provider:
        box = provider.create(load_task(d), "idle-r0")
        try:
            def pid1() -> tuple[int, str, list[str]]:
                said = box.run_as(["sh", "-c", PID1], user="0", env={}, timeout=30).stdout
                lines = said.splitlines()
                cpu = [int(ln[4:]) for ln in lines if ln.startswith("cpu ")]
                cmd = [ln[4:].strip() for ln in lines if ln.startswith("cmd ")]
                assert cpu and cmd, said
                return cpu[0], cmd[0], [ln for ln in lines if ln.startswith("child ")]

            cpu, cmd, children = pid1()
            assert cmd == keeper and children == []
            box.run_as(["sh", "-c", "echo poke > /proc/1/fd/0"], user="0", env={}, timeout=30)
            time.sleep(3)
            assert box.end_phase() == ([], [])
            later, cmd, children = pid1()
            assert cmd == keeper and children == []
            assert later - cpu <= 2, (cpu, later)  # ticks of 10 ms: idle over 3 s
        finally:
            box.close()


@pytest.mark.docker
@pytest.mark.slow
@pytest.mark.usefixtures("engine")
def test_a_command_past_its_timeout_goes_with_everything_it_started(tmp_path: Path) -> None:
    """A command in the run's container that outlives its timeout is killed with what it
    started, a ``setsid`` daemon included (each carries the exec's tag): nothing of it runs
    on beside the next step of the run."""
    from gate.core.tasks import load_task
    from gate.sandbox import SandboxOptions
    from gate.sandbox._docker import DockerSandboxProvider

    d = harbor_task(tmp_path / "suite", "hung", dockerfile=f"FROM {IMAGE}\n")
    alive = "for p in /proc/[0-9]*; do tr '\\0' ' ' < $p/cmdline 2>/dev/null; echo; done"
    with DockerSandboxProvider(SandboxOptions()) as provider:
        box = provider.create(load_task(d), "hung-r0")
        try:
            res = box.run_as(["bash", "-c", "setsid sleep 1234 < /dev/null > /dev/null 2>&1 & "
                              "sleep 1235"], user="0", env={}, timeout=2)
            assert res.timed_out
            left = box.run_as(["sh", "-c", alive], user="0", env={}, timeout=30).stdout
            assert "sleep 123" not in left, left
        finally:
            box.close()
    assert ours() == []
