"""Creating, renaming and deleting notes."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path


def add_note(path: str | Path, title: str, body: str, tags: Iterable[str] = ()) -> int:
    """Add a note; return its id."""
    p = Path(path)
    notes = json.loads(p.read_text(encoding="utf-8")) if p.exists() else []
    note_id = max((n["id"] for n in notes), default=0) + 1
    notes.append({"id": note_id, "title": title, "body": body, "tags": sorted(set(tags))})
    p.write_text(json.dumps(notes, indent=2), encoding="utf-8")
    return note_id


def rename_note(path: str | Path, note_id: int, title: str) -> bool:
    p = Path(path)
    notes = json.loads(p.read_text(encoding="utf-8")) if p.exists() else []
    for note in notes:
        if note["id"] == note_id:
            note["title"] = title
            p.write_text(json.dumps(notes, indent=2), encoding="utf-8")
            return True
    return False


def delete_note(path: str | Path, note_id: int) -> bool:
    p = Path(path)
    notes = json.loads(p.read_text(encoding="utf-8")) if p.exists() else []
    kept = [n for n in notes if n["id"] != note_id]
    if len(kept) == len(notes):
        return False
    p.write_text(json.dumps(kept, indent=2), encoding="utf-8")
    return True
