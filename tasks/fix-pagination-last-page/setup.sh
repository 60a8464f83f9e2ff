#!/usr/bin/env bash
# Creates a small pagination package with a failing test (off-by-one in the page count).
set -euo pipefail
mkdir -p listing tests
cat > README.md <<'EOF'
# listing

Pagination helpers for the listing API. Pages are 1-based.

    python3 -m unittest
EOF
cat > listing/__init__.py <<'EOF'
from listing.pager import PageOutOfRange, paginate

__all__ = ["PageOutOfRange", "paginate"]
EOF
cat > listing/pager.py <<'EOF'
"""Split a list into 1-based pages."""

from __future__ import annotations

from typing import Sequence, TypeVar

T = TypeVar("T")


class PageOutOfRange(ValueError):
    """The requested page does not exist."""


def page_count(total: int, per_page: int) -> int:
    """How many pages ``total`` items fill; an empty listing still has one (empty) page."""
    if per_page < 1:
        raise ValueError("per_page must be at least 1")
    return max(1, total // per_page)


def paginate(items: Sequence[T], page: int, per_page: int = 10) -> tuple[list[T], int]:
    """Return ``(items on that page, number of pages)``. ``page`` starts at 1."""
    pages = page_count(len(items), per_page)
    if page < 1 or page > pages:
        raise PageOutOfRange(f"page {page} of {pages}")
    start = (page - 1) * per_page
    return list(items[start:start + per_page]), pages
EOF
touch tests/__init__.py
cat > tests/test_pager.py <<'EOF'
import unittest

from listing import PageOutOfRange, paginate
from listing.pager import page_count


class PaginateTest(unittest.TestCase):
    def test_first_page(self):
        self.assertEqual(paginate(list(range(25)), 1), (list(range(10)), 3))

    def test_exact_multiple(self):
        self.assertEqual(paginate(list(range(20)), 2), (list(range(10, 20)), 2))

    def test_last_partial_page(self):
        self.assertEqual(paginate(list(range(25)), 3), ([20, 21, 22, 23, 24], 3))

    def test_empty_listing_has_one_page(self):
        self.assertEqual(paginate([], 1), ([], 1))

    def test_page_past_the_end(self):
        with self.assertRaises(PageOutOfRange):
            paginate(list(range(25)), 4)

    def test_page_zero(self):
        with self.assertRaises(PageOutOfRange):
            paginate([1, 2, 3], 0)


class PageCountTest(unittest.TestCase):
    def test_counts(self):
        self.assertEqual(page_count(0, 10), 1)
        self.assertEqual(page_count(1, 10), 1)
        self.assertEqual(page_count(10, 10), 1)
        self.assertEqual(page_count(11, 10), 2)

    def test_bad_page_size(self):
        with self.assertRaises(ValueError):
            page_count(5, 0)


if __name__ == "__main__":
    unittest.main()
EOF
