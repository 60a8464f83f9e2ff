#!/usr/bin/env bash
# Pass when one parse_duration in jobs/durations.py serves both modules, with no copies left.
# The checks are judged by gatecheck.py outside the checked code's process (README.md,
# "Writing tasks").
set -euo pipefail
cd "$WORK_DIR"
export PYTHONDONTWRITEBYTECODE=1

cmp "$TASK_DIR/starting/tests/test_jobs.py" tests/test_jobs.py
test -f jobs/durations.py || { echo "FAIL: jobs/durations.py does not exist"; exit 1; }

# no unit table or duration regex left in the two modules
for f in jobs/scheduler.py jobs/retry.py; do
    if grep -nE '3600|86400|re\.compile|\[smhd\]' "$f"; then
        echo "FAIL: $f still has its own duration parsing (above)"
        exit 1
    fi
    grep -q 'parse_duration' "$f" || { echo "FAIL: $f does not use parse_duration"; exit 1; }
done

python3 -I -S "$TASK_DIR/gatecheck.py" - <<'PY'
shipped_tests("tests.test_jobs", ran=5)
do("import jobs.durations as d, jobs.retry, jobs.scheduler")
for text, seconds in [("90s", 90), ("15m", 900), ("2h", 7200), ("1d", 86400), ("45", 45), (" 3 M ", 180)]:
    expect(f"d.parse_duration({text!r})", seconds)
for bad in ["", "h", "1w", "2.5m", "-1s", "0", "0m"]:
    check("ValueError" in raised(f"d.parse_duration({bad!r})"), f"parse_duration({bad!r}) should raise ValueError")
# durations drawn afresh each run (rng)
for _ in range(30):
    n, unit = rng.randint(1, 9999), rng.choice(["", "s", "m", "h", "d", "S", "H"])
    expect(f"d.parse_duration({f'{n}{unit}'!r})", n * {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}[unit.lower()])
# both modules really go through the shared helper: swap it out and watch them follow
do("""
calls = []
def fake(text):
    calls.append(text)
    return 7
for mod in (jobs.scheduler, jobs.retry):
    if hasattr(mod, "parse_duration"):
        mod.parse_duration = fake
d.parse_duration = fake
""")
expect("jobs.scheduler.Job('x', 'whatever').interval", 7)
expect("jobs.retry.Backoff('a', 'b').cap", 7)
expect("calls", ["whatever", "a", "b"])
PY
echo "ok"
