"""The sandbox contract: :class:`Sandbox` (a run's workspace and its commands), its
:class:`SandboxProvider`, the long-lived container life cycle :class:`RunContainer` (a mode a
container backend offers to formats whose tasks live in their image), the backend registry.

The sandbox sits above the task formats: it hands a run's scripts and verifier to the task's
format (:func:`gate.core.tasks.task_format`), which drives it back only through the ports the
format contract states (:class:`gate.formats.Workspace`, which :class:`Sandbox` satisfies, and
:class:`gate.formats.Container`, which :class:`RunContainer` does). The data crossing that line
(:class:`ExecResult`, :class:`Verification`, :class:`ContainerSpec`) is the contract's, and
:class:`SandboxError` and :func:`clip` are the gate's (:mod:`gate.errors`, :mod:`gate._files`);
the package re-exports all of them under their old names."""

from __future__ import annotations

import abc
import shlex
import tempfile
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, ClassVar

from gate.core.tasks import Task, task_format
from gate.errors import BadInput, SandboxError
from gate.formats import ContainerSpec, ExecResult, Verification
from gate.sandbox._quota import HOST_POLL_S, DiskLimit, DiskWatch, RunStop
from gate.secrets import scrubbed_env, withheld_notes

if TYPE_CHECKING:
    from gate.core.skills import Skill
    from gate.formats import Container, Workspace

READ_LIMIT = 10_000_000  # bytes: the largest file the gate reads out of a workspace


class Sandbox(abc.ABC):
    """A prepared workspace for one (task, replication).

    ``workdir`` and ``task_dir`` are paths as commands inside the sandbox see them. Every
    command runs with cwd = ``workdir`` and ``WORK_DIR`` in its environment, and never with a
    credential; only the task's own scripts (:meth:`run_script`) get ``TASK_DIR``.

    The public methods are templates: they refuse once the run is cancelled or the sandbox
    closed, build the command's clean environment (:meth:`command_env`), and tear down once;
    a backend implements only the ``_``-prefixed steps, so it cannot forget any of that. How
    the task's own scripts run and how a run is verified is the task's format's
    (:mod:`gate.formats`): :meth:`run_script` and :meth:`verify` hand over to it.
    """

    workdir: str
    task_dir: str
    task: Task  # set by SandboxProvider.create
    # seconds this run waited for its agent's install (None: no install): not the run's time
    install_s: float | None = None
    cancel: threading.Event | None = None
    pass_env: tuple[str, ...] = ()  # set by SandboxProvider.create ([suite] pass_env)
    #: lines for the run's notes about skills: one the gate could not honour, a ``SKILL.md``
    #: it found outside the skill folders (set by :meth:`install_skills`)
    skill_notes: tuple[str, ...] = ()
    _closed: bool = False
    _started: bool = False  # its format's start() has run
    disk: DiskWatch | None = None  # what it wrote, watched against [suite] disk_mb (_quota)
    disk_poll_s: float = HOST_POLL_S

    # ----- what a backend implements ------------------------------------------------------

    @abc.abstractmethod
    def _exec(self, command: str, *, env: dict[str, str], timeout: float, stdin: str | None,
              task_visible: bool) -> ExecResult:
        """Run ``command`` with bash in ``workdir`` with exactly ``env``. On timeout everything
        it started is killed; while it runs, a set ``self.cancel`` stops it (``SandboxError``).
        ``task_visible``: the task directory must be readable at ``task_dir`` (the task's own
        scripts); otherwise it need not be, and should not be."""

    @abc.abstractmethod
    def _read_file(self, path: str, *, max_bytes: int, truncate: bool) -> str: ...

    @abc.abstractmethod
    def _write_file(self, path: str, content: str) -> None: ...

    @abc.abstractmethod
    def _put_dir(self, source: Path, dest: str) -> None:
        """Copy the host folder ``source`` (regular files and folders, modes kept) to ``dest``
        (relative to ``workdir``), replacing whatever is there, owned by the agent's user."""

    @abc.abstractmethod
    def _teardown(self) -> None:
        """Remove everything of this sandbox (the workspace unless asked to keep it)."""

    def disk_used(self) -> int:
        """The bytes this run wrote that stay on the machine's disk (its host folders, its
        container's writable layer). A backend that cannot tell leaves it, and nothing of it
        is watched."""
        raise NotImplementedError

    def base_env(self) -> dict[str, str]:
        """Variables every command here gets (``WORK_DIR``, a private ``HOME`` ...)."""
        return {"WORK_DIR": self.workdir}

    def host_environ(self) -> Mapping[str, str]:
        """The environment a command inherits before scrubbing (none, in a container)."""
        return {}

    def run_task_script(self, rel: str, *, timeout: float, own_home: bool = False) -> ExecResult:
        """Run ``bash <task_dir>/<rel>`` with ``TASK_DIR`` set and the task directory visible
        (the gate's layouts' way of running a task's own script). ``own_home``: the script
        gets an empty ``HOME`` made for it (:meth:`fresh_home`), not the one the agent's
        commands shared — the verifier's, so nothing the agent left in ``~`` (a user-site
        ``.pth``, a ``~/.gitconfig``) runs in the verifier's ``python3`` or ``git``."""
        self.check_open()
        env = script_env(self)
        if own_home:
            env["HOME"] = self.fresh_home()
        return self._exec(task_script(self, rel), env=self.command_env(env),
                          timeout=timeout, stdin=None, task_visible=True)

    def fresh_home(self) -> str:
        """An empty folder, made afresh on each call, as a task-visible command sees it: the
        verifier's ``HOME``. A backend whose task scripts may ask for one gives it (the local
        and the per-command docker sandbox); a long-lived container's verifier runs in the
        agent's container by its format's contract, and no such format asks."""
        raise SandboxError(f"{type(self).__name__} gives no script a HOME of its own")

    def path_of(self, rel: str) -> str:
        """The absolute path, as a command inside the sandbox sees it, of ``rel`` (a path the
        runner and the agents name relative to the workspace, e.g. ``.runner/prompt.md``)."""
        return f"{self.workdir.rstrip('/')}/{rel}"

    # ----- the contract -------------------------------------------------------------------

    def model_endpoint(self, base_url: str) -> str:
        """The URL at which a process inside this sandbox reaches ``base_url`` (its run's
        meter, on the gate's loopback). The host sees it as is; a container needs a way in."""
        return base_url

    def command_env(self, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        """The environment of a command: the inherited one with every credential removed,
        then the sandbox's own variables, then ``extra`` (e.g. a command agent's meter URL)."""
        return scrubbed_env({**self.base_env(), **(extra or {})}, environ=self.host_environ(),
                            pass_env=self.pass_env)

    def withheld_env(self) -> list[str]:
        """``NAME (why)`` for each credential of the inherited environment its commands do not
        get (not the gate's and the CI's own): what the run's notes name, so a variable a task
        needed (a proxy with a password) is never cut silently."""
        return withheld_notes(self.host_environ(), self.pass_env)

    def check_open(self) -> None:
        """Raise ``SandboxError`` when the run was cancelled or the sandbox is closed."""
        if self.cancel is not None and self.cancel.is_set():
            raise SandboxError("cancelled")
        if self._closed:
            raise SandboxError("the sandbox is closed")

    def exec(
        self,
        command: str,
        *,
        timeout: float,
        env: Mapping[str, str] | None = None,
        stdin: str | None = None,
    ) -> ExecResult:
        """Run ``command`` with bash; on timeout the whole process group is killed."""
        self.check_open()
        return self._exec(command, env=self.command_env(env), timeout=timeout, stdin=stdin,
                          task_visible=False)

    def run_script(self, rel: str, *, timeout: float) -> ExecResult:
        """Run one of the task's own scripts (``setup.sh``, ``verify.sh``,
        ``solution/solve.sh``) the way its format runs them."""
        self.check_open()
        return task_format(self.task).run_script(self, rel, timeout=timeout)

    def verify(self, *, timeout: float, step: int | None = None) -> Verification:
        """Run the task's verifier once the agent is done, and say whether the task passed.
        The verifier is its format's (:mod:`gate.formats`), not the sandbox's; ``step``: the
        step of a multi-step task that just ended."""
        self.check_open()
        return task_format(self.task).verify(self, timeout=timeout, step=step)

    def read_file(self, path: str, *, max_bytes: int = READ_LIMIT, truncate: bool = False) -> str:
        """Read a regular file; relative paths are relative to ``workdir``.

        Never blocks (a FIFO is refused) and never reads more than ``max_bytes``: a larger
        file raises ``OSError`` (EFBIG), or with ``truncate`` gives its first ``max_bytes``.
        """
        self.check_open()
        return self._read_file(path, max_bytes=max_bytes, truncate=truncate)

    def write_file(self, path: str, content: str) -> None:
        """Write a regular file, creating parent directories; relative to ``workdir``."""
        self.check_open()
        self._write_file(path, content)

    def install_skills(self, skills: Sequence[Skill], *, only: bool = False) -> list[Skill]:
        """Put each skill's folder at ``.claude/skills/<name>/`` in the workspace, before
        setup and the agent: a run's workspace holds exactly its condition's skills (``only``:
        the run has a condition; a fresh workspace holds no other skill). The skills as
        installed (where each ``SKILL.md`` is, for the agent)."""
        from gate.core.skills import SKILLS_DIR

        self.check_open()
        for skill in skills:
            self._put_dir(skill.path, f"{SKILLS_DIR}/{skill.folder}")
        return list(skills)

    def watch_disk(self, limit: DiskLimit | None) -> None:
        """Watch what this sandbox writes against ``limit`` from now on (once): past it, what
        runs is stopped as a cancel stops it, and :meth:`disk_over` says why."""
        if limit is None or self.disk is not None or \
                type(self).disk_used is Sandbox.disk_used:
            return
        stop = RunStop(self.cancel)
        self.cancel = stop
        self.disk = DiskWatch(limit, self.disk_used, stop, self.disk_poll_s)

    def disk_over(self) -> str | None:
        """Why this run failed its disk limit (measured now, unless already past), or None."""
        return self.disk.check() if self.disk is not None else None

    def close(self) -> None:
        """Tear down. Safe to call twice; never raises for a teardown that half failed."""
        if self._closed:
            return
        self._closed = True
        if self.disk is not None:
            self.disk.close()
        self._teardown()

    def __enter__(self) -> Sandbox:
        return self

    def __exit__(
        self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


@dataclass(frozen=True)
class AgentInstall:
    """``[agent] install``: a script run as root, with network, in a task's image before the
    agent's runs (once per image and script within a job; a container backend's), under its
    own ``timeout`` (seconds), never the agent's."""

    script: str
    timeout: float


@dataclass
class SandboxOptions:
    """What every backend is built from (``[suite]`` in gate.toml, and the run's flags)."""

    keep: bool = False  # keep workspaces for debugging
    cancel: threading.Event | None = None  # set on Ctrl-C / SIGTERM: stop what runs
    base_dir: Path | None = None  # where workspaces go (default: the system temp dir)
    image: str | None = None  # the image of tasks that name none (container backends)
    pull: bool | None = None  # pull a missing image; None: only where a registry is reachable
    # credentials of the host's environment passed to commands on purpose ([suite] pass_env,
    # the base branch's): the host backend's only, a container gets no host variable
    pass_env: tuple[str, ...] = ()
    # tasks whose agent-started services run into the verifier (the phase boundary keeps
    # them; [suite].reward_unprotected, the base branch's on a PR)
    reward_unprotected: frozenset[str] = frozenset()
    # tasks whose long-lived container keeps NET_RAW ([suite].net_raw; Harbor's format)
    net_raw: frozenset[str] = frozenset()
    # private networks a container with network may reach ([suite].allow_private: CIDRs)
    allow_private: tuple[str, ...] = ()
    # tasks whose verifier's world is not checked for tampering ([suite].tamper_exempt, the
    # base branch's on a PR: gate/sandbox/_tamper.py)
    tamper_exempt: frozenset[str] = frozenset()
    disk_mb: int | None = None  # what one run may write ([suite].disk_mb); None: unwatched

    def disk_limit(self, what: str = "the run") -> DiskLimit | None:
        return DiskLimit(self.disk_mb, what) if self.disk_mb else None


class SandboxProvider(abc.ABC):
    """Makes fresh sandboxes; holds no per-run state, so runs can go in parallel.

    ``create`` is a template: it refuses a task that cannot run here
    (:meth:`refusal`), then calls the backend's ``_create``. ``close`` releases what the
    provider holds (a client, a cache); a provider is a context manager.
    """

    name: str = "?"
    runs_containers: ClassVar[bool] = False  # a container backend (vs one on the host)

    def __init__(self, options: SandboxOptions | None = None) -> None:
        self.options = options or SandboxOptions()

    @property
    def cancel(self) -> threading.Event | None:
        return self.options.cancel

    @property
    def keep(self) -> bool:
        return self.options.keep

    def unavailable(self) -> str | None:
        """Why this backend cannot run anything here (e.g. no engine reachable)."""
        return None

    def disk_paths(self) -> list[Path]:
        """The folders whose disk a run writes to (its workspace's; an engine's layers)."""
        return [self.options.base_dir or Path(tempfile.gettempdir())]

    def refusal(self, task: Task) -> str | None:
        """Why ``task`` cannot run in this backend (``None``: it can)."""
        return None

    def backend_for(self, task: Task) -> SandboxProvider:
        """The provider that runs ``task`` (a routing provider hands it on)."""
        return self

    def refuses_agent(self, agent_kind: str, in_sandbox: bool) -> str | None:
        """Why an agent of this kind cannot run here (``in_sandbox``: its process runs in the
        sandbox and must reach the meter from there)."""
        return None

    def create(self, task: Task, run_name: str, *,
               install: AgentInstall | None = None) -> Sandbox:
        """A fresh sandbox with ``starting/`` copied in (``setup.sh`` is run by the runner);
        ``install``: the agent's install, in the image the sandbox starts from."""
        why = self.refusal(task)
        if why:
            raise SandboxError(why)
        sandbox = (self._create(task, run_name) if install is None
                   else self._create_installed(task, run_name, install))
        if sandbox.disk is None:  # once, though a routing provider hands the task on
            sandbox.cancel = self.cancel
            sandbox.watch_disk(self.options.disk_limit())
        sandbox.pass_env = self.options.pass_env
        sandbox.task = task
        if not sandbox._started:  # once, though a routing provider hands the task on
            sandbox._started = True
            try:
                task_format(task).start(sandbox)
            except BaseException:
                sandbox.close()
                raise
        return sandbox

    @abc.abstractmethod
    def _create(self, task: Task, run_name: str) -> Sandbox: ...

    def _create_installed(self, task: Task, run_name: str, install: AgentInstall) -> Sandbox:
        """A sandbox whose image has the agent's install in it (a container backend's)."""
        raise SandboxError(f"[agent] install needs a container: the {self.name} sandbox "
                           "runs on the host (sandbox = \"docker\" in [suite], with an image)")

    def close(self) -> None:
        """Release what the provider holds. Safe to call twice."""
        return None

    def __enter__(self) -> SandboxProvider:
        return self

    def __exit__(
        self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


# ----- the registry: backend name → factory -----------------------------------------------

ProviderFactory = Callable[[SandboxOptions], SandboxProvider]
_BACKENDS: dict[str, ProviderFactory] = {}


def register_backend(name: str, factory: ProviderFactory) -> None:
    """Make ``[suite].sandbox = "<name>"`` build its provider with ``factory``."""
    _BACKENDS[name] = factory


def backend_names() -> list[str]:
    return sorted(_BACKENDS)


def make_provider(name: str, options: SandboxOptions | None = None) -> SandboxProvider:
    """The provider of backend ``name``; an unknown name is bad input."""
    try:
        factory = _BACKENDS[name]
    except KeyError:
        raise BadInput(f"[suite].sandbox: unknown sandbox {name!r} (known: "
                       f"{', '.join(backend_names())})") from None
    return factory(options or SandboxOptions())


def script_env(sandbox: Sandbox) -> dict[str, str]:
    """Extra environment for the task's own scripts (setup, verify, solution)."""
    return {"TASK_DIR": sandbox.task_dir}


def task_script(sandbox: Sandbox, rel: str) -> str:
    """The command that runs one of the task's own scripts (path quoted for the shell)."""
    return f"bash {shlex.quote(f'{sandbox.task_dir}/{rel}')}"


class RunContainer(Sandbox):
    """The long-lived container life cycle: one container per run, every command a process in
    it, its own filesystem the task's state. A container backend offers it for task formats
    whose tasks live in their image (Harbor's); the format drives the phases through these
    steps (it sees them as the port :class:`gate.formats.Container`), so the backend knows
    nothing of the format."""

    spec: ContainerSpec
    step: int = 0  # the step of a multi-step task now running
    step_rewards: list[tuple[str, dict[str, float] | None]]  # each verified step's rewards

    @abc.abstractmethod
    def end_phase(self) -> tuple[list[str], list[str]]:
        """End the agent phase: kill every process it started (those not running when the
        container started), so nothing the agent started runs when the verifier starts; a
        task the suite lists in ``reward_unprotected`` keeps its services (a process listening
        on a TCP port, with its parents). Returns the command lines of what the agent left
        and was stopped, and of the services kept."""

    @abc.abstractmethod
    def mark_verifier_world(self) -> None:
        """Take what the verifier executes or is configured by, as it is now, as the task's
        own (after the task's own steps, after a verifier that installed its tools)."""

    @abc.abstractmethod
    def tampering(self) -> list[str]:
        """Each change to what the verifier executes or is configured by that the agent's
        install made, or that was made since the mark, as ``"<path> <how>"``
        (:mod:`gate.sandbox._tamper`)."""

    @abc.abstractmethod
    def set_network(self, mode: str) -> None:
        """``public`` or ``no-network`` from now on."""

    @abc.abstractmethod
    def upload_dir(self, source: Path, target: str, *, clear: bool = True) -> None:
        """Copy the host folder ``source`` to the absolute ``target`` (root-owned, modes
        kept); ``clear``: empty ``target`` first."""

    @abc.abstractmethod
    def reset_dir(self, target: str) -> None:
        """``target`` emptied (created if missing), writable by every user."""

    @abc.abstractmethod
    def run_as(self, argv: list[str], *, user: str | None, env: dict[str, str],
               timeout: float) -> ExecResult:
        """Run ``argv`` in the workdir as ``user`` (``None``: the agent's) with exactly
        ``env``; on timeout or cancel, it and everything it started are killed."""

    @abc.abstractmethod
    def probe(self, script: str, *, step: str, complete: Callable[[str], bool]) -> str:
        """A read of the gate's own: ``script`` as root with ``sh``, its output once
        ``complete`` says the whole answer came back. An answer the engine lost or cut is
        asked again; still missing, it is the engine's failure (``SandboxError``). The
        command failing (a non-zero exit, a timeout) or the container stopped is the
        container's (``ContainerStepError``), as for every step of the gate's own."""


if TYPE_CHECKING:
    def _ports(sandbox: Sandbox, box: RunContainer) -> tuple[Workspace, Container]:
        """For mypy: the sandbox satisfies the ports a format drives it through."""
        return sandbox, box
