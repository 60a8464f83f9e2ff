#!/usr/bin/env bash
# Pass when the shipped test suite passes, unchanged, and slugify behaves on a few hidden cases.
set -euo pipefail
cd "$WORK_DIR"
export PYTHONDONTWRITEBYTECODE=1

# the tests we shipped must still be there, unchanged
cmp "$TASK_DIR/starting/tests/test_slug.py" tests/test_slug.py

out=$(python3 -m unittest -v tests.test_slug 2>&1) || { echo "$out"; echo "FAIL: test suite fails"; exit 1; }
grep -q "test_no_leading_or_trailing_separator .* ok" <<<"$out"
grep -q "Ran 7 tests" <<<"$out"

python3 - <<'PY'
from textkit.slug import slugify
cases = {
    "!!Breaking: news!!": "breaking-news",
    " trailing ": "trailing",
    "Ünïcode   café ": "unicode-cafe",
    "a  b": "a-b",
}
for given, want in cases.items():
    got = slugify(given)
    assert got == want, f"slugify({given!r}) = {got!r}, want {want!r}"
assert slugify("x y", sep="_") == "x_y"
assert slugify("_x_", sep="_") == "x"
print("hidden checks ok")
PY
