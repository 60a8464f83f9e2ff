#!/usr/bin/env bash
# Creates a small shop package where get_usr is used across several modules and tests.
set -euo pipefail
mkdir -p shop tests
cat > shop/__init__.py <<'EOF'
"""A toy shop backend."""
EOF
cat > shop/users.py <<'EOF'
"""User records (an in-memory stand-in for the users service)."""

from __future__ import annotations

from typing import Any

_USERS: dict[int, dict[str, Any]] = {
    1: {"id": 1, "name": "Ada", "email": "ada@example.com", "tier": "gold"},
    2: {"id": 2, "name": "Linus", "email": "linus@example.com", "tier": "basic"},
}
_PREFS: dict[int, dict[str, Any]] = {
    1: {"newsletter": True, "currency": "EUR"},
}


class UnknownUser(LookupError):
    pass


def get_usr(user_id: int) -> dict[str, Any]:
    """The user record for ``user_id``; raises ``UnknownUser``."""
    try:
        return dict(_USERS[user_id])
    except KeyError:
        raise UnknownUser(user_id) from None


def get_usr_prefs(user_id: int) -> dict[str, Any]:
    """Preferences, with defaults for users who never set any."""
    get_usr(user_id)  # validates the id
    return {"newsletter": False, "currency": "USD", **_PREFS.get(user_id, {})}
EOF
cat > shop/orders.py <<'EOF'
"""Placing orders."""

from __future__ import annotations

from shop.users import get_usr

PRICES = {"book": 12.0, "pen": 1.5, "lamp": 30.0}
DISCOUNT = {"gold": 0.10, "basic": 0.0}


def order_total(user_id: int, items: dict[str, int]) -> float:
    user = get_usr(user_id)
    subtotal = sum(PRICES[name] * qty for name, qty in items.items())
    return round(subtotal * (1 - DISCOUNT[user["tier"]]), 2)


def place_order(user_id: int, items: dict[str, int]) -> dict:
    user = get_usr(user_id)
    return {"user": user["name"], "items": dict(items), "total": order_total(user_id, items)}
EOF
cat > shop/billing.py <<'EOF'
"""Invoices go out by e-mail."""

from __future__ import annotations

from shop import users
from shop.orders import place_order


def invoice_email(user_id: int, items: dict[str, int]) -> tuple[str, str]:
    """(recipient, body) for an order's invoice."""
    order = place_order(user_id, items)
    prefs = users.get_usr_prefs(user_id)
    recipient = users.get_usr(user_id)["email"]
    body = f"Hello {order['user']}, you owe {order['total']:.2f} {prefs['currency']}."
    return recipient, body
EOF
cat > shop/cli.py <<'EOF'
"""python3 -m shop.cli USER_ID: show a user and their preferences."""

from __future__ import annotations

import sys

from shop.users import UnknownUser, get_usr, get_usr_prefs


def main(argv: list[str]) -> int:
    if len(argv) != 1 or not argv[0].isdigit():
        print("usage: python3 -m shop.cli USER_ID", file=sys.stderr)
        return 2
    try:
        user = get_usr(int(argv[0]))
    except UnknownUser:
        print(f"no user {argv[0]}", file=sys.stderr)
        return 1
    prefs = get_usr_prefs(user["id"])
    print(f"{user['name']} <{user['email']}> tier={user['tier']} currency={prefs['currency']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
EOF
touch tests/__init__.py
cat > tests/test_users.py <<'EOF'
import unittest

from shop.users import UnknownUser, get_usr, get_usr_prefs


class UsersTest(unittest.TestCase):
    def test_known_user(self):
        self.assertEqual(get_usr(1)["name"], "Ada")

    def test_unknown_user(self):
        with self.assertRaises(UnknownUser):
            get_usr(99)

    def test_returns_a_copy(self):
        get_usr(2)["name"] = "changed"
        self.assertEqual(get_usr(2)["name"], "Linus")

    def test_prefs_defaults(self):
        self.assertEqual(get_usr_prefs(2), {"newsletter": False, "currency": "USD"})


if __name__ == "__main__":
    unittest.main()
EOF
cat > tests/test_orders.py <<'EOF'
import unittest

from shop.billing import invoice_email
from shop.orders import order_total, place_order


class OrdersTest(unittest.TestCase):
    def test_gold_discount(self):
        self.assertEqual(order_total(1, {"book": 2, "pen": 2}), 24.3)

    def test_place_order(self):
        self.assertEqual(place_order(2, {"lamp": 1}),
                         {"user": "Linus", "items": {"lamp": 1}, "total": 30.0})

    def test_invoice(self):
        self.assertEqual(invoice_email(1, {"lamp": 1}),
                         ("ada@example.com", "Hello Ada, you owe 27.00 EUR."))


if __name__ == "__main__":
    unittest.main()
EOF
