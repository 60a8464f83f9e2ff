#!/usr/bin/env bash
# Pass when one parse_duration in jobs/durations.py serves both modules, with no copies left.
set -euo pipefail
cd "$WORK_DIR"
export PYTHONDONTWRITEBYTECODE=1

cmp "$TASK_DIR/starting/tests/test_jobs.py" tests/test_jobs.py
test -f jobs/durations.py || { echo "FAIL: jobs/durations.py does not exist"; exit 1; }

out=$(python3 -m unittest -v tests.test_jobs 2>&1) || { echo "$out"; echo "FAIL: test suite fails"; exit 1; }
grep -q "Ran 5 tests" <<<"$out"

# no unit table or duration regex left in the two modules
for f in jobs/scheduler.py jobs/retry.py; do
    if grep -nE '3600|86400|re\.compile|\[smhd\]' "$f"; then
        echo "FAIL: $f still has its own duration parsing (above)"
        exit 1
    fi
    grep -q 'parse_duration' "$f" || { echo "FAIL: $f does not use parse_duration"; exit 1; }
done

python3 - <<'PY'
import jobs.durations as d
import jobs.retry
import jobs.scheduler

pd = d.parse_duration
assert pd("90s") == 90 and pd("15m") == 900 and pd("2h") == 7200 and pd("1d") == 86400
assert pd("45") == 45 and pd(" 3 M ") == 180
for bad in ["", "h", "1w", "2.5m", "-1s", "0", "0m"]:
    try:
        pd(bad)
    except ValueError:
        pass
    else:
        raise AssertionError(f"parse_duration({bad!r}) should raise ValueError")

# both modules really go through the shared helper: swap it out and watch them follow
calls = []
def fake(text):
    calls.append(text)
    return 7
for mod in (jobs.scheduler, jobs.retry):
    if hasattr(mod, "parse_duration"):
        mod.parse_duration = fake
d.parse_duration = fake
assert jobs.scheduler.Job("x", "whatever").interval == 7, "scheduler does not use parse_duration"
assert jobs.retry.Backoff("a", "b").cap == 7, "retry does not use parse_duration"
assert len(calls) == 3, calls
print("hidden checks ok")
PY
