#!/usr/bin/env bash
# Pass when the shipped tests pass unchanged and missing e-mails never crash the import.
# The checks are judged by gatecheck.py outside the checked code's process (README.md,
# "Writing tasks").
set -euo pipefail
cd "$WORK_DIR"
export PYTHONDONTWRITEBYTECODE=1

pristine=$(mktemp -d)
trap 'rm -rf "$pristine"' EXIT
(cd "$pristine" && bash "$TASK_DIR/setup.sh" >/dev/null)
cmp "$pristine/tests/test_contacts.py" tests/test_contacts.py

python3 -I -S "$TASK_DIR/gatecheck.py" - <<'PY'
shipped_tests("tests.test_contacts", ran=5, names=("test_missing_email_is_none",))
do("from dataclasses import astuple")
do("from crm.contacts import Contact, contact_from_row, normalize_email")
expect("normalize_email(None)", None)
expect('normalize_email("")', None)
expect('normalize_email("\\tBob@X.Test\\n")', "bob@x.test")
expect('astuple(contact_from_row({"name": "bob", "email": None}))', ("Bob", None))
expect('astuple(contact_from_row({"name": "bob"}))', ("Bob", None))
expect('type(contact_from_row({"name": "bob"})) is Contact', True)
# addresses drawn afresh each run (rng), padded with blanks
for _ in range(10):
    user = "".join(rng.choice("abcXYZ") for _ in range(rng.randint(1, 8)))
    pad = rng.choice(["", " ", "\t", "\n "])
    expect(f"normalize_email({pad + user + '@Ex.Test' + pad!r})", user.lower() + "@ex.test")
PY
