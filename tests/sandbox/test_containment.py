"""`gate.sandbox.no_task_alive()`: the check that nothing of any run this gate started is left.

In-process, with real subprocesses: a command that kills its own launcher and leaves a `setsid`
daemon (killed with its cgroup where the kernel can contain it), and a process carrying the
gate's scope outside every group (found by the scan that works without cgroups).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from gate.errors import Unmeasurable
from gate.sandbox import (
    alive_task_processes,
    assert_no_task_alive,
    containment,
    no_task_alive,
    run_process_group,
)

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="Linux's /proc and cgroups")


def _marked(marker: str) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        try:
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
            state = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if marker.encode() in cmdline and state != "Z":
            found.append(int(entry))
    return found


@pytest.mark.skipif(containment() != "cgroup", reason="needs a writable cgroup v2")
def test_a_command_that_kills_its_launcher_leaves_nothing_alive(tmp_path: Path) -> None:
    marker = f"gate-contain-{uuid.uuid4().hex[:10]}"
    script = (f"setsid bash -c 'exec -a {marker} sleep 1000' </dev/null >/dev/null 2>&1 &\n"
              "sleep 0.2\nkill -9 $PPID\nsleep 0.2\n")
    try:
        res = run_process_group(["bash", "-c", script], cwd=tmp_path,
                                env={"PATH": os.environ["PATH"]}, timeout=30)
        assert res.returncode == -signal.SIGKILL  # the launcher was killed under it
        assert _marked(marker) == []
        assert no_task_alive(), alive_task_processes()
    finally:
        for pid in _marked(marker):
            os.kill(pid, signal.SIGKILL)


def test_a_process_of_a_run_outside_every_group_is_found(tmp_path: Path) -> None:
    """What escaped both the cgroup and the process group (where there is no cgroup) still
    carries the gate's scope in its environment: the check sees it."""
    from gate.sandbox._contain import SCOPE, SCOPE_VAR

    assert no_task_alive(), alive_task_processes()
    stray = subprocess.Popen(["sleep", "60"], env={SCOPE_VAR: SCOPE, "PATH": os.environ["PATH"]},
                             start_new_session=True)
    try:
        time.sleep(0.1)
        assert f"process {stray.pid}" in alive_task_processes()
        assert not no_task_alive()
        with pytest.raises(Unmeasurable, match=f"outlived it \\(process {stray.pid}\\)"):
            assert_no_task_alive()  # what the main-branch refresh asks before it pushes
    finally:
        stray.kill()
        stray.wait()
    assert no_task_alive(), alive_task_processes()


_RACE = r"""
import os, subprocess, sys, threading, time
from gate._children import track
from gate.secrets import become_subreaper
from gate.sandbox import assert_no_task_alive

track()
assert become_subreaper()
# an orphan adopted by this subreaper (its parent exits at once): the check must find it
subprocess.run([sys.executable, "-c", "import subprocess, sys; subprocess.Popen(['sleep', '60'])"])
errors, stop = [], False

def build():  # what any thread does all the time: a tuple built from a generator
    while not stop:
        try:
            for _ in range(1000):
                tuple(x for x in range(50))
        except SystemError as exc:
            errors.append(repr(exc))
            return

sys.setswitchinterval(1e-5)  # threads switch often, mid-tuple too, and the checks get the GIL
threads = [threading.Thread(target=build) for _ in range(2)]
for t in threads:
    t.start()
end = time.monotonic() + 60  # the builders hold the GIL: a check waits for it on every read
checks = 0
while checks < 30 and time.monotonic() < end and not errors:
    assert_no_task_alive()  # kills and reaps the adopted orphans, then finds nothing left
    subprocess.run(["true"])  # a child of the gate's own meanwhile: never taken for one
    checks += 1
stop = True
for t in threads:
    t.join()
me = str(os.getpid())
kids = [d for d in os.listdir("/proc") if d.isdigit() and os.path.exists(f"/proc/{d}/stat")
        and open(f"/proc/{d}/stat").read().rsplit(") ", 1)[1].split()[1] == me]
print(checks, len(errors), len(kids), errors[:1])
"""


def test_the_orphan_check_never_breaks_other_threads() -> None:
    """The subreaper's orphan check runs while other threads build tuples (an agent's turn, the
    meter) and breaks none of them: a scan of the heap for the gate's own children
    (``gc.get_objects()``) made ``tuple(generator)`` fail in another thread with SystemError
    ("agent crashed" in 2 of 45 runs of a ``-j 4`` study; red with that scan: SystemError at
    the first check). It still kills the adopted orphan and never a child of its own."""
    p = subprocess.run([sys.executable, "-c", _RACE], capture_output=True, text=True,
                       timeout=120, env={**os.environ, "PYTHONPATH": str(Path(__file__)
                                                                         .parents[2])})
    assert p.returncode == 0, p.stderr
    checks, errors, orphans, _ = p.stdout.split(" ", 3)
    assert int(checks) >= 30 and int(errors) == 0 and int(orphans) == 0, p.stdout
