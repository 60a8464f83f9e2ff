#!/usr/bin/env bash
# Pass when get_usr is gone everywhere, get_user works at every call site, tests still pass.
# The checks are judged by gatecheck.py outside the checked code's process (README.md,
# "Writing tasks").
set -euo pipefail
cd "$WORK_DIR"
export PYTHONDONTWRITEBYTECODE=1

test -f shop/users.py
if grep -rnw --include='*.py' 'get_usr' .; then
    echo "FAIL: the old name get_usr is still used (above)"
    exit 1
fi

# the existing tests must still exist and pass (renamed calls are fine, deleted tests are not)
python3 -I -S "$TASK_DIR/gatecheck.py" - <<'PY'
shipped_tests("tests.test_users", "tests.test_orders",
              names=("test_known_user", "test_unknown_user", "test_returns_a_copy", "test_prefs_defaults",
                     "test_gold_discount", "test_place_order", "test_invoice"))
do("import shop.billing, shop.cli, shop.orders, shop.users")
do("from shop.users import UnknownUser, get_user, get_usr_prefs")
expect('hasattr(shop.users, "get_usr")', False)
expect('hasattr(shop.users, "get_user_prefs")', False)
expect('[hasattr(mod, "get_usr") for mod in (shop.orders, shop.cli)]', [False, False])
expect('get_user(2)["email"]', "linus@example.com")
check("UnknownUser" in raised("get_user(404)"), "get_user(404) must raise UnknownUser")
expect('get_usr_prefs(1)["currency"]', "EUR")
expect('shop.orders.order_total(2, {"pen": 2})', 3.0)
PY

cli=$(python3 -m shop.cli 1)
[ "$cli" = "Ada <ada@example.com> tier=gold currency=EUR" ] || { echo "FAIL: cli printed: $cli"; exit 1; }
set +e
python3 -m shop.cli 7 2>/dev/null
rc=$?
set -e
[ "$rc" -eq 1 ] || { echo "FAIL: unknown user should exit 1, got $rc"; exit 1; }
echo "ok"
