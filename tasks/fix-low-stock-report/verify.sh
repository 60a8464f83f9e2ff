#!/usr/bin/env bash
# Pass when the shipped tests and data are unchanged and the report works on the new format.
set -euo pipefail
cd "$WORK_DIR"
export PYTHONDONTWRITEBYTECODE=1

pristine=$(mktemp -d)
trap 'rm -rf "$pristine"' EXIT
(cd "$pristine" && bash "$TASK_DIR/setup.sh" >/dev/null)
cmp "$pristine/tests/test_report.py" tests/test_report.py
cmp "$pristine/data/inventory.json" data/inventory.json

out=$(python3 -m unittest -v tests.test_report 2>&1) || { echo "$out"; echo "FAIL: test suite fails"; exit 1; }
grep -q "test_low_stock .* ok" <<<"$out"
grep -q "Ran 3 tests" <<<"$out"

python3 - <<'PY'
from stock.report import low_stock, render

items = [
    {"sku": "Z", "name": "z", "quantity": 1, "location": "X"},
    {"sku": "A", "name": "a", "quantity": 9, "location": "X"},
    {"sku": "M", "name": "m", "quantity": 2, "location": "X"},
]
assert low_stock(items, threshold=3) == ["M", "Z"], low_stock(items, threshold=3)
assert low_stock(items, threshold=1) == []
assert render(items, threshold=1) == "total units: 12\nlow stock: none"
print("hidden checks ok")
PY
