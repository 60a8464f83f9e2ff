#!/usr/bin/env bash
# Pass when the shipped tests pass unchanged and pagination is right on hidden cases.
set -euo pipefail
cd "$WORK_DIR"
export PYTHONDONTWRITEBYTECODE=1

# the shipped tests must be there and unchanged: rebuild the pristine workspace and compare
pristine=$(mktemp -d)
trap 'rm -rf "$pristine"' EXIT
(cd "$pristine" && bash "$TASK_DIR/setup.sh" >/dev/null)
cmp "$pristine/tests/test_pager.py" tests/test_pager.py

out=$(python3 -m unittest -v tests.test_pager 2>&1) || { echo "$out"; echo "FAIL: test suite fails"; exit 1; }
grep -q "test_last_partial_page .* ok" <<<"$out"
grep -q "Ran 8 tests" <<<"$out"

python3 - <<'PY'
from listing import PageOutOfRange, paginate
from listing.pager import page_count

assert page_count(21, 10) == 3, page_count(21, 10)
assert page_count(30, 10) == 3
assert page_count(7, 3) == 3
assert paginate(list("abcdefg"), 3, per_page=3) == (["g"], 3)
assert paginate(list("abcdef"), 2, per_page=3) == (["d", "e", "f"], 2)
try:
    paginate(list("abcdef"), 3, per_page=3)
except PageOutOfRange:
    pass
else:
    raise AssertionError("page 3 of a 6-item, 3-per-page listing must not exist")
print("hidden checks ok")
PY
