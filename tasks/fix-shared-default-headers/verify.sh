#!/usr/bin/env bash
# Pass when the shipped tests pass unchanged and headers never leak between requests.
set -euo pipefail
cd "$WORK_DIR"
export PYTHONDONTWRITEBYTECODE=1

cmp "$TASK_DIR/starting/tests/test_request.py" tests/test_request.py

out=$(python3 -m unittest -v tests.test_request 2>&1) || { echo "$out"; echo "FAIL: test suite fails"; exit 1; }
grep -q "test_headers_are_not_shared_between_requests .* ok" <<<"$out"
grep -q "test_callers_headers_dict_is_not_modified .* ok" <<<"$out"
grep -q "Ran 5 tests" <<<"$out"

python3 - <<'PY'
from minihttp import Request

a = Request("https://h.test", method="put").with_header("X-A", "1")
b = Request("https://h.test").with_header("X-B", "2")
c = Request("https://h.test")
assert a.headers == {"X-A": "1"}, a.headers
assert b.headers == {"X-B": "2"}, b.headers
assert c.headers == {}, c.headers
shared = {"K": "v"}
d = Request("https://h.test", headers=shared)
e = Request("https://h.test", headers=shared)
d.with_header("Only-D", "1")
assert shared == {"K": "v"}, shared
assert e.headers == {"K": "v"}, e.headers
print("hidden checks ok")
PY
