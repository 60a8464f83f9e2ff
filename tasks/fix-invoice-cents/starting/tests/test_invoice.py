import unittest

from billing.invoice import Invoice


class InvoiceTest(unittest.TestCase):
    def test_total(self):
        inv = Invoice("A-1").add("Coffee", "19.99", 3).add("Sticker", "0.29")
        self.assertEqual(inv.total_cents, 6026)

    def test_render(self):
        inv = Invoice("A-2").add("Pen", "0.75", 2)
        self.assertEqual(inv.render(), "Invoice A-2\n  2 x Pen: $1.50\nTOTAL $1.50")
