#!/usr/bin/env bash
# Passes when count_words() counts words separated by any whitespace. Runs after the agent, in
# its workspace ($WORK_DIR); exit 0 is a pass, anything else a failure. It must FAIL on the
# untouched workspace and PASS after solution/solve.sh (`gate validate` checks both).
# The checks go through gatecheck.py (beside this file): the checked code runs in a process of
# its own and only answers with values, which are compared outside it, so it cannot pass by
# exiting 0, printing "ok" or patching unittest (docs/tasks.md, "Writing tasks").
set -euo pipefail
cd "$WORK_DIR"
export PYTHONDONTWRITEBYTECODE=1
python3 -I -S "$TASK_DIR/gatecheck.py" - <<'PY'
do("from wordcount import count_words")
cases = {"one": 1, "a b": 2, "a  b": 2, "  leading and trailing  ": 3, "tabs\tand\nnewlines": 3,
         "": 0, " \t\n ": 0}
for text, want in cases.items():
    expect(f"count_words({text!r})", want)
# words between runs of whitespace drawn afresh each run (rng): no answer can be prepared
for _ in range(30):
    words = ["".join(rng.choice("abxyz") for _ in range(rng.randint(1, 5)))
             for _ in range(rng.randint(0, 9))]
    text = "".join(rng.choice([" ", "  ", "\t", "\n", " \t\n "]) + w for w in words)
    expect(f"count_words({text + rng.choice(['', ' ', chr(10)])!r})", len(words))
PY
