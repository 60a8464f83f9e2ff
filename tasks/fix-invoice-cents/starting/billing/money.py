"""Prices as integer cents."""

from __future__ import annotations


def to_cents(price: str) -> int:
    """``"19.99"`` -> ``1999``. Accepts an optional leading ``$`` and thousands commas."""
    text = price.strip().lstrip("$").replace(",", "")
    if not text:
        raise ValueError("empty price")
    return int(float(text) * 100)


def format_cents(cents: int) -> str:
    """``1999`` -> ``"$19.99"``; negative amounts as ``"-$1.00"``."""
    sign = "-" if cents < 0 else ""
    cents = abs(cents)
    return f"{sign}${cents // 100}.{cents % 100:02d}"
