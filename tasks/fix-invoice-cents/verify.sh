#!/usr/bin/env bash
# Pass when prices parse exactly and invoice totals render with two decimals.
set -euo pipefail
cd "$WORK_DIR"
export PYTHONDONTWRITEBYTECODE=1

cmp "$TASK_DIR/starting/tests/test_money.py" tests/test_money.py
cmp "$TASK_DIR/starting/tests/test_invoice.py" tests/test_invoice.py

out=$(python3 -m unittest -v tests.test_money tests.test_invoice 2>&1) || { echo "$out"; echo "FAIL: test suite fails"; exit 1; }
grep -q "Ran 6 tests" <<<"$out"

python3 - <<'PY'
from billing.invoice import Invoice, Line
from billing.money import to_cents

# every price from 0.00 to 99.99 must parse exactly
for cents in range(10000):
    text = f"{cents // 100}.{cents % 100:02d}"
    assert to_cents(text) == cents, (text, to_cents(text))
    assert isinstance(to_cents(text), int)
assert to_cents("1.1") == 110
assert to_cents("$2,000") == 200000
inv = Invoice("Z").add("a", "0.10").add("b", "0.20", 3)
assert inv.total_cents == 70
assert inv.render().splitlines()[-1] == "TOTAL $0.70", inv.render()
big = Invoice("Y").add("x", "1,000.05", 2)
assert big.render().splitlines()[-1] == "TOTAL $2000.10", big.render()
assert isinstance(inv.lines[0], Line) and inv.lines[0].unit_cents == 10
print("hidden checks ok")
PY
