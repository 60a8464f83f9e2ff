"""Execution: where a plan becomes runs.

``run`` plans a suite's arms and opens the stage they share, ``session`` executes a plan (the
sandboxes, the meter, the budget, the journal), ``runner`` runs one item, ``ab`` pairs a
same-job A/B, ``sequential`` runs the looks, ``shards`` splits and merges a matrix,
``yardstick`` opens what a run is measured by, ``validate`` checks each task is sound.

The modules are public and imported by their full name (``from gate.execution.run import
RunRequest``): nothing here is loaded before a command needs it, so a configuration error
loads no runner. The execution layer with the sandbox, the agents, the meter and the
simulator: above the core formats, the verdict, the report and main's pool; below ``gate.ci``
and the CLI; never ``gate.github`` (tests/unit/test_architecture.py).
"""

from __future__ import annotations

__all__ = ["ab", "run", "runner", "sequential", "session", "shards", "validate", "yardstick"]
