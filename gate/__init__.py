"""agent-gate: a CI regression gate for LLM agents.

The pipeline reads left to right in the package names, each a layer
(docs/architecture.md): formats/core → sandbox → agents → meter → execution → compare
→ report → pool → ci → github.
"""

from __future__ import annotations

__all__ = ["__version__"]


def __getattr__(name: str) -> str:
    """``__version__`` on first use: reading the installed metadata costs start-up time that a
    re-executing or failing ``gate`` process should not pay."""
    if name != "__version__":
        raise AttributeError(f"module 'gate' has no attribute {name!r}")
    from importlib.metadata import PackageNotFoundError, version

    try:
        value = version("agent-gate")
    except PackageNotFoundError:  # running from a source tree without an install
        value = "0.0.0+local"
    globals()["__version__"] = value
    return value
