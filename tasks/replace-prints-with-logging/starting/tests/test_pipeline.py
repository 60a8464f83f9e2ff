import unittest

from etl.cli import run
from etl.transform import clean, totals

SAMPLE = """region,amount
North,10.50
south,2.25
North,1.00
,5.00
East,n/a
"""


class PipelineTest(unittest.TestCase):
    def test_clean_skips_invalid(self):
        rows = [{"region": "A", "amount": "1.5"}, {"region": "", "amount": "2"},
                {"region": "B", "amount": "x"}]
        self.assertEqual(clean(rows), [("a", 150)])

    def test_totals(self):
        self.assertEqual(totals([("b", 1), ("a", 2), ("b", 3)]), {"a": 2, "b": 4})

    def test_run(self):
        self.assertEqual(run(SAMPLE), "region,total\nnorth,11.50\nsouth,2.25\n")
