#!/usr/bin/env bash
# Pass when the library modules log (right loggers, right levels) and print nothing.
# The checks are judged by gatecheck.py outside the checked code's process (README.md,
# "Writing tasks").
set -euo pipefail
cd "$WORK_DIR"
export PYTHONDONTWRITEBYTECODE=1

cmp "$TASK_DIR/starting/tests/test_pipeline.py" tests/test_pipeline.py
python3 -I -S "$TASK_DIR/gatecheck.py" - <<'PY'
shipped_tests("tests.test_pipeline", ran=3)
PY

for f in etl/extract.py etl/transform.py etl/load.py; do
    if grep -n 'print(' "$f"; then echo "FAIL: $f still prints (above)"; exit 1; fi
done

# the CLI's stdout is only the CSV result
csv_in=$(mktemp)
trap 'rm -f "$csv_in"' EXIT
printf 'region,amount\nNorth,1.25\nWest,bad\nnorth,2\n' > "$csv_in"
stdout=$(python3 -m etl.cli "$csv_in" 2>/dev/null)
[ "$stdout" = "$(printf 'region,total\nnorth,3.25')" ] || { echo "got stdout: $stdout"; echo "FAIL: CLI stdout is not just the CSV"; exit 1; }

# the library logs (right loggers, right levels) and prints nothing: what it logged and printed
# is handed back as data and judged here
python3 -I -S "$TASK_DIR/gatecheck.py" - <<'PY'
do("""
import contextlib, io, logging, unittest
from etl.cli import run

out = io.StringIO()
with contextlib.redirect_stdout(out), unittest.TestCase().assertLogs("etl", level="DEBUG") as cm:
    result = run("region,amount\\nA,1\\n,2\\nB,x\\nA,0.5\\n")
records = [(r.name, r.levelno, r.getMessage()) for r in cm.records]
""")
expect("result", "region,total\na,1.50\n")
expect("out.getvalue()", "")
records = ask("records")
names = {name for name, _, _ in records}
for mod in ("etl.extract", "etl.transform", "etl.load"):
    check(mod in names, f"no log records from logger {mod}: {records}")
warnings = [r for r in records if r[1] == 30]
check(len(warnings) == 1 and warnings[0][0] == "etl.transform" and "skipped 2 invalid row" in warnings[0][2],
      f"want one WARNING from etl.transform about 2 skipped rows: {records}")
others = [r for r in records if r not in warnings]
check(bool(others) and all(level == 10 for _, level, _ in others), f"the others must be DEBUG: {records}")
said = " | ".join(text for _, _, text in records)
for text in ("got 4 rows", "2 clean rows", "1 regions", "writing 1 rows"):
    check(text in said, f"{text!r} not logged: {said}")
# silent by default: nothing on stdout, no DEBUG chatter on stderr without logging config
do("""
err, out = io.StringIO(), io.StringIO()
with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
    run("region,amount\\nA,1\\n")
""")
expect("out.getvalue()", "")
check("rows" not in ask("err.getvalue()"), "DEBUG chatter shown without logging config")
PY
echo "ok"
