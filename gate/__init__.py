"""agent-gate: a CI regression gate for LLM agents.

The pipeline reads left to right in the module names:
tasks → sandbox → agents → meter → results → compare → report → github.
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("agent-gate")
except PackageNotFoundError:  # running from a source tree without an install
    __version__ = "0.0.0+local"

__all__ = ["__version__"]
