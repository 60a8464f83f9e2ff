#!/usr/bin/env bash
# Creates an inventory report whose low-stock filter reads a key the data no longer has.
set -euo pipefail
mkdir -p stock tests data
cat > data/inventory.json <<'EOF'
[
  {"sku": "BOLT-M6", "name": "Hex bolt M6", "quantity": 420, "location": "A1"},
  {"sku": "NUT-M6", "name": "Hex nut M6", "quantity": 3, "location": "A1"},
  {"sku": "WASHER-6", "name": "Washer 6mm", "quantity": 0, "location": "A2"},
  {"sku": "DRILL-8", "name": "Drill bit 8mm", "quantity": 12, "location": "B4"},
  {"sku": "GLUE-50", "name": "Wood glue 50ml", "quantity": 4, "location": "C1"}
]
EOF
cat > stock/__init__.py <<'EOF'
EOF
cat > stock/report.py <<'EOF'
"""The nightly stock report."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

Item = dict[str, Any]


def load_items(path: str | Path) -> list[Item]:
    return json.loads(Path(path).read_text(encoding="utf-8"))


def total_units(items: list[Item]) -> int:
    return sum(item["quantity"] for item in items)


def low_stock(items: list[Item], threshold: int = 5) -> list[str]:
    """SKUs with fewer than ``threshold`` units on hand, sorted."""
    return sorted(item["sku"] for item in items if item["qty"] < threshold)


def render(items: list[Item], threshold: int = 5) -> str:
    lines = [f"total units: {total_units(items)}"]
    low = low_stock(items, threshold)
    lines.append("low stock: " + (", ".join(low) if low else "none"))
    return "\n".join(lines)


if __name__ == "__main__":
    print(render(load_items(Path(__file__).resolve().parent.parent / "data" / "inventory.json")))
EOF
touch tests/__init__.py
cat > tests/test_report.py <<'EOF'
import unittest
from pathlib import Path

from stock.report import load_items, low_stock, render, total_units

DATA = Path(__file__).resolve().parent.parent / "data" / "inventory.json"


class ReportTest(unittest.TestCase):
    def setUp(self):
        self.items = load_items(DATA)

    def test_total_units(self):
        self.assertEqual(total_units(self.items), 439)

    def test_low_stock(self):
        self.assertEqual(low_stock(self.items), ["GLUE-50", "NUT-M6", "WASHER-6"])
        self.assertEqual(low_stock(self.items, threshold=1), ["WASHER-6"])

    def test_render(self):
        self.assertEqual(render(self.items, threshold=4),
                         "total units: 439\nlow stock: NUT-M6, WASHER-6")


if __name__ == "__main__":
    unittest.main()
EOF
