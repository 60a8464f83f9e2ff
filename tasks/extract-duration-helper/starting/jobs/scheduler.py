"""When do periodic jobs run next?"""

from __future__ import annotations

import re
from dataclasses import dataclass

_DURATION = re.compile(r"^\s*(\d+)\s*([smhd]?)\s*$")
_UNIT_SECONDS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}


def _interval_seconds(text: str) -> int:
    match = _DURATION.match(text.lower())
    if not match:
        raise ValueError(f"bad duration: {text!r}")
    value, unit = match.groups()
    seconds = int(value) * _UNIT_SECONDS[unit]
    if seconds <= 0:
        raise ValueError(f"duration must be positive: {text!r}")
    return seconds


@dataclass(frozen=True)
class Job:
    name: str
    every: str  # "15m", "1h", ...

    @property
    def interval(self) -> int:
        return _interval_seconds(self.every)

    def next_run(self, last_run: int) -> int:
        """Epoch seconds of the next run after a run at ``last_run``."""
        return last_run + self.interval


def due(jobs: list[Job], last_runs: dict[str, int], now: int) -> list[str]:
    """Names of the jobs that should run at ``now`` (never-run jobs are due)."""
    return sorted(j.name for j in jobs
                  if j.name not in last_runs or j.next_run(last_runs[j.name]) <= now)
