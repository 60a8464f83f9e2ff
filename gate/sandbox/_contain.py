"""What keeps a local run's processes from outliving it, and the proof that none did.

The launcher (``_reaper.py``, a child subreaper) kills every descendant of a command when it
ends — but it is a process of the task's own user, so a task can kill it first (``kill -9
$PPID``), and a ``setsid`` daemon it started is then re-parented past it and lives on. Where
the kernel can do better, it does: on Linux with a writable cgroup v2 hierarchy (and
``cgroup.kill``, Linux 5.14), each command runs in a cgroup of its own, created by the gate
below its own cgroup (``gate-<pid>/run-<n>``). The launcher joins it before it starts the command,
so every process the command forks is in it whatever it does to its session, its parent or the
launcher; when the command ends the gate writes ``cgroup.kill`` (SIGKILL to every member,
atomically against forks), waits until the cgroup is empty and removes it. Leaving a cgroup
takes a write to another cgroup's ``cgroup.procs``, which only a user who can write the
cgroup filesystem can do (root, where the gate runs as root: then only the docker sandbox
holds, docs/security.md's threat model).

Elsewhere (no cgroup v2, not writable, macOS) the launcher and the process-group kill are all
there is. Every command also carries ``GATE_SANDBOX_SCOPE`` (this gate process's scope) in its
environment, so :func:`alive_task_processes` can find, on Linux, what is left of a run even
outside any group (unless it also cleared its environment).

:func:`no_task_alive` is the gate's check that nothing of any run it started is left: every
run cgroup empty and removed, every process group gone, no process with this gate's scope.
Whatever must not happen while a task could be alive (the main-branch refresh's push, with a
token for git) asks it first.

A task can also kill its launcher and leave the run's cgroup (root can write the root cgroup's
``cgroup.procs``), ``setsid`` and clear its environment: then neither the cgroup, nor the
process group, nor the scope finds it. What still finds it is its parent: the CLI makes the
gate a child subreaper (``gate.secrets.become_subreaper``, Linux), so an orphan of a run —
whatever it did to its session, cgroup or environment — is re-parented to the gate, never to
init. Every
child of the gate that is not a process ``subprocess`` started and has not yet reaped is such
an orphan: :func:`stop_orphans` kills and reaps those (each by its pid, never ``waitpid(-1)``,
which would take a ``subprocess``'s exit status from it) when a command ends and before the
check. Only a process outside the gate's tree escapes that: one a root task starts elsewhere
(``docker run``, ``systemd-run``, ``ptrace``): the local sandbox holds nothing against a root
task (docs/github.md, "The token and the push").
"""

from __future__ import annotations

import atexit
import contextlib
import itertools
import os
import secrets
import signal
import sys
import threading
import time
from pathlib import Path

from gate._children import started as started_children
from gate._children import tracking
from gate.errors import Unmeasurable
from gate.sandbox._reaper import proc_stats

SCOPE_VAR = "GATE_SANDBOX_SCOPE"
SCOPE = f"{os.getpid()}-{secrets.token_hex(6)}"
_KILL_WAIT_S = 5.0  # how long the gate waits for a killed cgroup to empty

_lock = threading.Lock()
_groups: set[int] = set()  # process groups started, not yet seen gone
_cgroups: set[Path] = set()  # cgroups created, not yet removed
_counter = itertools.count()
_base: Path | bool | None = False  # False: not looked for yet; None: no cgroup containment
_subreaper: bool | None = None  # this process is a child subreaper (None: not asked yet)
PR_GET_CHILD_SUBREAPER = 37


def _own_cgroup_dir() -> Path | None:
    """The directory of this process's cgroup in a cgroup v2 hierarchy, or None."""
    try:
        own = next(line[3:] for line in Path("/proc/self/cgroup").read_text().splitlines()
                   if line.startswith("0::"))
        mount = next(fields[4] for fields in (line.split() for line in
                                              Path("/proc/self/mountinfo").read_text()
                                              .splitlines())
                     if " - cgroup2 " in " ".join(fields))
    except (OSError, StopIteration, IndexError):
        return None
    path = Path(mount) / own.lstrip("/")
    return path if path.is_dir() else None


def _remove_stale(parent: Path) -> None:
    """The cgroups of gates that died (even by SIGKILL) with processes in them: killed now."""
    for old in parent.glob("gate-*"):
        pid = old.name.removeprefix("gate-")
        if not pid.isdigit() or not old.is_dir() or Path(f"/proc/{pid}").exists():
            continue
        for leaf in old.glob("run-*"):
            if leaf.is_dir():
                _kill_cgroup(leaf)
        with contextlib.suppress(OSError):
            old.rmdir()


def _cgroup_base() -> Path | None:
    """This gate's cgroup (``gate-<pid>``), created on first use; None where the kernel's
    containment is not available to this process."""
    global _base
    with _lock:
        if _base is not False:
            return _base  # type: ignore[return-value]
        _base = None
        if sys.platform != "linux":
            return None
        parent = _own_cgroup_dir()
        if parent is None:
            return None
        with contextlib.suppress(OSError):
            _remove_stale(parent)
        base = parent / f"gate-{os.getpid()}"
        try:
            base.mkdir(exist_ok=True)
        except OSError:
            return None
        if not (base / "cgroup.kill").exists():  # before Linux 5.14: no atomic kill
            with contextlib.suppress(OSError):
                base.rmdir()
            return None
        _base = base
        atexit.register(_remove_base, base)
        return base


def _remove_base(base: Path) -> None:
    """At exit: this gate's cgroup, once its commands' cgroups are gone (else the next gate
    removes it, and kills what is in it)."""
    with contextlib.suppress(OSError):
        base.rmdir()


def containment() -> str:
    """``"cgroup"`` where each local command gets a cgroup of its own (killed as a whole),
    else ``"launcher"`` (the subreaper and the process-group kill)."""
    return "cgroup" if _cgroup_base() is not None else "launcher"


class Scope:
    """One command's containment: its cgroup (where available) and its process group."""

    def __init__(self) -> None:
        base = _cgroup_base()
        self.cgroup: Path | None = None
        self.pgid: int | None = None
        if base is not None:
            leaf = base / f"run-{next(_counter)}"
            try:
                leaf.mkdir()
            except OSError:
                return
            self.cgroup = leaf
            with _lock:
                _cgroups.add(leaf)

    def launcher_args(self) -> list[str]:
        """What the launcher is told before the command: the cgroup to join, if any."""
        return ["--cgroup", str(self.cgroup)] if self.cgroup is not None else []

    def started(self, pgid: int) -> None:
        self.pgid = pgid
        with _lock:
            _groups.add(pgid)

    def close(self) -> None:
        """Kill everything left in the command's cgroup and process group; forget them once
        they are seen gone."""
        if self.cgroup is not None and _kill_cgroup(self.cgroup):
            with _lock:
                _cgroups.discard(self.cgroup)
        if self.pgid is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.pgid, signal.SIGKILL)
            if not _group_alive(self.pgid):
                with _lock:
                    _groups.discard(self.pgid)
        stop_orphans()  # what left the cgroup and the group, and killed its launcher


def _kill_cgroup(leaf: Path) -> bool:
    """``cgroup.kill``, wait until it is empty, remove it; True once it is gone."""
    with contextlib.suppress(OSError):
        (leaf / "cgroup.kill").write_text("1")
    end = time.monotonic() + _KILL_WAIT_S
    while True:
        try:
            leaf.rmdir()  # EBUSY while a member (a zombie not yet reaped) is left
            return True
        except FileNotFoundError:
            return True
        except NotADirectoryError:
            return False
        except OSError:
            if time.monotonic() > end:
                return False
            time.sleep(0.01)


def _group_alive(pgid: int) -> bool:
    """A live (not zombie: a killed process whose parent died waits for init to reap it)
    member of process group ``pgid``."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        stats = proc_stats()
    except OSError:
        return True  # no /proc (macOS): the group exists, zombie or not
    return any(int(fields[2]) == pgid and fields[0] != b"Z" for _, fields in stats)


def _scoped_processes() -> list[int]:
    """Live processes (not zombies) whose environment carries this gate's scope (Linux)."""
    found: list[int] = []
    needle = f"{SCOPE_VAR}={SCOPE}".encode()
    try:
        entries = os.listdir("/proc")
    except OSError:
        return found
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as fh:
                env = fh.read()
            with open(f"/proc/{entry}/stat", "rb") as fh:
                stat = fh.read()
        except OSError:
            continue
        if needle in env.split(b"\0") and stat[stat.rindex(b")") + 2:][:1] != b"Z":
            found.append(int(entry))
    return found


def alive_task_processes() -> list[str]:
    """What is left of the runs this gate process started (one entry each: a cgroup with
    members, a process group, a process carrying the gate's scope); ``[]``: nothing."""
    with _lock:
        cgroups, groups = sorted(_cgroups), sorted(_groups)
    left = [f"cgroup {c}" for c in cgroups if c.exists() and _populated(c)]
    left += [f"process group {g}" for g in groups if _group_alive(g)]
    left += [f"process {p}" for p in _scoped_processes()]
    left += [f"orphan process {p}" for p in _orphans() or ()]
    return left


def _populated(cgroup: Path) -> bool:
    try:
        events = (cgroup / "cgroup.events").read_text()
    except OSError:
        return False
    return "populated 1" in events


def no_task_alive() -> bool:
    """True when no process of any run this gate started can still be alive: call it before
    anything a task must not see (a push with a token in git's environment)."""
    return not alive_task_processes()


def assert_no_task_alive(doing: str = "push with the token") -> None:
    """``Unmeasurable`` (exit 3) naming what is left when a process of a run may be alive
    (orphans of runs are killed first)."""
    stop_orphans()
    left = alive_task_processes()
    if left:
        raise Unmeasurable(f"a process of a run outlived it ({', '.join(left[:3])}"
                           f"{', ...' if len(left) > 3 else ''}): not going to {doing} while "
                           "it may be alive")


def _is_subreaper() -> bool:
    """Whether this process is a child subreaper (the CLI makes the gate one at start:
    ``gate.secrets.become_subreaper``); asked of the kernel (Linux), once."""
    global _subreaper
    if _subreaper is None:
        _subreaper = False
        if sys.platform == "linux":
            import ctypes

            flag = ctypes.c_int(0)
            with contextlib.suppress(OSError, AttributeError):
                libc = ctypes.CDLL(None, use_errno=True)
                _subreaper = (libc.prctl(PR_GET_CHILD_SUBREAPER, ctypes.byref(flag), 0, 0, 0)
                              == 0 and flag.value == 1)
    return _subreaper


def _orphans() -> list[int] | None:
    """This subreaper's children that ``subprocess`` did not start: orphans of runs, adopted
    ([] when not a subreaper; None when that cannot be told now)."""
    if not (_is_subreaper() and tracking()):  # untracked: its own children are not known
        return []
    me = os.getpid()
    try:  # the children first, then the Popens: a child started in between is not taken
        children = [pid for pid, fields in proc_stats() if int(fields[1]) == me]
    except OSError:
        return []
    started = started_children()
    if started is None:
        return None
    return [pid for pid in children if pid not in started]


def stop_orphans(give_up_after: float = _KILL_WAIT_S) -> None:
    """Kill and reap every adopted orphan (and what it forks meanwhile, adopted in turn), each
    reaped by its own pid; a no-op unless this process is a subreaper."""
    end = time.monotonic() + give_up_after
    while time.monotonic() < end:
        found = _orphans()
        if found is None:  # a Popen is starting: its child is not told apart yet
            time.sleep(0.01)
            continue
        if not found:
            return
        for pid in found:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        reaped = 0
        for pid in found:
            with contextlib.suppress(ChildProcessError):
                reaped += os.waitpid(pid, os.WNOHANG)[0] == pid
        if reaped < len(found):
            time.sleep(0.01)  # not dead yet: killed again and reaped on the next round
