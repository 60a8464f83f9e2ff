#!/usr/bin/env bash
# Pass when the shipped tests pass unchanged and headers never leak between requests.
# The checks are judged by gatecheck.py outside the checked code's process (README.md,
# "Writing tasks").
set -euo pipefail
cd "$WORK_DIR"
export PYTHONDONTWRITEBYTECODE=1

cmp "$TASK_DIR/starting/tests/test_request.py" tests/test_request.py

python3 -I -S "$TASK_DIR/gatecheck.py" - <<'PY'
shipped_tests("tests.test_request", ran=5,
              names=("test_headers_are_not_shared_between_requests", "test_callers_headers_dict_is_not_modified"))
do("from minihttp import Request")
do('a = Request("https://h.test", method="put").with_header("X-A", "1")')
do('b = Request("https://h.test").with_header("X-B", "2")')
do('c = Request("https://h.test")')
expect("a.headers", {"X-A": "1"})
expect("b.headers", {"X-B": "2"})
expect("c.headers", {})
do('shared = {"K": "v"}')
do('d = Request("https://h.test", headers=shared)')
do('e = Request("https://h.test", headers=shared)')
do('d.with_header("Only-D", "1")')
expect("shared", {"K": "v"})
expect("e.headers", {"K": "v"})
expect("d.headers", {"K": "v", "Only-D": "1"})
# a header name drawn afresh each run (rng)
name = "X-" + "".join(rng.choice("ABCDEFGH") for _ in range(8))
do(f'f = Request("https://h.test").with_header({name!r}, "1")')
expect('Request("https://h.test").headers', {})
expect("f.headers", {name: "1"})
PY
