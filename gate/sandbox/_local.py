"""The local sandbox: a fresh temporary directory and real subprocesses in their own session."""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO

from gate.core.tasks import Task
from gate.sandbox._base import (
    READ_LIMIT,
    ExecResult,
    Sandbox,
    SandboxError,
    SandboxOptions,
    SandboxProvider,
)
from gate.sandbox._contain import SCOPE, SCOPE_VAR, Scope
from gate.sandbox._quota import tree_bytes

REAPER = Path(__file__).with_name("_reaper.py")
OUTPUT_LIMIT = 1_000_000  # bytes of stdout and of stderr kept per command (head + tail)
STOP_GRACE_S = 2.0  # how long the launcher gets to kill what it started before the group is


def _kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def _launcher(argv: Sequence[str], scope: Scope | None = None) -> list[str]:
    """On Linux, the command under the per-run launcher (``_reaper.py``): a child subreaper
    that kills every descendant — ``setsid`` daemons included — when the command ends, when
    the gate stops it, and when the gate dies (even by SIGKILL); in the command's own cgroup
    where ``scope`` has one (``_contain.py``: that holds even when the command kills the
    launcher). Elsewhere (macOS) there is no subreaper: the process-group kill is all there
    is."""
    if sys.platform != "linux" or not sys.executable:
        return list(argv)
    return [sys.executable, "-I", "-S", str(REAPER), *(scope.launcher_args() if scope else ()),
            str(os.getpid()), *argv]


def _stop(proc: subprocess.Popen[bytes], launched: bool) -> None:
    """Stop a command and everything it started: the launcher (SIGTERM) kills its
    descendants first; then the whole process group, whatever is left of it."""
    if launched and proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            proc.send_signal(signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(STOP_GRACE_S)
    _kill_group(proc.pid)


def run_process_group(
    argv: Sequence[str],
    *,
    cwd: str | os.PathLike[str],
    env: Mapping[str, str],
    timeout: float,
    stdin: str | None = None,
    cancel: threading.Event | None = None,
    output_limit: int = OUTPUT_LIMIT,
) -> ExecResult:
    """Run ``argv`` as the leader of a new session and process group.

    On timeout everything it started is killed. When it exits, whatever it left running (a
    background child; on Linux also a ``setsid`` daemon, through the launcher) is killed too,
    so no process of a run outlives it. Being in its own session, the group does not see the
    terminal's Ctrl-C: ``cancel`` is how the gate stops it early (raises ``SandboxError``).
    stdout and stderr are each kept to ``output_limit`` bytes (head + tail, with a note of
    the cut), however much the command writes.
    """
    if cancel is not None and cancel.is_set():
        raise SandboxError("cancelled")
    start = time.monotonic()
    deadline = start + timeout
    scope = Scope()
    command = _launcher(argv, scope)
    launched = command != list(argv)
    try:
        proc = subprocess.Popen(
            command,
            cwd=cwd,
            env={**env, SCOPE_VAR: SCOPE},
            stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
    except BaseException:
        scope.close()
        raise
    scope.started(proc.pid)
    out, err = _Capture(output_limit), _Capture(output_limit)
    pumps = [_pump(proc.stdout, out), _pump(proc.stderr, err)]
    if stdin is not None:
        _feed(proc.stdin, stdin.encode())
    timed_out = cancelled = False
    try:
        while True:
            # short waits, so a cancel is seen within a second
            remaining = max(0.0, deadline - time.monotonic())
            step = min(0.5, remaining) if cancel is not None else remaining
            try:
                proc.wait(timeout=step)
                break
            except subprocess.TimeoutExpired:
                if cancel is not None and cancel.is_set():
                    cancelled = True
                    raise
                if time.monotonic() >= deadline:
                    raise
    except subprocess.TimeoutExpired:
        timed_out = True
    finally:
        _stop(proc, launched)
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        scope.close()  # the command's cgroup, killed as a whole: what escaped the launcher
    drained = time.monotonic() + 5  # the pipes close once everything the command started is
    for pump in pumps:  # dead (a pipe held by something outside the run: the rest is lost)
        pump.join(timeout=max(0.0, drained - time.monotonic()))
    if cancelled:
        raise SandboxError("cancelled")
    return ExecResult(
        returncode=proc.returncode if not timed_out else -signal.SIGKILL,
        stdout=out.text(),
        stderr=err.text(),
        timed_out=timed_out,
        duration_s=time.monotonic() - start,
    )


class _Capture:
    """A stream's output kept within ``limit`` bytes: the head, the tail, and a note of the cut."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0
        self._lock = threading.Lock()

    def feed(self, chunk: bytes) -> None:
        with self._lock:
            self.total += len(chunk)
            room = self.limit // 2 - len(self.head)
            if room > 0:
                self.head += chunk[:room]
                chunk = chunk[room:]
            if chunk:
                self.tail += chunk
                if len(self.tail) > self.limit - self.limit // 2:
                    del self.tail[: len(self.tail) - (self.limit - self.limit // 2)]

    def text(self) -> str:
        with self._lock:
            head, tail = bytes(self.head), bytes(self.tail)
            cut = self.total - len(head) - len(tail)
        if cut <= 0:
            return (head + tail).decode("utf-8", "replace")
        return (head.decode("utf-8", "replace")
                + f"\n[... {cut} bytes of output cut by the gate ...]\n"
                + tail.decode("utf-8", "replace"))


def _pump(stream: IO[bytes] | None, sink: _Capture) -> threading.Thread:
    def run() -> None:
        assert stream is not None
        fd = stream.fileno()
        try:
            while chunk := os.read(fd, 65536):
                sink.feed(chunk)
        except OSError:
            pass
        finally:
            stream.close()

    thread = threading.Thread(target=run, name="gate-output", daemon=True)
    thread.start()
    return thread


def _feed(stream: IO[bytes] | None, data: bytes) -> None:
    """Write stdin in the background (a command that never reads it must not block the gate)."""

    def run() -> None:
        assert stream is not None
        with contextlib.suppress(OSError):
            stream.write(data)
        with contextlib.suppress(OSError):
            stream.close()

    threading.Thread(target=run, name="gate-stdin", daemon=True).start()


class LocalSandbox(Sandbox):
    """A fresh temporary directory on the host; commands run under the per-run launcher."""

    def __init__(self, root: Path, task: Task, keep: bool = False,
                 cancel: threading.Event | None = None) -> None:
        self.root = root
        self.host_workdir = root / "work"
        self.workdir = str(self.host_workdir)
        self.task_dir = str(task.path)
        self.home = root / "home"
        self._keep = keep
        self.cancel = cancel

    def base_env(self) -> dict[str, str]:
        """A private HOME and TMPDIR. ``TASK_DIR`` is not in it: the runner adds it for the
        task's own scripts (setup, verify, solution) only, so an agent's tools cannot read
        ``verify.sh``."""
        tmp = self.root / "tmp"
        tmp.mkdir(exist_ok=True)
        return {
            "WORK_DIR": self.workdir,
            "HOME": str(self.home),
            "TMPDIR": str(tmp),
            "PYTHONDONTWRITEBYTECODE": "1",
        }

    def host_environ(self) -> Mapping[str, str]:
        return os.environ

    def fresh_home(self) -> str:
        home = self.root / "verify-home"
        shutil.rmtree(home, ignore_errors=True)
        home.mkdir(mode=0o700)
        return str(home)

    def disk_used(self) -> int:
        return tree_bytes(self.root)  # work/, home/, tmp/

    def _exec(self, command: str, *, env: dict[str, str], timeout: float, stdin: str | None,
              task_visible: bool) -> ExecResult:
        return run_process_group(
            ["bash", "-c", command],
            cwd=self.host_workdir,
            env=env,
            timeout=timeout,
            stdin=stdin,
            cancel=self.cancel,
        )

    def _resolve(self, path: str) -> Path:
        """A path inside the workspace; anything that resolves outside it is refused."""
        return resolve_inside(self.host_workdir, path)

    def _read_file(self, path: str, *, max_bytes: int, truncate: bool) -> str:
        return read_inside(self.host_workdir, path, max_bytes=max_bytes, truncate=truncate)

    def _write_file(self, path: str, content: str) -> None:
        write_inside(self.host_workdir, path, content)

    def _put_dir(self, source: Path, dest: str) -> None:
        copy_inside(self.host_workdir, source, dest)

    def _teardown(self) -> None:
        if not self._keep:
            shutil.rmtree(self.root, ignore_errors=True)


def resolve_inside(root: Path, path: str) -> Path:
    """``path`` (relative to ``root``) inside ``root``; anything resolving outside is refused."""
    base = root.resolve()
    try:
        p = (base / path).resolve()
    except RuntimeError:  # a symlink loop (Python < 3.13 raises this, not OSError)
        raise OSError(errno.ELOOP, "symlink loop", path) from None
    if not p.is_relative_to(base):
        raise PermissionError(errno.EACCES, "outside the workspace", path)
    return p


def read_inside(root: Path, path: str, *, max_bytes: int = READ_LIMIT,
                truncate: bool = False) -> str:
    """Read a regular file of the workspace at ``root`` from the host, never blocking."""
    fd = os.open(resolve_inside(root, path), os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW)
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise IsADirectoryError(errno.EISDIR, "is a directory", path)
        if not stat.S_ISREG(st.st_mode):
            raise OSError(errno.EINVAL, "not a regular file", path)
        if st.st_size > max_bytes and not truncate:
            raise OSError(errno.EFBIG, f"{st.st_size} bytes, over the gate's limit of "
                          f"{max_bytes}", path)
        with os.fdopen(fd, "rb", closefd=False) as fh:
            data = fh.read(max_bytes)
    finally:
        os.close(fd)
    return data.decode("utf-8", errors="replace")


def write_inside(root: Path, path: str, content: str) -> Path:
    """Write a regular file of the workspace at ``root`` from the host; returns its path."""
    target = resolve_inside(root, path)
    target.parent.mkdir(parents=True, exist_ok=True)
    data = content.encode("utf-8")
    # never blocks on a FIFO (no reader: ENXIO) and never follows a planted symlink
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_NONBLOCK | os.O_NOFOLLOW, 0o644)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file", path)
        os.ftruncate(fd, 0)
        with os.fdopen(fd, "wb", closefd=False) as fh:
            fh.write(data)
    finally:
        os.close(fd)
    return target


def copy_inside(root: Path, source: Path, dest: str) -> Path:
    """Copy the host folder ``source`` to ``dest`` in the workspace at ``root`` (replacing
    what is there; a ``dest`` resolving outside the workspace is refused); returns its path."""
    target = resolve_inside(root, dest)
    if target.is_symlink() or target.is_file():
        target.unlink()
    elif target.exists():
        shutil.rmtree(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    resolve_inside(root, str(target.parent.relative_to(root.resolve())))  # made, still inside
    shutil.copytree(source, target, symlinks=True,
                    ignore=shutil.ignore_patterns("__pycache__", ".DS_Store", ".git"))
    return target


def make_workspace(task: Task, run_name: str, base_dir: Path | None, keep: bool = False) -> Path:
    """A fresh private directory holding ``work/`` (``starting/`` copied in) and ``home/``."""
    if base_dir:
        base_dir.mkdir(parents=True, exist_ok=True)
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in run_name)
    try:
        root = Path(tempfile.mkdtemp(prefix=f"gate-{safe}-", dir=base_dir))
    except OSError as exc:
        raise SandboxError(f"cannot prepare workspace: {exc}") from exc
    try:
        if task.starting_dir:
            shutil.copytree(task.starting_dir, root / "work", symlinks=True)
        else:
            (root / "work").mkdir()
        (root / "home").mkdir()
    except OSError as exc:
        if not keep:  # a half-made workspace is removed (unless workspaces are kept)
            shutil.rmtree(root, ignore_errors=True)
        raise SandboxError(f"cannot prepare workspace: {_first_line(exc)}") from exc
    return root


class LocalSandboxProvider(SandboxProvider):
    """Fresh workspaces under ``base_dir`` (default: the system temp dir).

    Tasks that need a container (an image or a Dockerfile) are refused: they never run on
    the host instead."""

    name = "local"

    def __init__(self, base_dir: str | os.PathLike[str] | None = None, keep: bool = False,
                 cancel: threading.Event | None = None,
                 options: SandboxOptions | None = None) -> None:
        """``cancel``, once set, kills whatever runs in this provider's sandboxes and makes
        further commands fail (the gate sets it on Ctrl-C or SIGTERM)."""
        super().__init__(options or SandboxOptions(
            keep=keep, cancel=cancel, base_dir=Path(base_dir) if base_dir else None))
        self.base_dir = self.options.base_dir

    def refusal(self, task: Task) -> str | None:
        return task.container_need

    def _create(self, task: Task, run_name: str) -> LocalSandbox:
        root = make_workspace(task, run_name, self.base_dir, keep=self.keep)
        return LocalSandbox(root, task, keep=self.keep, cancel=self.cancel)


def _first_line(exc: OSError) -> str:
    """shutil.copytree's error lists every file that failed; the first one says enough."""
    if isinstance(exc, shutil.Error) and exc.args and isinstance(exc.args[0], list):
        errors = exc.args[0]
        first = errors[0] if errors else None
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        if isinstance(first, tuple) and len(first) == 3:
            return f"{first[0]}: {first[2]}{more}"
    return str(exc)
