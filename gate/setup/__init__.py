"""Setting a repository up: ``init`` scaffolds gate.toml, a first task and the workflows.

Imported by its full name (``from gate.setup.init import scaffold``); only the CLI uses it.
"""

from __future__ import annotations

__all__ = ["init"]
