#!/usr/bin/env bash
# Passes when count_words() counts words separated by any whitespace. Runs after the agent, in
# its workspace ($WORK_DIR); exit 0 is a pass, anything else a failure. It must FAIL on the
# untouched workspace and PASS after solution/solve.sh (`gate validate` checks both).
set -euo pipefail
cd "$WORK_DIR"
export PYTHONDONTWRITEBYTECODE=1
python3 - <<'PY'
from wordcount import count_words

cases = {"one": 1, "a b": 2, "a  b": 2, "  leading and trailing  ": 3, "tabs\tand\nnewlines": 3,
         "": 0, " \t\n ": 0}
for text, want in cases.items():
    got = count_words(text)
    assert got == want, f"count_words({text!r}) = {got}, want {want}"
print("count_words ok")
PY
