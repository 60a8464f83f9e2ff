"""Finding notes."""

from __future__ import annotations

import json
from pathlib import Path


def _load(path: str | Path) -> list[dict]:
    with open(path, encoding="utf-8") as fh:
        return json.load(fh)


def find(path: str | Path, query: str) -> list[int]:
    """Ids of notes whose title or body contains ``query`` (case-insensitive)."""
    q = query.lower()
    return sorted(n["id"] for n in _load(path)
                  if q in n["title"].lower() or q in n["body"].lower())


def by_tag(path: str | Path, tag: str) -> list[int]:
    return sorted(n["id"] for n in _load(path) if tag in n["tags"])
