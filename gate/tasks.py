"""Task suites: the loaded task (:class:`Task`), suites of them, digests.

Which directories are tasks, and how each is loaded, run and verified, is its *format*'s
(:mod:`gate.formats`, one module per format); three layouts load without conversion:
- SWE-lite: ``setup.sh`` + ``task.md`` + ``verify.sh``  (``gate.formats._gate``)
- effectiveness benchmark: ``starting/`` + ``task.md`` + ``verify.sh`` + ``metadata.json``
  + ``README.md``  (``gate.formats._gate``)
- Harbor (Terminal-Bench, SkillsBench): ``instruction.md`` (or ``[[steps]]`` with
  ``steps/<name>/instruction.md``) + ``task.toml`` + ``environment/Dockerfile`` +
  ``tests/test.sh`` (+ ``solution/solve.sh``)  (``gate.formats._harbor``, schema
  :mod:`gate.harbor`); it always runs in a container.
The first two may add ``task.toml`` and ``solution/solve.sh``; there ``task.toml`` is ours
(:class:`TaskMeta`): a key the gate does not know is an error naming it, not ignored (a
misspelt ``verify_timout`` would silently change nothing). A Harbor ``task.toml`` keeps
Harbor's schema: keys the gate does not honour are listed (``Task.unhonoured``).

A task id is its directory name, restricted to :data:`TASK_ID_PATTERN`; a directory with
another name is reported as a broken task under its escaped name.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from gate._files import printable
from gate.errors import BadInput
from gate.harbor import HarborTask

if TYPE_CHECKING:
    from gate.formats import TaskFormat

#: Task ids: letters, digits, ``.``, ``_``, ``+``, ``-``, starting with a letter or digit, at most
#: 128 characters. A task id is a directory name, a log line, a comment row and part of file
#: names; it must never carry a newline (a forged log line), a slash or markup.
TASK_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._+-]{0,127}$"
_TASK_ID = re.compile(TASK_ID_PATTERN)
NEEDS_CONTAINER = ("needs the container sandbox (the task is not run on the host instead; "
                   "[suite].sandbox = \"docker\" with a Docker engine runs it)")

DEFAULT_VERIFY_TIMEOUT = 30.0
DEFAULT_TASK_TIMEOUT = 600.0
_IGNORED_NAMES = {"__pycache__", ".DS_Store", ".git"}


class TaskEnvironment(BaseModel):
    """``[environment]``: the container a task runs in, and its limits.

    ``image`` names an image; otherwise ``environment/Dockerfile`` (or ``dockerfile``, a path
    inside the task) is built. The limits apply to every container of the task's runs."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    image: str | None = Field(default=None, min_length=1, max_length=256)
    dockerfile: str | None = None
    network: bool = False  # opt in to a network; by default a task's containers have none
    cpus: float | None = Field(default=None, gt=0, le=64)
    memory_mb: int | None = Field(default=None, ge=16)
    pids: int | None = Field(default=None, ge=16)

    @field_validator("dockerfile")
    @classmethod
    def _inside(cls, v: str | None) -> str | None:
        if v is not None and (v.startswith("/") or ".." in Path(v).parts):
            raise ValueError("must be a path inside the task directory")
        return v


class TaskMeta(BaseModel):
    """``task.toml`` of our layouts: optional metadata. An unknown key is an error naming it."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    difficulty: str | None = None
    category: str | None = None
    tags: list[str] = Field(default_factory=list)
    max_turns: int | None = Field(default=None, gt=0)
    verify_timeout: float | None = Field(default=None, gt=0)
    task_timeout: float | None = Field(default=None, gt=0)
    environment: TaskEnvironment | None = None
    skills: list[str] = Field(default_factory=list)

    @field_validator("difficulty")
    @classmethod
    def _known_difficulty(cls, v: str | None) -> str | None:
        if v is not None and v not in {"easy", "medium", "hard"}:
            raise ValueError("must be one of easy, medium, hard")
        return v


@dataclass(frozen=True)
class TaskStep:
    """One step of a multi-step task: its name and the instruction the agent gets for it."""

    name: str
    prompt: str
    task_timeout: float | None = None  # the step's agent timeout (None: the task's)
    verify_timeout: float | None = None  # the step's verifier timeout (None: the task's)


@dataclass(frozen=True)
class Task:
    """One loaded task. ``id`` is its directory name; ``digest`` covers every file in it.

    ``steps``: a multi-step task's steps, run in order in one sandbox (``prompt`` is then the
    first step's); ``skills_root``: a folder of skills the task itself ships (Harbor /
    SkillsBench ``environment/skills/``), which the gate's skill conditions switch like any
    other skill."""

    id: str
    path: Path
    prompt: str
    digest: str
    meta: TaskMeta
    metadata: dict[str, Any] = field(default_factory=dict)
    harbor: HarborTask | None = field(default=None, compare=False)
    format_name: str = "gate"
    steps: tuple[TaskStep, ...] = ()
    skills_root: Path | None = None
    step: int | None = None  # the step this task stands for (Task.for_step)

    @property
    def layout(self) -> str:
        """The task's format: ``harbor`` for a Harbor-format task, ``gate`` for our two
        layouts (:mod:`gate.formats`)."""
        return "harbor" if self.harbor is not None else self.format_name

    @property
    def unhonoured(self) -> list[str]:
        """Keys of a foreign ``task.toml`` the gate does not act on (listed, never dropped)."""
        return self.harbor.unhonoured if self.harbor is not None else []

    @property
    def verify_script(self) -> Path:
        if self.harbor is not None:
            return self.path / "tests" / "test.sh"
        return self.path / "verify.sh"

    @property
    def setup_script(self) -> Path | None:
        p = self.path / "setup.sh"
        return p if p.is_file() and self.harbor is None else None

    @property
    def starting_dir(self) -> Path | None:
        p = self.path / "starting"
        return p if p.is_dir() and self.harbor is None else None

    @property
    def solution_script(self) -> Path | None:
        base = self.path if self.step is None else self.path / "steps" / self.steps[self.step].name
        p = base / "solution" / "solve.sh"
        return p if p.is_file() else None

    @property
    def image(self) -> str | None:
        env = self.meta.environment
        return env.image if env else None

    @property
    def dockerfile(self) -> Path | None:
        """The Dockerfile to build this task's image from, if it has one."""
        env = self.meta.environment
        if env and env.dockerfile:
            return self.path / env.dockerfile
        p = self.path / "environment" / "Dockerfile"
        return p if p.is_file() else None

    @property
    def build_timeout(self) -> float | None:
        """Seconds an image build may take (Harbor's ``build_timeout_sec``)."""
        return self.harbor.config.environment.build_timeout_sec if self.harbor else None

    @property
    def container_need(self) -> str | None:
        """Why this task needs a container (``None``: it runs on the host too)."""
        if self.harbor is not None:
            return f"a Harbor-format task {NEEDS_CONTAINER}"
        if self.meta.environment is not None:
            return f"task.toml: [environment] {NEEDS_CONTAINER}"
        if (self.path / "environment").exists():
            return f"environment/ {NEEDS_CONTAINER}"
        return None

    @property
    def difficulty(self) -> str | None:
        """From ``task.toml``, else from the effectiveness layout's ``metadata.json``."""
        if self.meta.difficulty:
            return self.meta.difficulty
        d = self.metadata.get("difficulty")
        return d if isinstance(d, str) else None

    def for_step(self, index: int) -> Task:
        """The task as its step ``index`` shows it: that step's prompt and timeouts."""
        step = self.steps[index]
        meta = self.meta.model_copy(update={
            "task_timeout": step.task_timeout or self.meta.task_timeout,
            "verify_timeout": step.verify_timeout or self.meta.verify_timeout})
        return dataclasses.replace(self, prompt=step.prompt, meta=meta, step=index)

    def verify_timeout(self, default: float = DEFAULT_VERIFY_TIMEOUT) -> float:
        return self.meta.verify_timeout or default

    def task_timeout(self, default: float = DEFAULT_TASK_TIMEOUT) -> float:
        return self.meta.task_timeout or default


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


def _iter_files(root: Path) -> Iterable[Path]:
    for p in sorted(root.rglob("*")):
        if any(part in _IGNORED_NAMES for part in p.relative_to(root).parts):
            continue
        if p.is_file() or p.is_symlink():
            yield p


def digest_dir(root: Path) -> str:
    """sha256 over relative paths, executable bits and contents: renames and edits both show.
    Files are streamed: a large file in ``starting/`` costs time, not memory."""
    h = hashlib.sha256()
    for p in _iter_files(root):
        rel = p.relative_to(root).as_posix()
        if p.is_symlink():
            body = b"link:" + str(p.readlink()).encode()
            h.update(f"{rel}\0-\0{len(body)}\0".encode())
            h.update(body)
            continue
        with p.open("rb") as fh:
            st = os.fstat(fh.fileno())
            mode = "x" if st.st_mode & 0o111 else "-"
            h.update(f"{rel}\0{mode}\0{st.st_size}\0".encode())
            while chunk := fh.read(1 << 20):
                h.update(chunk)
    return "sha256:" + h.hexdigest()


def reading(name: str, path: Path, read: Callable[[], Any]) -> Any:
    """``read()``, its ``BadInput`` said as the task's problem (``<task>: <file>: why``)."""
    try:
        return read()
    except BadInput as exc:
        raise BadInput(f"{name}: {str(exc).removeprefix(f'{path}: ')}") from None


def task_format(task: Task) -> TaskFormat:
    """The format ``task`` was loaded by (:mod:`gate.formats`)."""
    from gate.formats import get_format

    return get_format(task.layout)


def load_task(path: Path) -> Task:
    """Load one task directory in whichever format recognises it; raises ``BadInput`` with
    the reason when it is not a task (``<escaped id>: <reason>``)."""
    from gate.formats import detect_format

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
        if d.name.startswith((".", "_")) or d.name in _IGNORED_NAMES:
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
