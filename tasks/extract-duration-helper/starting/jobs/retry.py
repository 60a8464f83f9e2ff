"""Retry policies: how long to wait before attempt N."""

from __future__ import annotations

import re

UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
PATTERN = re.compile(r"^\s*(\d+)\s*([smhd]?)\s*$")


def parse_delay(text: str) -> int:
    m = PATTERN.match(text.lower())
    if m is None:
        raise ValueError(f"bad duration: {text!r}")
    amount, unit = m.groups()
    total = int(amount) * UNITS.get(unit or "s")
    if total <= 0:
        raise ValueError(f"duration must be positive: {text!r}")
    return total


class Backoff:
    """Exponential backoff: ``base``, 2*base, 4*base, ... capped at ``cap``."""

    def __init__(self, base: str = "1s", cap: str = "10m") -> None:
        self.base = parse_delay(base)
        self.cap = parse_delay(cap)

    def delay(self, attempt: int) -> int:
        """Seconds to wait before retry number ``attempt`` (1-based)."""
        if attempt < 1:
            raise ValueError("attempt starts at 1")
        return min(self.cap, self.base * 2 ** (attempt - 1))
