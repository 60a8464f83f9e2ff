"""Task formats: one contract, one module per format, found by a lazy name → module table.

A *task format* is everything that makes a directory a task of one kind (the gate's own
layouts, Harbor's): how it is recognised (:meth:`TaskFormat.detect`), loaded into a
:class:`Task` (:meth:`~TaskFormat.load`), how its own scripts run
(:meth:`~TaskFormat.run_script`), how a run of it is verified (:meth:`~TaskFormat.verify`: the
verifier lives with its format, not in a sandbox), and what container it needs
(:attr:`~TaskFormat.lifecycle`: a fresh container per command, or one long-lived container per
run, :class:`Container`, which a container backend offers as ``gate.sandbox.RunContainer``).

The import direction is one way: ``gate.sandbox`` → ``gate.core.tasks`` (suites) → here. This unit
holds the contract and its data (``_contract``: :class:`TaskFormat`, :class:`ExecResult`,
:class:`Verification`, :class:`ContainerSpec`), the :class:`Task` every format builds
(``_task``), and the formats; it imports neither the sandbox nor the suite loader. A format
drives a sandbox only through the ports the contract states (:class:`Workspace`,
:class:`Container`), which the sandbox's classes satisfy; the sandbox re-exports the data
types and :mod:`gate.core.tasks` re-exports the task.

A new format is one module here (``gate/formats/_<name>.py``) with a ``FORMAT`` object and one
line in :data:`FORMATS`; the module is imported only when a directory is checked against it or
a task of it runs (as Harbor's ``environments/factory.py`` maps names to modules). Detection
goes in the table's order; the first format that recognises a directory loads it, and a
directory no format recognises is reported by the gate's own layout (its ``missing task.md``).
"""

from __future__ import annotations

import importlib
from pathlib import Path

from gate.formats._contract import (
    Container,
    ContainerSpec,
    ExecResult,
    Lifecycle,
    TaskFormat,
    Verification,
    Workspace,
)
from gate.formats._task import (
    DEFAULT_TASK_TIMEOUT,
    DEFAULT_VERIFY_TIMEOUT,
    NEEDS_CONTAINER,
    Task,
    TaskEnvironment,
    TaskMeta,
    TaskStep,
    reading,
)

#: format name → module holding its ``FORMAT``; detection order (the gate's own layout last:
#: it is the fallback that names what is missing)
FORMATS: dict[str, str] = {
    "harbor": "gate.formats._harbor",
    "gate": "gate.formats._gate",
}
FALLBACK = "gate"


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


def task_format(task: Task) -> TaskFormat:
    """The format ``task`` was loaded by."""
    return get_format(task.layout)


__all__ = [
    "DEFAULT_TASK_TIMEOUT",
    "DEFAULT_VERIFY_TIMEOUT",
    "FALLBACK",
    "FORMATS",
    "NEEDS_CONTAINER",
    "Container",
    "ContainerSpec",
    "ExecResult",
    "Lifecycle",
    "Task",
    "TaskEnvironment",
    "TaskFormat",
    "TaskMeta",
    "TaskStep",
    "Verification",
    "Workspace",
    "detect_format",
    "get_format",
    "reading",
    "task_format",
]
