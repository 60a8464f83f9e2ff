"""A run's disk limit (``[suite] disk_mb``): one rule for every backend, and the install.

Nothing here sizes a filesystem: Docker's overlay2 takes ``--storage-opt size`` only over
xfs mounted with ``pquota`` (neither this project's engine nor GitHub's runners, whose Docker
root is ext4), and a sized tmpfs or loop mount needs root on the host. The quota is watched
instead, which works wherever the gate runs: while a run's sandbox is open, a thread measures
what it wrote — the host folders of its workspace (a walk of ``os.scandir``, counting the
blocks each file holds: a sparse file counts what it fills, a hard link once), or a
container's writable layer (the engine's ``SizeRw``) — every :data:`HOST_POLL_S` or
:data:`CONTAINER_POLL_S` seconds, and less often when a measure is slow (it may take at most
:data:`SHARE` of a core). Past the limit it stops the run (the sandbox's stop event: what
runs is killed as a cancel kills it, and nothing more starts); the runner fails the run as
the agent's doing with :meth:`DiskLimit.reason`, and the workspace goes with the sandbox. The
last measure is taken when the run ends, so a quick write past the limit fails it too. What a
watched quota cannot stop is what is written between two measures: at most about a poll's
worth of the disk's write speed.

Before a job's runs, too little free space where workspaces (and the engine's layers) live
is infra, said once (:func:`ensure_free`).
"""

from __future__ import annotations

import contextlib
import math
import os
import shutil
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from gate.errors import Unmeasurable

MB = 1 << 20
MARGIN_MB = 256  # free space a job needs beyond one run's limit (the results, the logs)
HOST_POLL_S = 1.0
CONTAINER_POLL_S = 3.0  # the engine computes SizeRw by walking the layer (~0.2 s for 20k files)
SHARE = 0.1  # a watcher waits at least its last measure's time / SHARE between measures
SETTING = "[suite] disk_mb"


@dataclass(frozen=True)
class DiskLimit:
    """What a run (or the agent's install, ``what``) may write, in MB."""

    mb: int
    what: str = "the run"

    def over(self, used: int) -> bool:
        return used > self.mb * MB

    def reason(self, used: int) -> str:
        return f"{self.what} wrote {math.ceil(used / MB)} MB, past {SETTING} = {self.mb}"


class RunStop(threading.Event):
    """One run's stop: set by its own quota, or by the job's cancel (Ctrl-C, SIGTERM), which
    it reads through, so a backend polls one event for both."""

    def __init__(self, job: threading.Event | None) -> None:
        super().__init__()
        self.job = job

    def is_set(self) -> bool:
        return super().is_set() or (self.job is not None and self.job.is_set())


class DiskWatch:
    """Measures ``measure()`` (bytes written) every ``every`` seconds in a thread, until
    closed; past ``limit`` it sets ``stop`` once and keeps the reason."""

    def __init__(self, limit: DiskLimit, measure: Callable[[], int], stop: RunStop,
                 every: float) -> None:
        self.limit = limit
        self.stop = stop
        self.over: str | None = None
        self._measure = measure
        self._every = every
        self._lock = threading.Lock()
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="gate-disk", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        wait = self._every
        while not self._done.wait(wait):
            start = time.monotonic()
            if self.check() is not None:
                return
            wait = max(self._every, (time.monotonic() - start) / SHARE)

    def check(self) -> str | None:
        """Measure now (unless already past); the reason when past the limit."""
        with self._lock:
            if self.over is None and not self._done.is_set():
                try:
                    used = self._measure()
                except Exception:  # a measure that fails (the container going) is no trip
                    return None
                if self.limit.over(used):
                    self.over = self.limit.reason(used)
                    self.stop.set()
            return self.over

    def close(self) -> None:
        """Stop measuring (before the sandbox's teardown); the reason is kept."""
        self._done.set()
        with contextlib.suppress(RuntimeError):
            self._thread.join(timeout=30)


def tree_bytes(root: Path) -> int:
    """The disk space the files under ``root`` hold (their blocks; a hard link once; no
    symlink followed, no other filesystem entered). A folder the gate cannot list but owns
    (the agent's ``chmod 000``) is opened to its owner first: it cannot hide what it holds."""
    total = 0
    seen: set[tuple[int, int]] = set()
    try:
        dev = os.lstat(root).st_dev
    except OSError:
        return 0
    stack = [os.fspath(root)]
    while stack:
        for entry in _entries(stack.pop()):
            try:
                st = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            if st.st_nlink > 1 and not entry.is_dir(follow_symlinks=False):
                if (st.st_dev, st.st_ino) in seen:
                    continue
                seen.add((st.st_dev, st.st_ino))
            total += getattr(st, "st_blocks", math.ceil(st.st_size / 512)) * 512
            if entry.is_dir(follow_symlinks=False) and st.st_dev == dev:
                stack.append(entry.path)
    return total


def _entries(path: str) -> list[os.DirEntry[str]]:
    for attempt in range(2):
        try:
            with os.scandir(path) as it:
                return list(it)
        except PermissionError:
            if attempt or not _open_to_owner(path):
                return []
        except OSError:
            return []
    return []


def _open_to_owner(path: str) -> bool:
    try:
        st = os.lstat(path)
        if st.st_uid != os.geteuid():
            return False
        os.chmod(path, (st.st_mode & 0o7777) | 0o700)
    except OSError:
        return False
    return True


def free_space_problem(paths: Iterable[Path], disk_mb: int) -> str | None:
    """Why a run cannot be given its limit here: a folder where runs write (the workspaces,
    the engine's layers) with less free space than ``disk_mb`` and :data:`MARGIN_MB`."""
    need = disk_mb + MARGIN_MB
    for path in dict.fromkeys(paths):
        try:
            free = shutil.disk_usage(path).free // MB
        except OSError:
            continue
        if free < need:
            return (f"infra: too little free disk space for the runs: {path} has {free} MB "
                    f"free, and a run may write {SETTING} = {disk_mb} MB (with a {MARGIN_MB} "
                    f"MB margin, {need} MB are needed)")
    return None


def ensure_free(paths: Iterable[Path], disk_mb: int) -> None:
    """Before a job's runs: too little free space is infra, said once (exit 3)."""
    if (why := free_space_problem(paths, disk_mb)) is not None:
        raise Unmeasurable(why)
