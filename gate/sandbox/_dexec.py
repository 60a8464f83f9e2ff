"""One ``docker exec`` in a run's long-lived container, followed to its end: its output kept
within bounds (head and tail), and on a timeout or a cancel it and everything it started
killed. Every process an exec starts carries the exec's tag in its environment
(:data:`EXEC_TAG`), which is how the kill finds them: a child that left the exec's process
group or session still carries it."""

from __future__ import annotations

import contextlib
import signal
import threading
import time
from dataclasses import dataclass
from typing import Any

import docker.errors
import requests.exceptions

from gate._files import clip
from gate.errors import SandboxError
from gate.formats import ExecResult
from gate.sandbox._local import OUTPUT_LIMIT, _Capture

POLL_S = 0.25  # how often a running exec checks for its deadline and a cancel
EXEC_TAG = "GATE_EXEC"
_ERRORS = (docker.errors.DockerException, requests.exceptions.RequestException)


@dataclass(frozen=True)
class Tagged:
    """An exec's tag, and the user it runs as (who kills what it started)."""

    tag: str
    user: str


def follow(api: Any, cid: str, exec_id: str, who: Tagged, *, timeout: float,
           cancel: threading.Event | None, start: float) -> ExecResult:
    """Start the created exec ``exec_id`` and follow it to its end, its deadline (``start``
    + ``timeout``) or a cancel (``SandboxError("cancelled")``); its exit code -1 when the
    engine gave none."""
    out, err = _Capture(OUTPUT_LIMIT), _Capture(OUTPUT_LIMIT)
    done = threading.Event()

    def pump() -> None:
        try:
            for o, e in api.exec_start(exec_id, stream=True, demux=True):
                if o:
                    out.feed(o)
                if e:
                    err.feed(e)
        except (*_ERRORS, OSError):
            pass
        finally:
            done.set()

    threading.Thread(target=pump, name="gate-exec", daemon=True).start()
    deadline = start + timeout
    timed_out = cancelled = False
    while not done.wait(POLL_S):
        if cancel is not None and cancel.is_set():
            cancelled = True
            break
        if time.monotonic() >= deadline:
            timed_out = True
            break
    if timed_out or cancelled:
        kill_tagged(api, cid, who)
        done.wait(5)
    if cancelled:
        raise SandboxError("cancelled")
    try:
        code = api.exec_inspect(exec_id).get("ExitCode")
    except docker.errors.DockerException:
        code = None
    return ExecResult(
        returncode=-signal.SIGKILL if timed_out else (code if code is not None else -1),
        stdout=clip(out.text(), OUTPUT_LIMIT), stderr=clip(err.text(), OUTPUT_LIMIT),
        timed_out=timed_out, duration_s=time.monotonic() - start)


def kill_tagged(api: Any, cid: str, who: Tagged) -> None:
    """Kill every process carrying ``who``'s tag (as the exec's own user: no ptrace
    capability is needed to read the environment of one's own processes)."""
    script = ("for _ in 1 2 3; do for p in /proc/[0-9]*; do "
              f"tr '\\000' '\\n' < \"$p/environ\" 2>/dev/null | grep -qx '{EXEC_TAG}={who.tag}'"
              ' && kill -9 "${p#/proc/}" 2>/dev/null; done; done; true')
    with contextlib.suppress(*_ERRORS):
        api.exec_start(api.exec_create(cid, ["sh", "-c", script], user=who.user)["Id"])
