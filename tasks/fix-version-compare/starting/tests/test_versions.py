import unittest

from updater.versions import is_newer, latest, parse_version


class ParseTest(unittest.TestCase):
    def test_rejects_garbage(self):
        for bad in ["", "1.2.3.4", "one.two", "1..2"]:
            with self.subTest(bad=bad), self.assertRaises(ValueError):
                parse_version(bad)

    def test_prefix_and_padding(self):
        self.assertEqual(parse_version("v2"), parse_version("2.0.0"))


class CompareTest(unittest.TestCase):
    def test_simple(self):
        self.assertTrue(is_newer("1.2.4", "1.2.3"))
        self.assertFalse(is_newer("1.2.3", "1.2.3"))
        self.assertFalse(is_newer("1.2.2", "1.2.3"))

    def test_multi_digit_components(self):
        self.assertTrue(is_newer("1.10.0", "1.9.2"))
        self.assertFalse(is_newer("1.9.2", "1.10.0"))
        self.assertTrue(is_newer("v2.0.10", "2.0.9"))

    def test_latest(self):
        self.assertEqual(latest(["1.9.0", "1.10.1", "1.2.30"]), "1.10.1")


if __name__ == "__main__":
    unittest.main()
