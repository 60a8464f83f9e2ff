#!/usr/bin/env bash
# Pass when percentile is public (import, __all__, star-import) and the version is 0.4.0.
set -euo pipefail
cd "$WORK_DIR"
export PYTHONDONTWRITEBYTECODE=1

pristine=$(mktemp -d)
trap 'rm -rf "$pristine"' EXIT
(cd "$pristine" && bash "$TASK_DIR/setup.sh" >/dev/null)
cmp "$pristine/tests/test_stats.py" tests/test_stats.py
cmp "$pristine/tests/test_api.py" tests/test_api.py

out=$(python3 -m unittest -v tests.test_stats tests.test_api 2>&1) || { echo "$out"; echo "FAIL: test suite fails"; exit 1; }
grep -q "test_percentile_is_public .* ok" <<<"$out"
grep -q "Ran 4 tests" <<<"$out"

python3 - <<'PY'
import statkit
import statkit.spread

assert statkit.percentile is statkit.spread.percentile, "statkit.percentile is not spread.percentile"
assert set(statkit.__all__) == {"mean", "median", "percentile", "stdev", "variance"}, statkit.__all__
assert len(statkit.__all__) == 5, "duplicates in __all__"
ns = {}
exec("from statkit import *", ns)
for name in ("mean", "median", "percentile", "stdev", "variance"):
    assert name in ns, f"{name} missing from star-import"
assert statkit.__version__ == "0.4.0", statkit.__version__
print("hidden checks ok")
PY
