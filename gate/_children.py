"""The children ``subprocess`` started in this process, known without scanning the heap.

A child subreaper (``gate.secrets.become_subreaper``) adopts the orphans of runs; to tell
them from its own children it must know every live ``subprocess.Popen``. Scanning
``gc.get_objects()`` for them, as this used to, hands out references to objects other threads
are still building: ``_PyTuple_Resize`` then fails in that thread with ``SystemError: bad
argument to internal function`` (seen as "agent crashed" in 2 of 45 runs of a ``-j 4`` suite).
So ``track()``, called once at the gate's start before anything is spawned, records each
``Popen`` as it is made, and :func:`started` reads that record.
"""

from __future__ import annotations

import subprocess
import threading
import weakref
from typing import Any

_live: weakref.WeakSet[subprocess.Popen[Any]] = weakref.WeakSet()
_lock = threading.Lock()
_tracking = False


def track() -> None:
    """Record every ``subprocess.Popen`` made from now on in this process (idempotent)."""
    global _tracking
    with _lock:
        if _tracking:
            return
        original = subprocess.Popen.__init__

        def init(self: subprocess.Popen[Any], *args: Any, **kwargs: Any) -> None:
            with _lock:
                _live.add(self)  # before the fork: "starting" until its pid is known
            try:
                original(self, *args, **kwargs)
            except BaseException:
                with _lock:
                    _live.discard(self)  # never started: no child of ours
                raise

        subprocess.Popen.__init__ = init  # type: ignore[method-assign]
        _tracking = True


def tracking() -> bool:
    return _tracking


def started() -> set[int] | None:
    """The pids of the live children ``subprocess`` started and has not reaped; None while
    one is being started (its pid not known yet)."""
    with _lock:
        popens = list(_live)
    pids: set[int] = set()
    for p in popens:
        if getattr(p, "returncode", None) is not None:
            continue
        pid = getattr(p, "pid", None)
        if pid is None:
            return None
        pids.add(pid)
    return pids
