"""The ledger: one JSONL line per request served, so the meter can be checked against it."""

from __future__ import annotations

import hashlib
import json
import threading
from pathlib import Path
from typing import Any

from gate.usage import Usage


def key_id(api_key: str) -> str:
    """A short, stable hash that tells keys apart without revealing them."""
    return "key_" + hashlib.sha256(api_key.encode("utf-8")).hexdigest()[:12]


class Ledger:
    """Appends entries as they happen (thread-safe); a line is complete when written.

    A new ledger starts empty (an existing file is truncated): it describes one simulator's
    life, so a rerun with the same path cannot double-count."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("", encoding="utf-8")

    def record(self, entry: dict[str, Any]) -> None:
        line = json.dumps(entry, sort_keys=True) + "\n"
        with self._lock, self.path.open("a", encoding="utf-8") as fh:
            fh.write(line)


def read_ledger(path: str | Path) -> list[dict[str, Any]]:
    """Every entry, in the order served."""
    text = Path(path).read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def ledger_totals(path: str | Path) -> Usage:
    """The sum of what was billed: every served usage (including streams cut short after
    ``message_start``, which were billed for their input)."""
    total = Usage()
    for entry in read_ledger(path):
        if entry.get("usage"):
            total = total + Usage.from_api(entry["usage"])
    return total
