import unittest

from billing.money import format_cents, to_cents


class ToCentsTest(unittest.TestCase):
    def test_plain(self):
        self.assertEqual(to_cents("12.00"), 1200)
        self.assertEqual(to_cents("$1,234.50"), 123450)
        self.assertEqual(to_cents("7"), 700)

    def test_no_float_truncation(self):
        for text, cents in [("0.29", 29), ("19.99", 1999), ("4.35", 435), ("0.57", 57)]:
            with self.subTest(text=text):
                self.assertEqual(to_cents(text), cents)

    def test_empty(self):
        with self.assertRaises(ValueError):
            to_cents("  ")


class FormatTest(unittest.TestCase):
    def test_format(self):
        self.assertEqual(format_cents(1999), "$19.99")
        self.assertEqual(format_cents(5), "$0.05")
        self.assertEqual(format_cents(-100), "-$1.00")
