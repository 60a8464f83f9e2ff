"""Sandboxes: where a task's workspace lives and its commands run.

One contract (``Sandbox``: ``exec`` / ``run_script`` / ``read_file`` / ``write_file`` /
``close``; ``SandboxProvider``: ``create``), one module per backend, registered by name and
chosen by ``[suite].sandbox``. The base classes hold what no backend may forget: the
cancel check, the credential-free environment and the once-only teardown.

- ``local``: real subprocesses in a fresh temporary directory, under a per-run subreaper.
- ``docker``: every command in a fresh, locked-down container on the ``docker`` SDK
  (imported only when used); for a task format whose tasks live in their image (Harbor's),
  the long-lived container life cycle instead (``RunContainer``: one container per run,
  ``_harbor``), driven by the format (:mod:`gate.formats`), which owns the verifier.
"""

from gate._files import clip
from gate.errors import ContainerStepError
from gate.sandbox._base import (
    READ_LIMIT,
    AgentInstall,
    ContainerSpec,
    ExecResult,
    RunContainer,
    Sandbox,
    SandboxError,
    SandboxOptions,
    SandboxProvider,
    Verification,
    backend_names,
    make_provider,
    register_backend,
)
from gate.sandbox._contain import (
    alive_task_processes,
    assert_no_task_alive,
    containment,
    no_task_alive,
)
from gate.sandbox._local import LocalSandbox, LocalSandboxProvider, run_process_group
from gate.sandbox._quota import ensure_free
from gate.sandbox._select import admit, open_provider, suite_options, suite_sandboxes


def _docker(options: SandboxOptions) -> SandboxProvider:
    from gate.sandbox._docker import DockerSandboxProvider

    return DockerSandboxProvider(options)


register_backend("local", lambda options: LocalSandboxProvider(options=options))
register_backend("docker", _docker)

__all__ = [
    "READ_LIMIT",
    "AgentInstall",
    "ContainerSpec",
    "ContainerStepError",
    "ExecResult",
    "LocalSandbox",
    "LocalSandboxProvider",
    "RunContainer",
    "Sandbox",
    "SandboxError",
    "SandboxOptions",
    "SandboxProvider",
    "Verification",
    "admit",
    "alive_task_processes",
    "assert_no_task_alive",
    "backend_names",
    "clip",
    "containment",
    "ensure_free",
    "make_provider",
    "no_task_alive",
    "open_provider",
    "register_backend",
    "run_process_group",
    "suite_options",
    "suite_sandboxes",
]
