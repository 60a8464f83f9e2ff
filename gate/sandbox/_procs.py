"""The agent/verifier phase boundary of a long-lived container: what the agent phase leaves
running, all of which is stopped.

When the agent phase ends, every process it started is killed before the verifier starts: a
root agent can write any path while any of its processes lives, and the verifier's reward is
a file. A process is the agent phase's when it was not running when the container started:
a process is known by its pid *and* its start time (``/proc/<pid>/stat``), so a pid reused
after one of the image's own processes died is not the image's. Nothing an agent can choose
spares a process: not its name, its command line, a socket it listens on, nor its parent (an
orphan is re-parented to pid 1 whatever it is).

The container's processes are stopped first (``kill -STOP -1`` as root: every process but
pid 1, at once, atomically against fork), then listed, the agent phase's killed and the rest
resumed: a process that forks and lets its parent exit, over and over, would otherwise never
be at a listed pid when the kill comes.

Spared, by identity alone: pid 1; the processes the container started with (its
``ENTRYPOINT``'s, and the keep-alive, which starts no process: ``_harbor.KEEPALIVE``);
and the listing itself (the shell whose pid it prints, and what it forks). No process is
spared by its name or command line: when the keep-alive renewed a ``sleep 3600`` spared as
such, a root agent replaced ``/usr/bin/sleep``, killed the sleep, and its trojan, started by
the loop and called ``sleep 3600``, did the task after the agent phase. The gate's own meter
relay, which a command agent's exec starts, is killed like the rest but not counted as the
agent's (:func:`leftovers`' ``own``: by identity, pid and start time, never by name).

A suite's owner may list tasks whose verifier needs a service the agent started
(``[suite].reward_unprotected``, from the base branch): for those, ``services`` keeps a
process listening on a TCP port, with its parents and what it started, as Harbor's shared
mode keeps everything. Zombies run nothing and are left to their parents.

A root agent is not handled apart (docs/harbor-migration.md): the image's own processes stay
even then, since root inside the container can replace any file the verifier runs and (where
the kernel lets a process trace another of its user) write into another process's memory, pid
1's included, which nothing can kill: killing them would close nothing.
What holds is that no process of the agent phase runs during the verifier.

The process table is read with a POSIX shell over ``/proc`` (every image has one); the choice
is made here, in Python, so it can be tested without a container. A listing counts only whole
(:func:`whole`: its shell's line first, its end last): under load the engine now and then hands
an exec's output back empty or cut, and a listing read as an empty table would let the agent
phase's processes run on, so such an answer is asked again (``RunContainer.probe``).
"""

from __future__ import annotations

from collections.abc import Set as AbstractSet
from dataclasses import dataclass

#: ``S <the listing shell's pid>``, then one line per process (``P pid ppid state start
#: sockets cmdline``: ``/proc/<pid>/stat`` fields 4, 3 and 22), then the listening TCP
#: sockets' inodes (``L inode``: state 0A in /proc/net/tcp and tcp6), then ``E``: the end,
#: which tells a whole listing from one the engine lost or cut (:func:`whole`); a listing that
#: cannot run (no ``awk``) still exits non-zero
SCRIPT = (
    'echo "S $$"; for p in /proc/[0-9]*; do n=${p#/proc/}; '
    "st=$(sed 's/.*) //' \"$p/stat\" 2>/dev/null); [ -n \"$st\" ] || continue; "
    "set -- $st; "
    "s=$(for f in \"$p\"/fd/*; do readlink \"$f\"; done 2>/dev/null | "
    "sed -n 's/^socket:\\[\\([0-9]*\\)\\]$/\\1/p' | tr '\\n' ,); "
    "c=$(tr '\\000\\n' '  ' < \"$p/cmdline\" 2>/dev/null); "
    "printf 'P %s %s %s %s %s %s\\n' \"$n\" \"$2\" \"$1\" \"${20}\" \"${s:-,}\" \"$c\"; "
    "done; "
    "cat /proc/net/tcp /proc/net/tcp6 2>/dev/null | awk '$4 == \"0A\" {print \"L\", $10}' "
    "|| exit; echo E"
)

Ident = tuple[int, str]  # a process: its pid and its start time (clock ticks after boot)


@dataclass(frozen=True)
class Proc:
    pid: int
    ppid: int
    start: str
    sockets: frozenset[str]
    cmd: str

    @property
    def ident(self) -> Ident:
        return (self.pid, self.start)


@dataclass(frozen=True)
class Listing:
    procs: dict[int, Proc]  # by pid, zombies left out
    listening: set[str]  # the inodes of the listening TCP sockets
    shell: int | None  # the listing's own shell


def whole(text: str) -> bool:
    """Whether a listing's output is all there: its shell's line first, its end last."""
    lines = text.splitlines()
    return len(lines) >= 2 and lines[0].startswith("S ") and lines[-1] == "E"


def parse(text: str) -> Listing:
    """The listing's processes by pid, the inodes of the listening sockets, its own shell."""
    procs: dict[int, Proc] = {}
    listening: set[str] = set()
    shell: int | None = None
    for line in text.splitlines():
        parts = line.split(" ", 6)
        if parts[0] == "S" and len(parts) == 2 and parts[1].isdigit():
            shell = int(parts[1])
        elif parts[0] == "L" and len(parts) >= 2:
            listening.add(parts[1])
        elif (parts[0] == "P" and len(parts) >= 6
              and all(x.isdigit() for x in (parts[1], parts[2], parts[4]))):
            if parts[3] in ("Z", "X"):  # a zombie (or dead) process runs nothing: skip it
                continue
            procs[int(parts[1])] = Proc(int(parts[1]), int(parts[2]), parts[4],
                                        frozenset(s for s in parts[5].split(",") if s),
                                        (parts[6] if len(parts) > 6 else "").strip())
    return Listing(procs, listening, shell)


def _spared(p: Proc, listing: Listing, at_start: set[Ident]) -> bool:
    """Not the agent phase's: pid 1, the container's own processes (the keep-alive among
    them), the listing and what it forked. Never by a name or a command line."""
    procs = listing.procs
    if p.pid == 1 or p.ident in at_start:
        return True
    seen: set[int] = set()
    up: Proc | None = p
    while up is not None and up.pid not in seen:  # the listing's shell, or below it
        if up.pid == listing.shell:
            return True
        seen.add(up.pid)
        up = procs.get(up.ppid)
    return False


def leftovers(listing: Listing, at_start: set[Ident], *, own: AbstractSet[Ident] = frozenset(),
              services: bool = False) -> tuple[list[Proc], list[Proc], list[Proc]]:
    """``(the agent's to kill, the gate's own to kill, services kept)`` of what the agent
    phase left running. ``own``: the gate's own processes it started (its relay), killed
    but not the agent's. ``services``: keep what listens on a TCP port (module docstring)."""
    ours = {p.pid: p for p in listing.procs.values() if not _spared(p, listing, at_start)}
    keep = _services(listing, ours, own) if services else set()
    kill = [p for pid, p in sorted(ours.items()) if pid not in keep]
    return ([p for p in kill if p.ident not in own], [p for p in kill if p.ident in own],
            [ours[pid] for pid in sorted(keep)])


def _services(listing: Listing, ours: dict[int, Proc], own: AbstractSet[Ident]) -> set[int]:
    """The pids of the processes listening on a TCP port, their parents (among ``ours``),
    and what they started (a server's workers: their sockets may not be readable here when
    they run as another user); never one of the gate's ``own``."""
    procs, keep = listing.procs, set()
    for p in ours.values():
        if p.sockets & listing.listening and p.ident not in own:
            parent: Proc | None = p
            while parent is not None and parent.pid in ours and parent.pid not in keep:
                keep.add(parent.pid)
                parent = procs.get(parent.ppid)
    grew = True
    while grew:
        grew = False
        for p in ours.values():
            if p.pid not in keep and p.ppid in keep and p.ident not in own:
                keep.add(p.pid)
                grew = True
    return keep
