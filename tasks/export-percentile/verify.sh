#!/usr/bin/env bash
# Pass when percentile is public (import, __all__, star-import) and the version is 0.4.0.
# The checks are judged by gatecheck.py outside the checked code's process (README.md,
# "Writing tasks").
set -euo pipefail
cd "$WORK_DIR"
export PYTHONDONTWRITEBYTECODE=1

pristine=$(mktemp -d)
trap 'rm -rf "$pristine"' EXIT
(cd "$pristine" && bash "$TASK_DIR/setup.sh" >/dev/null)
cmp "$pristine/tests/test_stats.py" tests/test_stats.py
cmp "$pristine/tests/test_api.py" tests/test_api.py

python3 -I -S "$TASK_DIR/gatecheck.py" - <<'PY'
shipped_tests("tests.test_stats", "tests.test_api", ran=4, names=("test_percentile_is_public",))
do("import statkit, statkit.spread")
expect("statkit.percentile is statkit.spread.percentile", True)
expect("statkit.percentile([15, 20, 35, 40, 50], 50)", 35.0)
expect("sorted(statkit.__all__)", ["mean", "median", "percentile", "stdev", "variance"])
do("star = {}; exec('from statkit import *', star)")
expect("sorted(name for name in star if name != '__builtins__')",
       ["mean", "median", "percentile", "stdev", "variance"])
expect("statkit.__version__", "0.4.0")
PY
