#!/usr/bin/env bash
# Run a command, keep its whole output in scratch/, print only a summary of it.
# Usage: scripts/offload.sh CMD [ARGS...]
set -uo pipefail
if [ "$#" -eq 0 ]; then
    echo "usage: offload.sh CMD [ARGS...]" >&2
    exit 2
fi
mkdir -p scratch
out="scratch/offload-$(date +%s)-$$.txt"
"$@" > "$out" 2>&1
status=$?
lines=$(wc -l < "$out")
echo "exit status: $status; $lines lines saved to $out"
if [ "$lines" -le 40 ]; then
    cat "$out"
else
    head -n 15 "$out"
    echo "[... $((lines - 30)) lines in $out: search them with grep -n ...]"
    tail -n 15 "$out"
fi
exit "$status"
