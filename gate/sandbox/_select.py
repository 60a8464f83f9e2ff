"""Choosing where each task runs: the suite's backend, and a container for tasks that need one.

``[suite].sandbox`` names the backend of the whole suite. A host backend (``local``) cannot run a
task that names an image or has a Dockerfile; such a task goes to the ``docker`` backend when a
Docker engine is reachable, and is refused (never run on the host instead) when none is.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from gate.core.tasks import Suite, Task, TaskProblem
from gate.errors import BadInput
from gate.sandbox._base import (
    AgentInstall,
    Sandbox,
    SandboxOptions,
    SandboxProvider,
    make_provider,
)

if TYPE_CHECKING:
    from gate.core.config import SuiteConfig

CONTAINER_BACKEND = "docker"


class RoutedProvider(SandboxProvider):
    """A host backend, with tasks that need a container sent to the container backend."""

    def __init__(self, host: SandboxProvider, options: SandboxOptions) -> None:
        super().__init__(options)
        self.host = host
        self.name = host.name
        self._containers: SandboxProvider | None = None
        self._why: str | None = None
        self._lock = threading.Lock()

    def _container_provider(self) -> SandboxProvider | None:
        with self._lock:
            if self._containers is None and self._why is None:
                try:
                    provider = make_provider(CONTAINER_BACKEND, self.options)
                except (BadInput, ImportError) as exc:
                    self._why = str(exc)
                    return None
                why = provider.unavailable()
                if why:
                    provider.close()
                    self._why = why
                else:
                    self._containers = provider
            return self._containers

    def backend_for(self, task: Task) -> SandboxProvider:
        if task.container_need is None:
            return self.host
        return self._container_provider() or self.host

    def refusal(self, task: Task) -> str | None:
        if task.container_need is None:
            return self.host.refusal(task)
        provider = self._container_provider()
        if provider is None:
            return f"{task.container_need}: {self._why}"
        return provider.refusal(task)

    def _create(self, task: Task, run_name: str) -> Sandbox:
        return self.backend_for(task).create(task, run_name)

    def _create_installed(self, task: Task, run_name: str, install: AgentInstall) -> Sandbox:
        return self.backend_for(task).create(task, run_name, install=install)

    def close(self) -> None:
        self.host.close()
        if self._containers is not None:
            self._containers.close()


def open_provider(name: str, options: SandboxOptions) -> SandboxProvider:
    """The provider of ``[suite].sandbox``; a host backend routes container tasks onward."""
    provider = make_provider(name, options)
    if provider.runs_containers:
        why = provider.unavailable()
        if why:
            provider.close()
            raise BadInput(f"[suite].sandbox = {name!r}: {why}")
        return provider
    return RoutedProvider(provider, options)


def suite_sandboxes(suite: SuiteConfig, *, keep: bool = False,
                    cancel: threading.Event | None = None,
                    registry: bool = False) -> SandboxProvider:
    """The provider ``[suite]`` of gate.toml asks for (``sandbox``, ``image``, ``pull``).
    ``registry``: whether an image registry is reachable (the caller knows: in Actions it
    is), the default for ``pull`` when ``[suite]`` does not say."""
    return open_provider(suite.sandbox, suite_options(suite, keep=keep, cancel=cancel,
                                                      registry=registry))


def suite_options(suite: SuiteConfig, *, keep: bool = False,
                  cancel: threading.Event | None = None,
                  registry: bool = False) -> SandboxOptions:
    """The sandbox options of ``[suite]``: ``pull`` as set, else whether a registry is
    reachable (the caller's ``registry``)."""
    pull = suite.pull if suite.pull is not None else registry
    return SandboxOptions(keep=keep, cancel=cancel, image=suite.image, pull=pull,
                          pass_env=tuple(suite.pass_env),
                          reward_unprotected=frozenset(suite.reward_unprotected),
                          net_raw=frozenset(suite.net_raw), disk_mb=suite.disk_mb,
                          allow_private=tuple(suite.allow_private),
                          tamper_exempt=frozenset(suite.tamper_exempt))


def admit(suite: Suite, provider: SandboxProvider, agent_kind: str,
          agent_in_sandbox: bool, *, installs: bool = False) -> Suite:
    """``suite`` with the tasks ``provider`` cannot run (for this agent kind) moved into its
    problems: they are reported, never run elsewhere instead. ``installs``: the agent is
    installed into each task's image ([agent] install), which only a container backend does."""
    runnable: list[Task] = []
    problems = list(suite.problems)
    for task in suite.tasks:
        backend = provider.backend_for(task)
        why = provider.refusal(task) or backend.refuses_agent(agent_kind, agent_in_sandbox)
        if why is None and installs and not backend.runs_containers:
            why = (f"[agent] install needs a container: the {backend.name} sandbox runs on "
                   "the host (sandbox = \"docker\" in [suite], with an image)")
        if why:
            problems.append(TaskProblem(task.id, why))
        else:
            runnable.append(task)
    return Suite(root=suite.root, tasks=tuple(runnable), problems=tuple(problems))
