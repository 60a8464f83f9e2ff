from __future__ import annotations

import abc
import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from types import TracebackType

from gate.tasks import Task

READ_LIMIT = 10_000_000  # bytes: the largest file the gate reads out of a workspace


class SandboxError(Exception):
    """The sandbox itself failed (not the task): an infra error."""


def clip(text: str, limit: int, hint: str = "") -> str:
    """``text`` within about ``limit`` characters: the head, the tail, and a note of the cut."""
    if len(text) <= limit:
        return text
    head, tail = text[: limit * 2 // 3], text[len(text) - limit // 3:]
    cut = len(text) - len(head) - len(tail)
    return f"{head}\n[... {cut} characters cut by the gate{hint} ...]\n{tail}"


@dataclass(frozen=True)
class ExecResult:
    returncode: int
    stdout: str
    stderr: str
    timed_out: bool = False
    duration_s: float = 0.0

    @property
    def output(self) -> str:
        """stdout then stderr, as a terminal user would see them."""
        if self.stdout and self.stderr:
            return self.stdout.rstrip("\n") + "\n" + self.stderr
        return self.stdout or self.stderr


class Sandbox(abc.ABC):
    """A prepared workspace for one (task, replication).

    ``workdir`` and ``task_dir`` are paths as commands inside the sandbox see them. Every
    command runs with cwd = ``workdir`` and ``WORK_DIR`` in its environment, and never with a
    credential; the runner adds ``TASK_DIR`` for the task's own scripts only.
    """

    workdir: str
    task_dir: str

    @abc.abstractmethod
    def exec(
        self,
        command: str,
        *,
        timeout: float,
        env: Mapping[str, str] | None = None,
        stdin: str | None = None,
    ) -> ExecResult:
        """Run ``command`` with bash; on timeout the whole process group is killed."""

    @abc.abstractmethod
    def read_file(self, path: str, *, max_bytes: int = READ_LIMIT, truncate: bool = False) -> str:
        """Read a regular file; relative paths are relative to ``workdir``.

        Never blocks (a FIFO is refused) and never reads more than ``max_bytes``: a larger
        file raises ``OSError`` (EFBIG), or with ``truncate`` gives its first ``max_bytes``.
        """

    @abc.abstractmethod
    def write_file(self, path: str, content: str) -> None:
        """Write a regular file, creating parent directories; relative to ``workdir``."""

    @abc.abstractmethod
    def close(self) -> None:
        """Tear down (remove the workspace unless asked to keep it). Safe to call twice."""

    def __enter__(self) -> Sandbox:
        return self

    def __exit__(
        self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


class SandboxProvider(abc.ABC):
    """Makes fresh sandboxes; holds no per-run state, so runs can go in parallel."""

    @abc.abstractmethod
    def create(self, task: Task, run_name: str) -> Sandbox:
        """A fresh sandbox with ``starting/`` copied in (``setup.sh`` is run by the runner)."""


def script_env(sandbox: Sandbox) -> dict[str, str]:
    """Extra environment for the task's own scripts (setup, verify, solution)."""
    return {"TASK_DIR": sandbox.task_dir}


def task_script(sandbox: Sandbox, rel: str) -> str:
    """The command that runs one of the task's own scripts (path quoted for the shell)."""
    return f"bash {shlex.quote(f'{sandbox.task_dir}/{rel}')}"
