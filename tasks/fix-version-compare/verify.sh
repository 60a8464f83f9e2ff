#!/usr/bin/env bash
# Pass when the shipped tests pass unchanged and versions compare numerically.
set -euo pipefail
cd "$WORK_DIR"
export PYTHONDONTWRITEBYTECODE=1

cmp "$TASK_DIR/starting/tests/test_versions.py" tests/test_versions.py

out=$(python3 -m unittest -v tests.test_versions 2>&1) || { echo "$out"; echo "FAIL: test suite fails"; exit 1; }
grep -q "test_multi_digit_components .* ok" <<<"$out"
grep -q "Ran 5 tests" <<<"$out"

python3 - <<'PY'
from updater.versions import is_newer, latest, parse_version

assert is_newer("10.0.0", "9.99.99")
assert not is_newer("9.99.99", "10.0.0")
assert is_newer("0.0.11", "0.0.2")
assert not is_newer("v3.1", "3.1.0")
assert latest(["0.9", "0.10", "0.2"]) == "0.10"
assert parse_version("v1.20") == parse_version("1.20.0")
print("hidden checks ok")
PY
