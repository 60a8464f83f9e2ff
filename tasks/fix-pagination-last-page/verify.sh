#!/usr/bin/env bash
# Pass when the shipped tests pass unchanged and pagination is right on hidden cases.
# The checks are judged by gatecheck.py outside the checked code's process (README.md,
# "Writing tasks").
set -euo pipefail
cd "$WORK_DIR"
export PYTHONDONTWRITEBYTECODE=1

# the shipped tests must be there and unchanged: rebuild the pristine workspace and compare
pristine=$(mktemp -d)
trap 'rm -rf "$pristine"' EXIT
(cd "$pristine" && bash "$TASK_DIR/setup.sh" >/dev/null)
cmp "$pristine/tests/test_pager.py" tests/test_pager.py

python3 -I -S "$TASK_DIR/gatecheck.py" - <<'PY'
shipped_tests("tests.test_pager", ran=8, names=("test_last_partial_page",))
do("from listing import PageOutOfRange, paginate")
do("from listing.pager import page_count")
expect("page_count(21, 10)", 3)
expect("page_count(30, 10)", 3)
expect("page_count(7, 3)", 3)
expect('paginate(list("abcdefg"), 3, per_page=3)', (["g"], 3))
expect('paginate(list("abcdef"), 2, per_page=3)', (["d", "e", "f"], 2))
check("PageOutOfRange" in raised('paginate(list("abcdef"), 3, per_page=3)'),
      "page 3 of a 6-item, 3-per-page listing must not exist")
# listings drawn afresh each run (rng)
for _ in range(20):
    total, per = rng.randint(1, 500), rng.randint(1, 40)
    pages = -(-total // per)
    expect(f"page_count({total}, {per})", pages)
    expect(f"paginate(list(range({total})), {pages}, per_page={per})",
           (list(range((pages - 1) * per, total)), pages))
PY
