cat > notes/store.py <<'PY'
"""NoteStore: the one place that reads and writes the notes JSON file."""
from __future__ import annotations
import json
import os
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any
Note = dict[str, Any]
class NoteStore:
    """Notes in a JSON file. A missing file means no notes; writes are atomic."""
    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
    def _read(self) -> list[Note]:
        if not self.path.exists():
            return []
        return json.loads(self.path.read_text(encoding="utf-8"))
    def _write(self, notes: list[Note]) -> None:
        directory = self.path.parent if str(self.path.parent) else Path(".")
        fd, tmp = tempfile.mkstemp(dir=directory, prefix=f".{self.path.name}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump(notes, fh, indent=2)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, self.path)
        except BaseException:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise
    def all(self) -> list[Note]:
        return sorted(self._read(), key=lambda n: n["id"])
    def get(self, note_id: int) -> Note | None:
        for note in self._read():
            if note["id"] == note_id:
                return note
        return None
    def add(self, title: str, body: str, tags: Iterable[str] = ()) -> int:
        notes = self._read()
        note_id = max((n["id"] for n in notes), default=0) + 1
        notes.append({"id": note_id, "title": title, "body": body, "tags": sorted(set(tags))})
        self._write(notes)
        return note_id
    def update(self, note_id: int, **fields: Any) -> bool:
        notes = self._read()
        for note in notes:
            if note["id"] == note_id:
                note.update(fields)
                if "tags" in fields:
                    note["tags"] = sorted(set(fields["tags"]))
                self._write(notes)
                return True
        return False
    def delete(self, note_id: int) -> bool:
        notes = self._read()
        kept = [n for n in notes if n["id"] != note_id]
        if len(kept) == len(notes):
            return False
        self._write(kept)
        return True
PY

cat > notes/commands.py <<'PY'
"""Creating, renaming and deleting notes."""
from __future__ import annotations
from collections.abc import Iterable
from pathlib import Path
from notes.store import NoteStore
def add_note(path: str | Path, title: str, body: str, tags: Iterable[str] = ()) -> int:
    """Add a note; return its id."""
    return NoteStore(path).add(title, body, tags)
def rename_note(path: str | Path, note_id: int, title: str) -> bool:
    return NoteStore(path).update(note_id, title=title)
def delete_note(path: str | Path, note_id: int) -> bool:
    return NoteStore(path).delete(note_id)
PY

cat > notes/search.py <<'PY'
"""Finding notes."""
from __future__ import annotations
from pathlib import Path
from notes.store import NoteStore
def find(path: str | Path, query: str) -> list[int]:
    """Ids of notes whose title or body contains ``query`` (case-insensitive)."""
    q = query.lower()
    return sorted(n["id"] for n in NoteStore(path).all()
                  if q in n["title"].lower() or q in n["body"].lower())
def by_tag(path: str | Path, tag: str) -> list[int]:
    return sorted(n["id"] for n in NoteStore(path).all() if tag in n["tags"])
PY

cat > notes/export.py <<'PY'
"""Export all notes as Markdown."""
from __future__ import annotations
from pathlib import Path
from notes.store import NoteStore
def to_markdown(path: str | Path) -> str:
    parts = []
    for note in NoteStore(path).all():
        tags = " ".join(f"#{t}" for t in note["tags"])
        parts.append(f"## {note['title']}\n\n{note['body']}\n" + (f"\n{tags}\n" if tags else ""))
    return "\n".join(parts)
PY

python3 - <<'PY'
from pathlib import Path
p = Path("notes/cli.py")
src = p.read_text()
src = src.replace("import json\n", "", 1)
src = src.replace("from notes.search import find\n", "from notes.search import find\nfrom notes.store import NoteStore\n", 1)
src = src.replace(
    "        notes = json.loads(path.read_text(encoding=\"utf-8\")) if path.exists() else []\n"
    "        for note in sorted(notes, key=lambda n: n[\"id\"]):\n",
    "        for note in NoteStore(path).all():\n")
p.write_text(src)
PY

echo "added notes/store.py (NoteStore, atomic writes); commands, search, export and cli now go through it"
