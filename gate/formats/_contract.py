"""The task format contract: :class:`TaskFormat`, the data it hands over, and the two ports
through which it drives a sandbox.

A format never imports the sandbox: what it asks of one is stated here, as protocols the
sandbox's classes satisfy — :class:`Workspace` (every sandbox: the task and its own scripts)
and :class:`Container` (the long-lived container of a ``per_run`` format, which
:class:`gate.sandbox.RunContainer` implements). The data crossing that line lives here too:
what a command returns (:class:`ExecResult`), what a verifier says (:class:`Verification`),
the container a format needs (:class:`ContainerSpec`); :mod:`gate.sandbox` re-exports them.
So the sandbox depends on the formats (it hands a run's scripts and verifier to the task's
format) and never the other way round.
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Literal, Protocol, runtime_checkable

from gate.formats._task import Task

Lifecycle = Literal["per_command", "per_run"]


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


@dataclass(frozen=True)
class Verification:
    """What the task's verifier said: its run, whether the task passed, and (for a task whose
    verifier reports one) why not and its score. ``files``: what the verifier left for people
    to read (Harbor's ``/logs/verifier``: ``test-stdout.txt``, ``ctrf.json`` ...), each
    clipped, kept with the run's transcript."""

    result: ExecResult
    passed: bool
    reason: str | None = None  # None: the runner names the failure from the exit status
    score: dict[str, Any] | None = None
    files: dict[str, str] | None = None
    final: bool = True  # False: a step of a multi-step task, and more steps follow
    tampered: bool = False  # the verdict is tampering: its reason wins over the agent's


@dataclass(frozen=True)
class ContainerSpec:
    """What a task in a long-lived container (:class:`Container`) needs, as its format says:
    the agent's working directory (``None``: the image's ``WORKDIR``) and user (``None`` or
    ``""``: the image's ``USER``), its network, limits, the container's variables, and where
    the runner's ``.runner/`` files live (``None``: in the workdir)."""

    workdir: str | None = None
    user: str | None = None
    network: str = "no-network"  # public | no-network
    cpus: float = 1.0
    memory_mb: int = 2048
    runner_dir: str | None = None
    baked_skills: tuple[str, ...] = ()  # folders in the image holding the task's own skills
    #: the users whose own ``~/.claude/skills`` get the run's skills (each phase's agent user;
    #: ``""``: the image's ``USER``); empty: skills go into the working directory
    skill_users: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)  # the container's variables (literal)


class Workspace(Protocol):
    """What every sandbox offers the format of the task it runs (:class:`gate.sandbox.Sandbox`)."""

    task: Task

    def run_task_script(self, rel: str, *, timeout: float, own_home: bool = False) -> ExecResult:
        """Run ``bash <task dir>/<rel>`` with ``TASK_DIR`` set, cwd = the workspace;
        ``own_home``: with an empty ``HOME`` of its own, not the agent's."""
        ...


@runtime_checkable
class Container(Workspace, Protocol):
    """The long-lived container a ``per_run`` format drives its phases through
    (:class:`gate.sandbox.RunContainer`; its docstrings say what each step does)."""

    workdir: str
    spec: ContainerSpec
    step: int  # the step of a multi-step task now running
    step_rewards: list[tuple[str, dict[str, float] | None]]  # each verified step's rewards

    def command_env(self, extra: Mapping[str, str] | None = None) -> dict[str, str]: ...

    def read_file(self, path: str, *, max_bytes: int = ..., truncate: bool = ...) -> str: ...

    def end_phase(self) -> tuple[list[str], list[str]]: ...

    def mark_verifier_world(self) -> None: ...

    def tampering(self) -> list[str]: ...

    def set_network(self, mode: str) -> None: ...

    def upload_dir(self, source: Path, target: str, *, clear: bool = True) -> None: ...

    def reset_dir(self, target: str) -> None: ...

    def run_as(self, argv: list[str], *, user: str | None, env: dict[str, str],
               timeout: float) -> ExecResult: ...

    def probe(self, script: str, *, step: str, complete: Callable[[str], bool]) -> str: ...


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
        """The task at ``path``, with this format's answers in it (the :class:`Task` fields
        from ``format_name`` on, and its own reading in ``native``); ``BadInput`` starting
        ``<name>: `` names what is wrong."""

    def container_spec(self, task: Task) -> ContainerSpec:
        """The long-lived container a ``per_run`` task needs (its workdir, user, limits)."""
        raise NotImplementedError(f"the {self.name} format runs in any sandbox")

    def refusal(self, task: Task) -> str | None:
        """Why the gate cannot run ``task`` as its format means it (``None``: it can)."""
        return None

    def start(self, sandbox: Workspace) -> None:
        """Called once the sandbox of a run is ready, before setup and the agent."""
        return None

    @abc.abstractmethod
    def run_script(self, sandbox: Workspace, rel: str, *, timeout: float) -> ExecResult:
        """Run the task's own script ``rel`` (``setup.sh``, ``solution/solve.sh`` ...)."""

    @abc.abstractmethod
    def verify(self, sandbox: Workspace, *, timeout: float,
               step: int | None = None) -> Verification:
        """Verify the run in ``sandbox`` once its agent is done (``step``: the index of the
        step of a multi-step task that just ended)."""
