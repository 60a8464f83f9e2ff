#!/usr/bin/env bash
# Pass when --dry-run lists without deleting, a real run is unchanged, and --help shows it.
# The shipped tests run through gatecheck.py (README.md, "Writing tasks"); the rest is the
# program's behaviour on files in a fresh temporary directory, judged here.
set -euo pipefail
cd "$WORK_DIR"
export PYTHONDONTWRITEBYTECODE=1

pristine=$(mktemp -d)
scratch=$(mktemp -d)
trap 'rm -rf "$pristine" "$scratch"' EXIT
(cd "$pristine" && bash "$TASK_DIR/setup.sh" >/dev/null)
cmp "$pristine/tests/test_cleanup.py" tests/test_cleanup.py

python3 -I -S "$TASK_DIR/gatecheck.py" - <<'PY'
shipped_tests("tests.test_cleanup", ran=3)
PY

help=$(python3 cleanup.py --help)
grep -q -- "--dry-run" <<<"$help" || { echo "FAIL: --dry-run missing from --help"; exit 1; }

make_tree() {
    rm -rf "$scratch/t"
    mkdir -p "$scratch/t/sub"
    for f in sub/a.tmp b.tmp c.log; do echo x > "$scratch/t/$f"; touch -d '30 days ago' "$scratch/t/$f"; done
    echo x > "$scratch/t/fresh.tmp"
}

# dry run: nothing deleted, every stale match listed as "would delete: <path>"
make_tree
dry=$(python3 cleanup.py "$scratch/t" --dry-run)
for f in sub/a.tmp b.tmp c.log fresh.tmp; do
    test -f "$scratch/t/$f" || { echo "FAIL: --dry-run deleted $f"; exit 1; }
done
grep -qx "would delete: $scratch/t/sub/a.tmp" <<<"$dry" || { echo "$dry"; echo "FAIL: sub/a.tmp not listed"; exit 1; }
grep -qx "would delete: $scratch/t/b.tmp" <<<"$dry" || { echo "$dry"; echo "FAIL: b.tmp not listed"; exit 1; }
if grep -q "fresh.tmp\|c.log\|^deleted:" <<<"$dry"; then echo "$dry"; echo "FAIL: dry run lists the wrong files"; exit 1; fi
[ "$(grep -c '^would delete: ' <<<"$dry")" -eq 2 ] || { echo "$dry"; echo "FAIL: expected 2 'would delete' lines"; exit 1; }

# the flag combines with --pattern / --older-than
dry2=$(python3 cleanup.py "$scratch/t" --pattern '*.log' --older-than 10 --dry-run)
grep -qx "would delete: $scratch/t/c.log" <<<"$dry2" || { echo "$dry2"; echo "FAIL: --pattern ignored in dry run"; exit 1; }
test -f "$scratch/t/c.log"

# a real run still deletes and prints exactly what it did before
real=$(python3 cleanup.py "$scratch/t")
want=$(printf 'deleted: %s\ndeleted: %s\n2 file(s) deleted' "$scratch/t/b.tmp" "$scratch/t/sub/a.tmp")
[ "$real" = "$want" ] || { printf 'got:\n%s\nwant:\n%s\n' "$real" "$want"; echo "FAIL: real run output changed"; exit 1; }
test ! -e "$scratch/t/b.tmp"
test -f "$scratch/t/fresh.tmp"
echo "ok"
