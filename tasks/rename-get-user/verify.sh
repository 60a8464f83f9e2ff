#!/usr/bin/env bash
# Pass when get_usr is gone everywhere, get_user works at every call site, tests still pass.
set -euo pipefail
cd "$WORK_DIR"
export PYTHONDONTWRITEBYTECODE=1

test -f shop/users.py
if grep -rnw --include='*.py' 'get_usr' .; then
    echo "FAIL: the old name get_usr is still used (above)"
    exit 1
fi

# the existing tests must still exist and pass (renamed calls are fine, deleted tests are not)
out=$(python3 -m unittest -v tests.test_users tests.test_orders 2>&1) || { echo "$out"; echo "FAIL: test suite fails"; exit 1; }
for t in test_known_user test_unknown_user test_returns_a_copy test_prefs_defaults \
         test_gold_discount test_place_order test_invoice; do
    grep -q "^$t .* ok$" <<<"$out" || { echo "$out"; echo "FAIL: $t did not run or did not pass"; exit 1; }
done

python3 - <<'PY'
import shop.billing, shop.cli, shop.orders, shop.users
from shop.users import UnknownUser, get_user, get_usr_prefs

assert not hasattr(shop.users, "get_usr"), "get_usr alias left behind in shop.users"
assert not hasattr(shop.users, "get_user_prefs"), "get_usr_prefs must keep its name"
for mod in (shop.orders, shop.cli):
    assert not hasattr(mod, "get_usr"), f"{mod.__name__} still imports get_usr"
assert get_user(2)["email"] == "linus@example.com"
try:
    get_user(404)
except UnknownUser:
    pass
else:
    raise AssertionError("get_user(404) must raise UnknownUser")
assert get_usr_prefs(1)["currency"] == "EUR"
assert shop.orders.order_total(2, {"pen": 2}) == 3.0
print("hidden checks ok")
PY

cli=$(python3 -m shop.cli 1)
[ "$cli" = "Ada <ada@example.com> tier=gold currency=EUR" ] || { echo "FAIL: cli printed: $cli"; exit 1; }
set +e
python3 -m shop.cli 7 2>/dev/null
rc=$?
set -e
[ "$rc" -eq 1 ] || { echo "FAIL: unknown user should exit 1, got $rc"; exit 1; }
echo "ok"
