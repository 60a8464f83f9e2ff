import unittest

from textkit import slugify, truncate


class SlugifyTest(unittest.TestCase):
    def test_simple_word(self):
        self.assertEqual(slugify("Python"), "python")

    def test_spaces_become_dashes(self):
        self.assertEqual(slugify("release notes 2024"), "release-notes-2024")

    def test_accents_are_folded(self):
        self.assertEqual(slugify("Crème Brûlée"), "creme-brulee")

    def test_custom_separator(self):
        self.assertEqual(slugify("a b c", sep="_"), "a_b_c")

    def test_no_leading_or_trailing_separator(self):
        self.assertEqual(slugify("  Hello, World!  "), "hello-world")
        self.assertEqual(slugify("--draft--"), "draft")


class TruncateTest(unittest.TestCase):
    def test_short_text_untouched(self):
        self.assertEqual(truncate("hi", 10), "hi")

    def test_long_text_cut(self):
        self.assertEqual(truncate("hello wonderful world", 8), "hello...")


if __name__ == "__main__":
    unittest.main()
