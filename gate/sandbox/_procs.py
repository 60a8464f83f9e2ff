"""The agent/verifier phase boundary of a long-lived container: what the agent phase leaves
running, and which of it may stay.

When the agent phase ends, every process it left running is killed, except a *service*: a
process listening on a TCP port, with its parents and the processes it started (a server's
workers, whose sockets cannot be read across users without ``CAP_SYS_PTRACE``). Harbor's
default (shared) mode leaves everything the agent started running into the verifier, and
Terminal-Bench 2 relies on it for services (a task's solution starts nginx or a package index
and its tests talk to it); a planted loop, a watcher or any other leftover that serves no port
is what could rewrite the verifier's files after they are emptied, and it is gone before the
verifier starts. Processes the container started with (its ``ENTRYPOINT``'s) are not the
agent's and stay. Zombies run nothing and are left to their parents.

The process table is read with a POSIX shell over ``/proc`` (every image has one); the choice
is made here, in Python, so it can be tested without a container.
"""

from __future__ import annotations

from dataclasses import dataclass

MARK = "gate-process-listing"  # in the listing's own command line: it and its children skip
#: one line per process (``P pid ppid state sockets cmdline``), then the listening TCP
#: sockets' inodes (``L inode``: state 0A in /proc/net/tcp and tcp6)
SCRIPT = (
    f": {MARK}; for p in /proc/[0-9]*; do n=${{p#/proc/}}; "
    "pp=$(sed -n 's/^PPid:[[:space:]]*//p' \"$p/status\" 2>/dev/null); "
    "st=$(sed -n 's/^State:[[:space:]]*\\(.\\).*/\\1/p' \"$p/status\" 2>/dev/null); "
    "s=$(for f in \"$p\"/fd/*; do readlink \"$f\"; done 2>/dev/null | "
    "sed -n 's/^socket:\\[\\([0-9]*\\)\\]$/\\1/p' | tr '\\n' ,); "
    "c=$(tr '\\000\\n' '  ' < \"$p/cmdline\" 2>/dev/null); "
    "printf 'P %s %s %s %s %s\\n' \"$n\" \"${pp:-0}\" \"${st:-?}\" \"${s:-,}\" \"$c\"; "
    "done; "
    "cat /proc/net/tcp /proc/net/tcp6 2>/dev/null | awk '$4 == \"0A\" {print \"L\", $10}'"
)


@dataclass(frozen=True)
class Proc:
    pid: int
    ppid: int
    sockets: frozenset[str]
    cmd: str


def parse(text: str) -> tuple[dict[int, Proc], set[str]]:
    """The listing's processes by pid, and the inodes of the listening sockets."""
    procs: dict[int, Proc] = {}
    listening: set[str] = set()
    for line in text.splitlines():
        parts = line.split(" ", 5)
        if parts[0] == "L" and len(parts) >= 2:
            listening.add(parts[1])
        elif parts[0] == "P" and len(parts) >= 5 and parts[1].isdigit() and parts[2].isdigit():
            if parts[3] in ("Z", "X"):  # a zombie (or dead) process runs nothing: skip it
                continue
            procs[int(parts[1])] = Proc(int(parts[1]), int(parts[2]),
                                        frozenset(s for s in parts[4].split(",") if s),
                                        (parts[5] if len(parts) > 5 else "").strip())
    return procs, listening


def leftovers(procs: dict[int, Proc], listening: set[str], at_start: set[int],
              not_services: tuple[str, ...] = ()) -> tuple[list[Proc], list[Proc]]:
    """(what to kill, what stays as a service) of the processes the run started: not PID 1,
    not one the container started with, not the listing itself or its children. A process
    whose command line holds one of ``not_services`` is never kept (the gate's own relay)."""
    listing = {p.pid for p in procs.values() if MARK in p.cmd}
    ours: dict[int, Proc] = {}
    for p in procs.values():
        chain: set[int] = set()
        up: Proc | None = p
        while up is not None and up.pid not in chain:
            chain.add(up.pid)
            up = procs.get(up.ppid)
        if p.pid != 1 and p.pid not in at_start and not chain & listing and not (
                p.ppid == 1 and p.cmd == "sleep 3600"):  # the keep-alive loop's own sleep
            ours[p.pid] = p
    keep: set[int] = set()
    for p in ours.values():
        if p.sockets & listening and not any(n in p.cmd for n in not_services):
            parent: Proc | None = p
            while parent is not None and parent.pid in ours and parent.pid not in keep:
                keep.add(parent.pid)
                parent = procs.get(parent.ppid)
    grew = True
    while grew:  # and what they started (a server's workers: their sockets may not be
        grew = False  # readable here when they run as another user)
        for p in ours.values():
            if p.pid not in keep and p.ppid in keep and not any(n in p.cmd
                                                                for n in not_services):
                keep.add(p.pid)
                grew = True
    kill = [p for pid, p in sorted(ours.items()) if pid not in keep]
    return kill, [ours[pid] for pid in sorted(keep)]
