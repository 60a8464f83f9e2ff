"""Sandboxes: where a task's workspace lives and its commands run.

One contract (``Sandbox``: ``exec`` / ``read_file`` / ``write_file``), one module per backend.
The local backend runs real subprocesses in a fresh temporary directory; a container backend
plugs in behind the same contract.
"""

from gate.sandbox._base import (
    READ_LIMIT,
    ExecResult,
    Sandbox,
    SandboxError,
    SandboxProvider,
    clip,
    script_env,
    task_script,
)
from gate.sandbox._local import LocalSandbox, LocalSandboxProvider, run_process_group

__all__ = [
    "READ_LIMIT",
    "ExecResult",
    "LocalSandbox",
    "LocalSandboxProvider",
    "Sandbox",
    "SandboxError",
    "SandboxProvider",
    "clip",
    "run_process_group",
    "script_env",
    "task_script",
]
