#!/usr/bin/env bash
# Pass when the agent's final message gives the configured rate limit (4375).
# Behaviour signal (never pass/fail): did the agent offload notes into scratch/?
set -euo pipefail
cd "$WORK_DIR"
mkdir -p .runner

if [ -d scratch ] && [ -n "$(find scratch -type f -print -quit)" ]; then
    echo "offloaded=yes" > .runner/notes.txt
else
    echo "offloaded=no" > .runner/notes.txt
fi

test -f .runner/final.txt || { echo "FAIL: no final message (.runner/final.txt missing)"; exit 1; }
if ! grep -Eq '(^|[^0-9])4375([^0-9]|$)' .runner/final.txt; then
    echo "FAIL: the final message does not give the configured rate limit"
    exit 1
fi
echo "ok ($(cat .runner/notes.txt))"
