"""The core formats: the data every layer reads.

``config`` (gate.toml), ``metrics`` (the table of metrics), ``tasks`` and ``skills`` (a suite
as loaded), ``fingerprint`` (what is under test, hashed), ``results`` (a results file),
``cost`` (the price table), ``traces`` (a run's trace and its sidecar), ``history`` (main's
history file).

The modules are public and imported by their full name (``from gate.core.config import
load_config``): nothing here is loaded before it is needed (pydantic is, with ``config``).
Below the verdict, the report and execution; they import neither the agents nor anything
above them (tests/unit/test_architecture.py).
"""

from __future__ import annotations

__all__ = [
    "config",
    "cost",
    "fingerprint",
    "history",
    "metrics",
    "results",
    "skills",
    "tasks",
    "traces",
]
