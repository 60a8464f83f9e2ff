"""Task formats: one contract, one module per format, found by a lazy name → module table.

A *task format* is everything that makes a directory a task of one kind (the gate's own
layouts, Harbor's): how it is recognised (:meth:`TaskFormat.detect`), loaded into a
:class:`~gate.tasks.Task` (:meth:`~TaskFormat.load`), how its own scripts run
(:meth:`~TaskFormat.run_script`), how a run of it is verified (:meth:`~TaskFormat.verify`: the
verifier lives with its format, not in a sandbox), and what container it needs
(:attr:`~TaskFormat.lifecycle`: a fresh container per command, or one long-lived container per
run, a mode a container backend offers as :class:`~gate.sandbox.RunContainer`).

A new format is one module here with a ``FORMAT`` object and one line in :data:`FORMATS`; the
module is imported only when a directory is checked against it or a task of it runs (as
Harbor's ``environments/factory.py`` maps names to modules). Detection goes in the table's
order; the first format that recognises a directory loads it, and a directory no format
recognises is reported by the gate's own layout (its ``missing task.md``).
"""

from __future__ import annotations

import abc
import importlib
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar, Literal

if TYPE_CHECKING:
    from gate.sandbox import ContainerSpec, ExecResult, Sandbox, Verification
    from gate.tasks import Task

Lifecycle = Literal["per_command", "per_run"]

#: format name → module holding its ``FORMAT``; detection order (the gate's own layout last:
#: it is the fallback that names what is missing)
FORMATS: dict[str, str] = {
    "harbor": "gate.formats._harbor",
    "gate": "gate.formats._gate",
}
FALLBACK = "gate"


class TaskFormat(abc.ABC):
    """One task format. Stateless: one instance serves every task and thread."""

    name: ClassVar[str]
    #: ``per_command``: any sandbox, a fresh container per command where one is needed;
    #: ``per_run``: one long-lived container per run (the task's state is its filesystem)
    lifecycle: ClassVar[Lifecycle] = "per_command"

    @abc.abstractmethod
    def detect(self, path: Path) -> bool:
        """Whether ``path`` is a task of this format (cheap: file names only)."""

    @abc.abstractmethod
    def load(self, path: Path, name: str) -> Task:
        """The task at ``path``; ``BadInput`` starting ``<name>: `` names what is wrong."""

    def container_spec(self, task: Task) -> ContainerSpec:
        """The long-lived container a ``per_run`` task needs (its workdir, user, limits)."""
        raise NotImplementedError(f"the {self.name} format runs in any sandbox")

    def refusal(self, task: Task) -> str | None:
        """Why the gate cannot run ``task`` as its format means it (``None``: it can)."""
        return None

    def start(self, sandbox: Sandbox) -> None:
        """Called once the sandbox of a run is ready, before setup and the agent."""
        return None

    @abc.abstractmethod
    def run_script(self, sandbox: Sandbox, rel: str, *, timeout: float) -> ExecResult:
        """Run the task's own script ``rel`` (``setup.sh``, ``solution/solve.sh`` ...)."""

    @abc.abstractmethod
    def verify(self, sandbox: Sandbox, *, timeout: float,
               step: int | None = None) -> Verification:
        """Verify the run in ``sandbox`` once its agent is done (``step``: the index of the
        step of a multi-step task that just ended)."""


def get_format(name: str) -> TaskFormat:
    """The format called ``name`` (imported on first use)."""
    try:
        module = FORMATS[name]
    except KeyError:
        raise KeyError(f"unknown task format {name!r} (known: {', '.join(FORMATS)})") from None
    fmt: TaskFormat = importlib.import_module(module).FORMAT
    return fmt


def detect_format(path: Path) -> TaskFormat:
    """The format that recognises ``path`` (the fallback when none does)."""
    for name in FORMATS:
        if name != FALLBACK and get_format(name).detect(path):
            return get_format(name)
    return get_format(FALLBACK)


__all__ = ["FALLBACK", "FORMATS", "Lifecycle", "TaskFormat", "detect_format", "get_format"]
