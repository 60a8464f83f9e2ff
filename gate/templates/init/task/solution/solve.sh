#!/usr/bin/env bash
# The reference solution: `gate run --agent oracle` runs it instead of a model, and
# `gate validate` checks that verify.sh passes after it.
set -euo pipefail
python3 - <<'PY'
from pathlib import Path

p = Path("wordcount.py")
p.write_text(p.read_text().replace('len(text.split(" "))', "len(text.split())"))
PY

echo "count_words now splits on any run of whitespace (wordcount.py)"
