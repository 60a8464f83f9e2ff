"""The local sandbox: a fresh temporary directory and real subprocesses in their own session."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from gate.sandbox._base import ExecResult, Sandbox, SandboxError, SandboxProvider
from gate.secrets import scrubbed_env
from gate.tasks import Task


def _kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def run_process_group(
    argv: Sequence[str],
    *,
    cwd: str | os.PathLike[str],
    env: Mapping[str, str],
    timeout: float,
    stdin: str | None = None,
    cancel: threading.Event | None = None,
) -> ExecResult:
    """Run ``argv`` as the leader of a new session and process group.

    On timeout the whole group is killed. When the leader exits, whatever it left running in
    its group (a background child) is killed too, so no process of a run outlives it. Being in
    its own session, the group does not see the terminal's Ctrl-C: ``cancel`` is how the gate
    stops it early (raises ``SandboxError``).
    """
    if cancel is not None and cancel.is_set():
        raise SandboxError("cancelled")
    start = time.monotonic()
    deadline = start + timeout
    proc = subprocess.Popen(
        list(argv),
        cwd=cwd,
        env=dict(env),
        stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    timed_out = cancelled = False
    data = stdin.encode() if stdin is not None else None
    try:
        while True:
            # short waits, so a cancel is seen within a second; retrying loses no output
            remaining = max(0.0, deadline - time.monotonic())
            step = min(0.5, remaining) if cancel is not None else remaining
            try:
                out, err = proc.communicate(input=data, timeout=step)
                break
            except subprocess.TimeoutExpired:
                data = None  # stdin was written by the first call
                if cancel is not None and cancel.is_set():
                    cancelled = True
                    raise
                if time.monotonic() >= deadline:
                    raise
    except subprocess.TimeoutExpired:
        timed_out = True
        _kill_group(proc.pid)
        try:
            out, err = proc.communicate(timeout=5)
        except subprocess.TimeoutExpired:  # a pipe held by something outside the group
            proc.kill()
            out, err = b"", b""
    finally:
        _kill_group(proc.pid)
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    if cancelled:
        raise SandboxError("cancelled")
    return ExecResult(
        returncode=proc.returncode if not timed_out else -signal.SIGKILL,
        stdout=out.decode("utf-8", "replace"),
        stderr=err.decode("utf-8", "replace"),
        timed_out=timed_out,
        duration_s=time.monotonic() - start,
    )


class LocalSandbox(Sandbox):
    def __init__(self, root: Path, task: Task, keep: bool = False,
                 cancel: threading.Event | None = None) -> None:
        self.root = root
        self.host_workdir = root / "work"
        self.workdir = str(self.host_workdir)
        self.task_dir = str(task.path)
        self.home = root / "home"
        self._keep = keep
        self._cancel = cancel
        self._closed = False

    def command_env(self, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        """The environment every command here gets: no credentials, a private HOME/TMPDIR.

        ``TASK_DIR`` is not in it: the runner adds it for the task's own scripts (setup,
        verify, solution) only, so an agent's tools cannot read ``verify.sh``.
        """
        tmp = self.root / "tmp"
        tmp.mkdir(exist_ok=True)
        base = {
            "WORK_DIR": self.workdir,
            "HOME": str(self.home),
            "TMPDIR": str(tmp),
            "PYTHONDONTWRITEBYTECODE": "1",
        }
        return scrubbed_env({**base, **(extra or {})})

    def exec(
        self,
        command: str,
        *,
        timeout: float,
        env: Mapping[str, str] | None = None,
        stdin: str | None = None,
    ) -> ExecResult:
        return run_process_group(
            ["bash", "-c", command],
            cwd=self.host_workdir,
            env=self.command_env(env),
            timeout=timeout,
            stdin=stdin,
            cancel=self._cancel,
        )

    def _resolve(self, path: str) -> Path:
        """A path inside the workspace; anything that resolves outside it is refused."""
        root = self.host_workdir.resolve()
        p = (root / path).resolve()
        if not p.is_relative_to(root):
            raise PermissionError(13, "outside the workspace", path)
        return p

    def read_file(self, path: str) -> str:
        return self._resolve(path).read_text(encoding="utf-8", errors="replace")

    def write_file(self, path: str, content: str) -> None:
        target = self._resolve(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content, encoding="utf-8")

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if not self._keep:
            shutil.rmtree(self.root, ignore_errors=True)


class LocalSandboxProvider(SandboxProvider):
    """Fresh workspaces under ``base_dir`` (default: the system temp dir)."""

    def __init__(self, base_dir: str | os.PathLike[str] | None = None, keep: bool = False,
                 cancel: threading.Event | None = None) -> None:
        """``cancel``, once set, kills whatever runs in this provider's sandboxes and makes
        further commands fail (the gate sets it on Ctrl-C or SIGTERM)."""
        self.base_dir = Path(base_dir) if base_dir else None
        self.keep = keep
        self.cancel = cancel

    def create(self, task: Task, run_name: str) -> LocalSandbox:
        if self.base_dir:
            self.base_dir.mkdir(parents=True, exist_ok=True)
        safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in run_name)
        try:
            root = Path(tempfile.mkdtemp(prefix=f"gate-{safe}-", dir=self.base_dir))
            sandbox = LocalSandbox(root, task, keep=self.keep, cancel=self.cancel)
            if task.starting_dir:
                shutil.copytree(task.starting_dir, sandbox.host_workdir, symlinks=True)
            else:
                sandbox.host_workdir.mkdir()
            sandbox.home.mkdir()
        except OSError as exc:
            raise SandboxError(f"cannot prepare workspace: {exc}") from exc
        return sandbox
