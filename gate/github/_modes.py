"""The modes of ``gate ci`` and of its comment: plain values, importable without the rest of
``gate.github`` (the CLI's options are built from them before anything heavy loads)."""

from __future__ import annotations

MODES: tuple[str, ...] = ("auto", "pr", "main", "check", "comment")
COMMENT_MODES: tuple[str, ...] = ("always", "on-change", "on-regression", "never")


def is_comment_mode(mode: str, event_name: str) -> bool:
    """Whether this invocation only posts another run's report (``workflow_run``).

    Decided before anything is loaded: comment mode runs with a write token next to files a
    fork wrote, so it reads no gate.toml of the working directory and imports nothing from
    it; what it needs comes from the trusted workflow (the event, the inputs, the environment)
    and the default branch (its gate.toml's ``[ci]``, read through the API by ``gate.ci``).
    """
    return mode == "comment" or (mode == "auto" and event_name == "workflow_run")
