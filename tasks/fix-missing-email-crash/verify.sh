#!/usr/bin/env bash
# Pass when the shipped tests pass unchanged and missing e-mails never crash the import.
set -euo pipefail
cd "$WORK_DIR"
export PYTHONDONTWRITEBYTECODE=1

pristine=$(mktemp -d)
trap 'rm -rf "$pristine"' EXIT
(cd "$pristine" && bash "$TASK_DIR/setup.sh" >/dev/null)
cmp "$pristine/tests/test_contacts.py" tests/test_contacts.py

out=$(python3 -m unittest -v tests.test_contacts 2>&1) || { echo "$out"; echo "FAIL: test suite fails"; exit 1; }
grep -q "test_missing_email_is_none .* ok" <<<"$out"
grep -q "Ran 5 tests" <<<"$out"

python3 - <<'PY'
from crm.contacts import Contact, contact_from_row, normalize_email

assert normalize_email(None) is None
assert normalize_email("") is None
assert normalize_email("\tBob@X.Test\n") == "bob@x.test"
assert contact_from_row({"name": "bob", "email": None}) == Contact("Bob", None)
assert contact_from_row({"name": "bob"}) == Contact("Bob", None)
print("hidden checks ok")
PY
