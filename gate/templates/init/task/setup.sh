#!/usr/bin/env bash
# Example task (written by `gate init`): creates wordcount.py, whose count_words() miscounts.
# setup.sh runs in a fresh, empty workspace before the agent starts; replace this task with
# tasks from your own project (each needs task.md and verify.sh; setup.sh and
# solution/solve.sh are optional, and `gate validate` checks every task is sound).
set -euo pipefail
cat > wordcount.py <<'PY'
"""Word counts for the report generator."""


def count_words(text: str) -> int:
    """The number of words in ``text``."""
    return len(text.split(" "))
PY
