#!/usr/bin/env bash
# Pass when the library modules log (right loggers, right levels) and print nothing.
set -euo pipefail
cd "$WORK_DIR"
export PYTHONDONTWRITEBYTECODE=1

cmp "$TASK_DIR/starting/tests/test_pipeline.py" tests/test_pipeline.py
out=$(python3 -m unittest -v tests.test_pipeline 2>&1) || { echo "$out"; echo "FAIL: test suite fails"; exit 1; }
grep -q "Ran 3 tests" <<<"$out"

for f in etl/extract.py etl/transform.py etl/load.py; do
    if grep -n 'print(' "$f"; then echo "FAIL: $f still prints (above)"; exit 1; fi
done

# the CLI's stdout is only the CSV result
csv_in=$(mktemp)
trap 'rm -f "$csv_in"' EXIT
printf 'region,amount\nNorth,1.25\nWest,bad\nnorth,2\n' > "$csv_in"
stdout=$(python3 -m etl.cli "$csv_in" 2>/dev/null)
[ "$stdout" = "$(printf 'region,total\nnorth,3.25')" ] || { echo "got stdout: $stdout"; echo "FAIL: CLI stdout is not just the CSV"; exit 1; }

python3 - <<'PY'
import contextlib
import io
import logging
import unittest

from etl.cli import run

SAMPLE = "region,amount\nA,1\n,2\nB,x\nA,0.5\n"


class Logs(unittest.TestCase):
    def test_library_is_quiet_and_logs(self):
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf), self.assertLogs("etl", level="DEBUG") as cm:
            result = run(SAMPLE)
        self.assertEqual(result, "region,total\na,1.50\n")
        self.assertEqual(buf.getvalue(), "", "library code wrote to stdout")
        names = {r.name for r in cm.records}
        for mod in ("etl.extract", "etl.transform", "etl.load"):
            self.assertIn(mod, names, f"no log records from logger {mod}")
        warnings = [r for r in cm.records if r.levelno == logging.WARNING]
        self.assertEqual(len(warnings), 1, [r.getMessage() for r in cm.records])
        self.assertEqual(warnings[0].name, "etl.transform")
        self.assertIn("skipped 2 invalid row", warnings[0].getMessage())
        others = [r for r in cm.records if r is not warnings[0]]
        self.assertTrue(others and all(r.levelno == logging.DEBUG for r in others),
                        [(r.levelname, r.getMessage()) for r in others])
        msgs = " | ".join(r.getMessage() for r in cm.records)
        for text in ("got 4 rows", "2 clean rows", "1 regions", "writing 1 rows"):
            self.assertIn(text, msgs)

    def test_silent_by_default(self):
        err = io.StringIO()
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()) as out:
            run("region,amount\nA,1\n")
        self.assertEqual(out.getvalue(), "")
        self.assertNotIn("rows", err.getvalue(), "DEBUG chatter shown without logging config")


r = unittest.TextTestRunner(verbosity=1).run(unittest.defaultTestLoader.loadTestsFromTestCase(Logs))
raise SystemExit(0 if r.wasSuccessful() else 1)
PY
echo "ok"
