"""Task suites: load a directory of tasks in either layout, validate metadata, digest contents.

Two layouts load without conversion:
- SWE-lite: ``setup.sh`` + ``task.md`` + ``verify.sh``
- effectiveness benchmark: ``starting/`` + ``task.md`` + ``verify.sh`` + ``metadata.json``
  + ``README.md``
Both may add ``task.toml`` and ``solution/solve.sh``.
"""

from __future__ import annotations

import hashlib
import json
import tomllib
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from gate._files import describe_validation_error
from gate.errors import BadInput

DEFAULT_VERIFY_TIMEOUT = 30.0
DEFAULT_TASK_TIMEOUT = 600.0
_IGNORED_NAMES = {"__pycache__", ".DS_Store", ".git"}


class TaskEnvironment(BaseModel):
    """Where the task runs: locally (default) or in a container image / Dockerfile."""

    model_config = ConfigDict(extra="forbid")

    image: str | None = None
    dockerfile: str | None = None


class TaskMeta(BaseModel):
    """``task.toml``: optional metadata. Unknown keys are kept, not rejected, for forward use."""

    model_config = ConfigDict(extra="allow")

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
class Task:
    """One loaded task. ``id`` is its directory name; ``digest`` covers every file in it."""

    id: str
    path: Path
    prompt: str
    digest: str
    meta: TaskMeta
    metadata: dict[str, Any] = field(default_factory=dict)

    @property
    def verify_script(self) -> Path:
        return self.path / "verify.sh"

    @property
    def setup_script(self) -> Path | None:
        p = self.path / "setup.sh"
        return p if p.is_file() else None

    @property
    def starting_dir(self) -> Path | None:
        p = self.path / "starting"
        return p if p.is_dir() else None

    @property
    def solution_script(self) -> Path | None:
        p = self.path / "solution" / "solve.sh"
        return p if p.is_file() else None

    @property
    def difficulty(self) -> str | None:
        """From ``task.toml``, else from the effectiveness layout's ``metadata.json``."""
        if self.meta.difficulty:
            return self.meta.difficulty
        d = self.metadata.get("difficulty")
        return d if isinstance(d, str) else None

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
    """sha256 over relative paths, executable bits and contents: renames and edits both show."""
    h = hashlib.sha256()
    for p in _iter_files(root):
        rel = p.relative_to(root).as_posix()
        link = p.is_symlink()
        body = b"link:" + str(p.readlink()).encode() if link else p.read_bytes()
        mode = "x" if not link and p.stat().st_mode & 0o111 else "-"
        h.update(f"{rel}\0{mode}\0{len(body)}\0".encode())
        h.update(body)
    return "sha256:" + h.hexdigest()


def load_task(path: Path) -> Task:
    """Load one task directory; raises ``BadInput`` with the reason when it is not a task."""
    name = path.name
    if not (path / "task.md").is_file():
        raise BadInput(f"{name}: missing task.md")
    if not (path / "verify.sh").is_file():
        raise BadInput(f"{name}: missing verify.sh")
    try:
        prompt = (path / "task.md").read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise BadInput(f"{name}: cannot read task.md: {exc}") from None
    meta = TaskMeta()
    toml_path = path / "task.toml"
    if toml_path.exists():
        try:
            meta = TaskMeta.model_validate(tomllib.loads(toml_path.read_text(encoding="utf-8")))
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
            raise BadInput(f"{name}: unreadable task.toml: {exc}") from None
        except ValidationError as exc:
            raise BadInput(f"{name}: task.toml: {describe_validation_error(exc)}") from None
    metadata: dict[str, Any] = {}
    meta_json = path / "metadata.json"
    if meta_json.exists():
        try:
            loaded = json.loads(meta_json.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise BadInput(f"{name}: unreadable metadata.json: {exc}") from None
        if not isinstance(loaded, dict):
            raise BadInput(f"{name}: metadata.json must be a JSON object")
        metadata = loaded
    return Task(
        id=name, path=path.resolve(), prompt=prompt, digest=digest_dir(path), meta=meta,
        metadata=metadata,
    )


def load_suite(root: str | Path, only: Iterable[str] | None = None) -> Suite:
    """Load every task under ``root``. Broken task directories become ``problems``;
    the rest of the suite still loads. ``only`` selects task ids (unknown ids are bad input)."""
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
            problems.append(TaskProblem(d.name, str(exc).split(": ", 1)[-1]))
    if wanted is not None:
        found = {t.id for t in tasks} | {p.name for p in problems}
        missing = [w for w in wanted if w not in found]
        if missing:
            raise BadInput(f"{base}: no task named {', '.join(missing)}")
    return Suite(root=base.resolve(), tasks=tuple(tasks), problems=tuple(problems))
