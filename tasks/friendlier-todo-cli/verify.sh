#!/usr/bin/env bash
# Behavioural checks: help exists, mistakes give a clear non-zero error (never a traceback),
# and add/list/done keep their exact output.
set -euo pipefail
cd "$WORK_DIR"
export PYTHONDONTWRITEBYTECODE=1
test -f todo.py

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export TODO_FILE="$tmp/todo.json"
fails=0

# run ARGS...: sets rc, out (stdout), err (stderr)
run() {
    set +e
    python3 todo.py "$@" >"$tmp/out" 2>"$tmp/err"
    rc=$?
    set -e
    out=$(cat "$tmp/out")
    err=$(cat "$tmp/err")
}
bad() { echo "FAIL: $*"; fails=$((fails + 1)); }
no_traceback() {
    if grep -q "Traceback" <<<"$out$err"; then bad "$1: prints a Python traceback"; fi
}

# the existing workflow, exact output
run list;               [ "$rc" -eq 0 ] && [ -z "$out" ] || bad "list on an empty list: rc=$rc out=$out"
run add "buy milk";     [ "$rc" -eq 0 ] || bad "add: rc=$rc $err"
run add "walk the dog"; [ "$rc" -eq 0 ] || bad "add: rc=$rc $err"
run done 2;             [ "$rc" -eq 0 ] || bad "done 2: rc=$rc $err"
run list
[ "$rc" -eq 0 ] && [ "$out" = "$(printf '1. [ ] buy milk\n2. [x] walk the dog')" ] || bad "list output changed: $out"

# help
for flag in --help -h; do
    run "$flag"
    no_traceback "$flag"
    [ "$rc" -eq 0 ] || bad "$flag exits $rc"
    for word in add list done; do grep -qw "$word" <<<"$out" || bad "$flag does not mention '$word'"; done
done

# no command at all: no traceback, and say what the commands are
run
no_traceback "no arguments"
grep -qw "add" <<<"$out$err" || bad "no arguments: does not tell the user the commands"

# unknown command: non-zero, names the problem on stderr
run frobnicate
no_traceback "unknown command"
[ "$rc" -ne 0 ] || bad "unknown command exits 0"
grep -q "frobnicate" <<<"$err" || bad "unknown command: stderr does not mention 'frobnicate': $err"

# missing / malformed arguments
run add
no_traceback "add without text"; [ "$rc" -ne 0 ] || bad "add without text exits 0"
[ -n "$err" ] || bad "add without text: no message on stderr"
run done
no_traceback "done without number"; [ "$rc" -ne 0 ] || bad "done without number exits 0"
run done abc
no_traceback "done abc"; [ "$rc" -ne 0 ] || bad "done abc exits 0"
[ -n "$err" ] || bad "done abc: no message on stderr"

# wrong item numbers: a clear error, and nothing gets marked
run done 42
no_traceback "done 42"; [ "$rc" -ne 0 ] || bad "done 42 exits 0"
grep -q "42" <<<"$err" || bad "done 42: stderr does not mention the bad number: $err"
run done 0
no_traceback "done 0"; [ "$rc" -ne 0 ] || bad "done 0 exits 0"
run list
[ "$out" = "$(printf '1. [ ] buy milk\n2. [x] walk the dog')" ] || bad "a bad 'done' changed the list: $out"

if [ "$fails" -ne 0 ]; then echo "$fails check(s) failed"; exit 1; fi
echo "ok"
