#!/usr/bin/env bash
# Pass when the shipped tests and data are unchanged and the report works on the new format.
# The checks are judged by gatecheck.py outside the checked code's process (README.md,
# "Writing tasks").
set -euo pipefail
cd "$WORK_DIR"
export PYTHONDONTWRITEBYTECODE=1

pristine=$(mktemp -d)
trap 'rm -rf "$pristine"' EXIT
(cd "$pristine" && bash "$TASK_DIR/setup.sh" >/dev/null)
cmp "$pristine/tests/test_report.py" tests/test_report.py
cmp "$pristine/data/inventory.json" data/inventory.json

python3 -I -S "$TASK_DIR/gatecheck.py" - <<'PY'
shipped_tests("tests.test_report", ran=3, names=("test_low_stock",))
do("from stock.report import low_stock, render")
do("""items = [
    {"sku": "Z", "name": "z", "quantity": 1, "location": "X"},
    {"sku": "A", "name": "a", "quantity": 9, "location": "X"},
    {"sku": "M", "name": "m", "quantity": 2, "location": "X"},
]""")
expect("low_stock(items, threshold=3)", ["M", "Z"])
expect("low_stock(items, threshold=1)", [])
expect("render(items, threshold=1)", "total units: 12\nlow stock: none")
# a stock list drawn afresh each run (rng)
items = [{"sku": f"S{n:03d}", "name": f"n{n}", "quantity": rng.randint(0, 20), "location": "Y"}
         for n in rng.sample(range(1000), 12)]
limit = rng.randint(1, 15)
expect(f"low_stock({items!r}, threshold={limit})",
       sorted(i["sku"] for i in items if i["quantity"] < limit))
PY
