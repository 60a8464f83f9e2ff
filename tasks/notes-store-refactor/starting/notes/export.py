"""Export all notes as Markdown."""

from __future__ import annotations

import json
from pathlib import Path


def to_markdown(path: str | Path) -> str:
    p = Path(path)
    notes = json.loads(p.read_text(encoding="utf-8")) if p.exists() else []
    parts = []
    for note in sorted(notes, key=lambda n: n["id"]):
        tags = " ".join(f"#{t}" for t in note["tags"])
        parts.append(f"## {note['title']}\n\n{note['body']}\n" + (f"\n{tags}\n" if tags else ""))
    return "\n".join(parts)
