"""Task suites: loading task directories through their formats; suites of them, digests.

The loaded task (:class:`Task`, :class:`TaskMeta` ...) is what a format builds, so it is
defined with the formats (:mod:`gate.formats`) and re-exported here, as :func:`digest_dir` is
from :mod:`gate._files`: ``from gate.core.tasks import Task, load_suite`` is how the rest of the
gate names them. This module sits above the formats and imports nothing that imports it.

Which directories are tasks, and how each is loaded, run and verified, is its *format*'s
(:mod:`gate.formats`, one module per format); three layouts load without conversion:
- SWE-lite: ``setup.sh`` + ``task.md`` + ``verify.sh``  (``gate.formats._gate``)
- effectiveness benchmark: ``starting/`` + ``task.md`` + ``verify.sh`` + ``metadata.json``
  + ``README.md``  (``gate.formats._gate``)
- Harbor (Terminal-Bench, SkillsBench): ``instruction.md`` (or ``[[steps]]`` with
  ``steps/<name>/instruction.md``) + ``task.toml`` + ``environment/Dockerfile`` +
  ``tests/test.sh`` (+ ``solution/solve.sh``)  (``gate.formats._harbor``, schema
  :mod:`gate.formats._harbor_schema`); it always runs in a container.
The first two may add ``task.toml`` and ``solution/solve.sh``; there ``task.toml`` is ours
(:class:`TaskMeta`): a key the gate does not know is an error naming it, not ignored (a
misspelt ``verify_timout`` would silently change nothing). A Harbor ``task.toml`` keeps
Harbor's schema: keys the gate does not honour are listed (``Task.unhonoured``).

A task id is its directory name, restricted to :data:`TASK_ID_PATTERN`; a directory with
another name is reported as a broken task under its escaped name.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from gate._files import IGNORED_NAMES, digest_dir, printable
from gate.errors import BadInput
from gate.formats import (
    DEFAULT_TASK_TIMEOUT,
    DEFAULT_VERIFY_TIMEOUT,
    NEEDS_CONTAINER,
    Task,
    TaskEnvironment,
    TaskMeta,
    TaskStep,
    detect_format,
    reading,
    task_format,
)

#: Task ids: letters, digits, ``.``, ``_``, ``+``, ``-``, starting with a letter or digit, at most
#: 128 characters. A task id is a directory name, a log line, a comment row and part of file
#: names; it must never carry a newline (a forged log line), a slash or markup.
TASK_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._+-]{0,127}$"
_TASK_ID = re.compile(TASK_ID_PATTERN)


@dataclass(frozen=True)
class TaskProblem:
    """A task directory that could not be loaded, and why."""

    name: str
    reason: str


@dataclass(frozen=True)
class Suite:
    root: Path
    tasks: tuple[Task, ...]
    problems: tuple[TaskProblem, ...] = ()

    @property
    def digest(self) -> str:
        return suite_digest({t.id: t.digest for t in self.tasks})

    def get(self, task_id: str) -> Task:
        for t in self.tasks:
            if t.id == task_id:
                return t
        raise KeyError(task_id)


def suite_digest(task_digests: dict[str, str]) -> str:
    h = hashlib.sha256()
    for tid in sorted(task_digests):
        h.update(f"{tid}\0{task_digests[tid]}\n".encode())
    return "sha256:" + h.hexdigest()



def load_task(path: Path) -> Task:
    """Load one task directory in whichever format recognises it; raises ``BadInput`` with
    the reason when it is not a task (``<escaped id>: <reason>``)."""
    name = printable(path.name)
    if not _TASK_ID.fullmatch(path.name):  # `$` alone would let a final newline through
        raise BadInput(f"{name}: not a valid task id (letters, digits, '.', '_', '+', '-'; "
                       "starting with a letter or digit; at most 128 characters)")
    return detect_format(path).load(path, name)


def load_suite(root: str | Path, only: Iterable[str] | None = None) -> Suite:
    """Load every task under ``root``. Broken task directories become ``problems`` (under their
    escaped names); the rest of the suite still loads. ``only`` selects task ids (unknown ids
    are bad input)."""
    base = Path(root)
    if not base.is_dir():
        raise BadInput(f"{base}: task suite directory not found")
    wanted = list(only) if only else None
    tasks: list[Task] = []
    problems: list[TaskProblem] = []
    for d in sorted(p for p in base.iterdir() if p.is_dir()):
        if d.name.startswith((".", "_")) or d.name in IGNORED_NAMES:
            continue
        if wanted is not None and d.name not in wanted:
            continue
        try:
            tasks.append(load_task(d))
        except BadInput as exc:
            name = printable(d.name)
            problems.append(TaskProblem(name, printable(str(exc).removeprefix(f"{name}: "))))
    if wanted is not None:
        found = {t.id for t in tasks} | {p.name for p in problems}
        missing = [printable(w) for w in wanted if w not in found]
        if missing:
            raise BadInput(f"{base}: no task named {', '.join(missing)}")
    return Suite(root=base.resolve(), tasks=tuple(tasks), problems=tuple(problems))


__all__ = [
    "DEFAULT_TASK_TIMEOUT",
    "DEFAULT_VERIFY_TIMEOUT",
    "NEEDS_CONTAINER",
    "TASK_ID_PATTERN",
    "Suite",
    "Task",
    "TaskEnvironment",
    "TaskMeta",
    "TaskProblem",
    "TaskStep",
    "digest_dir",
    "load_suite",
    "load_task",
    "reading",
    "suite_digest",
    "task_format",
]
