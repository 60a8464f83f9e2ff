"""A run's launcher on Linux: runs one command and leaves no descendant of it behind.

Usage: ``python -I -S _reaper.py [--cgroup DIR] PARENT_PID COMMAND [ARG ...]`` (a standalone
script: it imports nothing from the gate, so it starts fast and holds nothing of the gate's).

With ``--cgroup``, it first moves itself into that (cgroup v2) cgroup, so the command and
everything it ever forks are in it: the gate kills the cgroup as a whole when the command
ends, which holds even when the command kills this launcher (``_contain.py``).

It marks itself a *child subreaper* (``PR_SET_CHILD_SUBREAPER``), so every process the command
starts — even one that double-forks or calls ``setsid`` to leave the process group — is
re-parented to this launcher when its own parent exits, never to init. When the command exits,
or the launcher gets SIGTERM/SIGINT/SIGHUP (the gate stopping a run), every descendant is killed
(SIGKILL, repeated until none is left) and reaped. ``PR_SET_PDEATHSIG`` turns the gate's death,
even by SIGKILL, into a SIGTERM here, so the same cleanup runs when the gate dies.

The exit status mirrors the command's (a command killed by signal N makes the launcher die by N).
"""

from __future__ import annotations

import _signal as signal  # the C module: `signal` imports enum, a fifth of the start-up
import ctypes
import os
import sys
import time

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
_STOP_SIGNALS = {signal.SIGTERM, signal.SIGINT, signal.SIGHUP}


def proc_stats() -> list[tuple[int, list[bytes]]]:
    """``(pid, [state, ppid, pgrp, ...])`` of every process /proc still shows (raises
    ``OSError`` without /proc)."""
    found: list[tuple[int, list[bytes]]] = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as fh:
                stat = fh.read()
        except OSError:
            continue
        # "pid (comm) state ppid ...": comm may hold spaces and parentheses
        found.append((int(entry), stat[stat.rindex(b")") + 2:].split()))
    return found


def _descendants(root: int) -> list[int]:
    """Every process below ``root`` in the process tree, read from /proc."""
    children: dict[int, list[int]] = {}
    for pid, fields in proc_stats():
        children.setdefault(int(fields[1]), []).append(pid)
    found: list[int] = []
    todo = [root]
    while todo:
        for pid in children.get(todo.pop(), ()):
            found.append(pid)
            todo.append(pid)
    return found


def _reap_all(me: int, give_up_after: float = 5.0) -> None:
    """Kill and reap descendants until this process has no child at all.

    Orphans come back to us (we are their subreaper), so "no child left" means "no descendant
    left". A process forked between a scan and the kills is found by the next scan. A process
    that cannot be killed (another user's, stuck in the kernel) is given up on after a while;
    without /proc the gate's process-group kill is all there is, as on macOS.
    """
    end = time.monotonic() + give_up_after
    while True:
        try:
            found = _descendants(me)
        except OSError:
            return
        for pid in found:
            try:  # noqa: SIM105 (contextlib costs a tenth of this script's start-up)
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        try:
            while os.waitpid(-1, os.WNOHANG)[0] != 0:
                pass
        except ChildProcessError:
            return
        if time.monotonic() > end:
            print(f"gate: could not kill processes {found[:10]} started by this command",
                  file=sys.stderr)
            return
        time.sleep(0.005)


def _exit_like(status: int | None) -> None:
    if status is not None and os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        signal.signal(sig, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {sig})
        os.kill(os.getpid(), sig)
        os._exit(128 + sig)  # a signal whose default action is not to terminate
    if status is not None and os.WIFEXITED(status):
        os._exit(os.WEXITSTATUS(status))
    os._exit(128 + signal.SIGKILL)  # stopped by the gate


def _wait(child: int) -> int | None:
    """The command's wait status, or ``None`` when a stop signal came first.

    Signals are blocked and taken synchronously, so a stop can never land half-way through
    the cleanup."""
    watched = _STOP_SIGNALS | {signal.SIGCHLD}
    while True:
        try:
            while True:
                pid, status = os.waitpid(-1, os.WNOHANG)
                if pid == 0:
                    break
                if pid == child:
                    return status
        except ChildProcessError:
            return None
        if signal.sigwaitinfo(watched).si_signo in _STOP_SIGNALS:
            return None


def _join(cgroup: str) -> None:
    try:
        with open(os.path.join(cgroup, "cgroup.procs"), "w") as fh:
            fh.write(str(os.getpid()))
    except OSError as exc:
        print(f"gate: cannot join the run's cgroup ({exc.strerror}); a process of this command "
              "that kills the launcher may outlive it", file=sys.stderr)


def main(argv: list[str]) -> None:
    if argv[:1] == ["--cgroup"]:
        _join(argv[1])
        argv = argv[2:]
    parent, command = int(argv[0]), argv[1:]
    signal.pthread_sigmask(signal.SIG_BLOCK, _STOP_SIGNALS | {signal.SIGCHLD})
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    if os.getppid() != parent:  # the gate died before the line above took effect
        os._exit(128 + signal.SIGKILL)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        print("gate: cannot become a child subreaper; background processes of this "
              "command may outlive it", file=sys.stderr)
    status: int | None
    try:
        child = os.posix_spawnp(command[0], command, os.environ, setsigmask=(),
                                setsigdef=tuple(_STOP_SIGNALS))
    except OSError as exc:
        print(f"gate: cannot run {command[0]}: {exc.strerror}", file=sys.stderr)
        status = 127 << 8
    else:
        status = _wait(child)
    _reap_all(os.getpid())
    _exit_like(status)


if __name__ == "__main__":
    main(sys.argv[1:])
