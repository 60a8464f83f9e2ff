"""Errors that end a command with a defined exit code and one clear line.

Exit codes: 0 ok, 1 regression, 2 bad input or configuration,
3 unmeasurable (no API key, too many infra errors, budget hit, no baseline).
"""

from __future__ import annotations


class GateError(Exception):
    """An error the CLI reports as one line and turns into ``exit_code``."""

    exit_code = 2


class BadInput(GateError):
    """A file, flag or setting is wrong: exit 2."""

    exit_code = 2


class Unmeasurable(GateError):
    """The gate cannot measure honestly (no key, infra errors, no baseline): exit 3."""

    exit_code = 3


class ForgeError(GateError):
    """The forge (GitHub: ``gate.github.GitHubError``) refused or failed a request: exit 2.
    ``status`` is its HTTP status when it answered, so ``gate ci`` can name a likely cause
    without knowing which forge it talks to."""

    exit_code = 2

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class SandboxError(Exception):
    """The sandbox itself failed (not the task): an infra error. Defined here, below the
    sandbox and the task formats (which raise it while driving a sandbox); :mod:`gate.sandbox`
    re-exports it."""


class ContainerStepError(SandboxError):
    """A step of the gate's own in a run's container failed by the container's doing, not
    the engine's: its command exited non-zero or timed out (``/bin/sh`` renamed, a tool
    removed), or the container stopped (its pid 1 ended). The sandbox tells it from a
    failure of the engine (unreachable, an API error), which stays a plain
    :class:`SandboxError`. Before the agent phase it is infra like any; once the agent phase
    began, the runner fails the run with it (``gate/execution/runner.py``, ``_fault``): whatever
    broke the container then was in the agent's reach. ``step``: which of the gate's steps
    (``phase-boundary``, ``upload``, ...); ``detail``: what went wrong."""

    def __init__(self, step: str, detail: str) -> None:
        super().__init__(f"the gate's {step} step failed: {detail}")
        self.step = step
        self.detail = detail
