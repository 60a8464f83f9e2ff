"""What a task format loads a directory into: :class:`Task` (with :class:`TaskMeta`, our
``task.toml``; :class:`TaskEnvironment`, the container it runs in; :class:`TaskStep`, one step
of a multi-step task).

This data lives in the formats' unit because every format builds it and the sandbox, the runner
and the skills only read it; :mod:`gate.core.tasks` re-exports it
(``from gate.core.tasks import Task``).
A :class:`Task` is data: what differs between formats (which script verifies, whether the task
needs a container, how its reference solution runs ...) is answered by its format when it loads
the task, in the fields below, and never looked up again by asking which format it was. What a
format read the task from in its own terms (Harbor's ``task.toml``) rides along in
:attr:`Task.native`, which only that format reads.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from gate.errors import BadInput

NEEDS_CONTAINER = ("needs the container sandbox (the task is not run on the host instead; "
                   "[suite].sandbox = \"docker\" with a Docker engine runs it)")

DEFAULT_VERIFY_TIMEOUT = 30.0
DEFAULT_TASK_TIMEOUT = 600.0


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
    other skill.

    The fields from ``format_name`` on are its format's answers, given when it loads the task
    (a field left at its default asks nothing of the gate): the scripts the gate runs itself,
    the folder copied into the workspace, why it needs a container, how long its image may
    take to build, the keys of a foreign ``task.toml`` the gate does not act on, and how its
    reference solution runs."""

    id: str
    path: Path
    prompt: str
    digest: str
    meta: TaskMeta
    metadata: dict[str, Any] = field(default_factory=dict)
    #: the format's own reading of the task (Harbor's:
    #: :class:`gate.formats._harbor_schema.HarborTask`); only that format reads it
    native: Any = field(default=None, compare=False, repr=False)
    format_name: str = "gate"
    steps: tuple[TaskStep, ...] = ()
    skills_root: Path | None = None
    step: int | None = None  # the step this task stands for (Task.for_step)
    setup_script: Path | None = None  # run (through the format) before the agent
    starting_dir: Path | None = None  # copied into the workspace before anything runs
    verify_script: Path | None = None  # the verifier's script, for a reader to see
    container_need: str | None = None  # why it needs a container (None: the host runs it too)
    build_timeout: float | None = None  # seconds its image build may take (None: no limit)
    #: keys of a foreign ``task.toml`` the gate does not act on (listed, never dropped)
    unhonoured: list[str] = field(default_factory=list, compare=False)
    #: the variables of a reference solution that runs whole from its own folder (Harbor's
    #: oracle: ``TASK_DIR`` is that folder, plus ``[solution].env``); ``None``: the solution
    #: runs in the workspace, as ``bash <task>/solution/solve.sh``
    solution_env: dict[str, str] | None = field(default=None, compare=False)

    @property
    def layout(self) -> str:
        """The task's format (:mod:`gate.formats`): ``harbor``, ``gate`` (our two layouts) ..."""
        return self.format_name

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


def reading(name: str, path: Path, read: Callable[[], Any]) -> Any:
    """``read()``, its ``BadInput`` said as the task's problem (``<task>: <file>: why``)."""
    try:
        return read()
    except BadInput as exc:
        raise BadInput(f"{name}: {str(exc).removeprefix(f'{path}: ')}") from None
