#!/usr/bin/env bash
# Pass when prices parse exactly and invoice totals render with two decimals. The checks are
# judged by gatecheck.py outside the checked code's process (README.md, "Writing tasks").
set -euo pipefail
cd "$WORK_DIR"
export PYTHONDONTWRITEBYTECODE=1

cmp "$TASK_DIR/starting/tests/test_money.py" tests/test_money.py
cmp "$TASK_DIR/starting/tests/test_invoice.py" tests/test_invoice.py

python3 -I -S "$TASK_DIR/gatecheck.py" - <<'PY'
shipped_tests("tests.test_money", "tests.test_invoice", ran=6)
do("from billing.invoice import Invoice, Line")
do("from billing.money import to_cents")
# every price from 0.00 to 99.99 must parse exactly (and to an int: the types are compared too)
expect("[to_cents(f'{c // 100}.{c % 100:02d}') for c in range(10000)]", list(range(10000)))
expect('to_cents("1.1")', 110)
expect('to_cents("$2,000")', 200000)
# prices drawn afresh each run (rng), with a dollar sign and thousands commas
for _ in range(30):
    cents = rng.randint(0, 10**9)
    expect(f"to_cents({f'${cents // 100:,}.{cents % 100:02d}'!r})", cents)
do('inv = Invoice("Z").add("a", "0.10").add("b", "0.20", 3)')
expect("inv.total_cents", 70)
expect("inv.render().splitlines()[-1]", "TOTAL $0.70")
expect('Invoice("Y").add("x", "1,000.05", 2).render().splitlines()[-1]', "TOTAL $2000.10")
expect("isinstance(inv.lines[0], Line) and inv.lines[0].unit_cents", 10)
PY
