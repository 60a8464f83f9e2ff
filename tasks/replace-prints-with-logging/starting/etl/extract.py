"""Read raw rows from CSV text."""

from __future__ import annotations

import csv
import io


def extract(text: str) -> list[dict[str, str]]:
    print("extract: reading CSV")
    rows = list(csv.DictReader(io.StringIO(text)))
    print(f"extract: got {len(rows)} rows")
    return rows
