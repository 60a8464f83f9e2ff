#!/usr/bin/env bash
# Pass when the shipped test suite passes, unchanged, and slugify behaves on a few hidden cases.
# The checks are judged by gatecheck.py outside the checked code's process (README.md,
# "Writing tasks").
set -euo pipefail
cd "$WORK_DIR"
export PYTHONDONTWRITEBYTECODE=1

# the tests we shipped must still be there, unchanged
cmp "$TASK_DIR/starting/tests/test_slug.py" tests/test_slug.py

python3 -I -S "$TASK_DIR/gatecheck.py" - <<'PY'
shipped_tests("tests.test_slug", ran=7, names=("test_no_leading_or_trailing_separator",))
do("from textkit.slug import slugify")
cases = {
    "!!Breaking: news!!": "breaking-news",
    " trailing ": "trailing",
    "Ünïcode   café ": "unicode-cafe",
    "a  b": "a-b",
}
for given, want in cases.items():
    expect(f"slugify({given!r})", want)
expect('slugify("x y", sep="_")', "x_y")
expect('slugify("_x_", sep="_")', "x")
# words between runs of blanks and punctuation drawn afresh each run (rng)
for _ in range(20):
    words = ["".join(rng.choice("abcxyz019") for _ in range(rng.randint(1, 6))) for _ in range(rng.randint(1, 5))]
    text = "".join(rng.choice([" ", "  ", "\t", " - ", "!", "?? "]) + w.upper() for w in words) + rng.choice(["", " ", "!"])
    expect(f"slugify({text!r})", "-".join(words))
PY
