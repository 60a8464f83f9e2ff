#!/usr/bin/env bash
# Creates a tiny CRM import module whose e-mail normaliser crashes on None.
set -euo pipefail
mkdir -p crm tests
cat > crm/__init__.py <<'EOF'
EOF
cat > crm/contacts.py <<'EOF'
"""Turn raw import rows (dicts from the CSV reader) into contacts."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Contact:
    name: str
    email: str | None


def normalize_email(value: str | None) -> str | None:
    """Trim and lower-case an e-mail address. Blank or missing means "no e-mail": None."""
    value = value.strip().lower()
    return value or None


def normalize_name(value: str) -> str:
    return " ".join(part.capitalize() for part in value.split())


def contact_from_row(row: dict[str, str | None]) -> Contact:
    return Contact(name=normalize_name(row.get("name") or ""),
                   email=normalize_email(row.get("email")))


def import_rows(rows: list[dict[str, str | None]]) -> list[Contact]:
    """Contacts from rows; rows without a name are skipped."""
    return [contact_from_row(r) for r in rows if (r.get("name") or "").strip()]
EOF
touch tests/__init__.py
cat > tests/test_contacts.py <<'EOF'
import unittest

from crm.contacts import Contact, import_rows, normalize_email, normalize_name


class NormalizeTest(unittest.TestCase):
    def test_email_trimmed_and_lowered(self):
        self.assertEqual(normalize_email("  Ada@Example.COM "), "ada@example.com")

    def test_blank_email_is_none(self):
        self.assertIsNone(normalize_email("   "))

    def test_missing_email_is_none(self):
        self.assertIsNone(normalize_email(None))

    def test_name(self):
        self.assertEqual(normalize_name("  ada   LOVELACE "), "Ada Lovelace")


class ImportTest(unittest.TestCase):
    def test_import_skips_nameless_rows_and_tolerates_missing_email(self):
        rows = [
            {"name": "grace hopper", "email": "GRACE@navy.mil"},
            {"name": "", "email": "nobody@x.test"},
            {"name": "alan turing", "email": None},
            {"name": "edsger dijkstra"},
        ]
        self.assertEqual(import_rows(rows), [
            Contact("Grace Hopper", "grace@navy.mil"),
            Contact("Alan Turing", None),
            Contact("Edsger Dijkstra", None),
        ])


if __name__ == "__main__":
    unittest.main()
EOF
