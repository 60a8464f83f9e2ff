"""Release versions: parse and compare ``MAJOR.MINOR.PATCH`` strings."""

from __future__ import annotations


def parse_version(text: str) -> tuple:
    """``"v1.2.3"`` -> ``(1, 2, 3)``. A missing minor/patch counts as 0."""
    parts = text.strip().lstrip("vV").split(".")
    if not 1 <= len(parts) <= 3 or not all(p.isdigit() for p in parts):
        raise ValueError(f"not a version: {text!r}")
    parts += ["0"] * (3 - len(parts))
    return tuple(parts)


def is_newer(candidate: str, current: str) -> bool:
    """True when ``candidate`` is a strictly later release than ``current``."""
    return parse_version(candidate) > parse_version(current)


def latest(versions: list[str]) -> str:
    """The latest release in ``versions`` (as written there)."""
    if not versions:
        raise ValueError("no versions")
    return max(versions, key=parse_version)
