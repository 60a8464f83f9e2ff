#!/usr/bin/env bash
# Creates statkit with percentile() implemented but not exported.
set -euo pipefail
mkdir -p statkit tests
cat > statkit/__init__.py <<'EOF'
"""statkit: small, dependency-free statistics helpers."""

from statkit.central import mean, median
from statkit.spread import stdev, variance

__all__ = ["mean", "median", "stdev", "variance"]
__version__ = "0.3.0"
EOF
cat > statkit/central.py <<'EOF'
"""Measures of central tendency."""

from __future__ import annotations

from collections.abc import Sequence


def mean(values: Sequence[float]) -> float:
    if not values:
        raise ValueError("mean of no values")
    return sum(values) / len(values)


def median(values: Sequence[float]) -> float:
    if not values:
        raise ValueError("median of no values")
    s = sorted(values)
    mid = len(s) // 2
    return s[mid] if len(s) % 2 else (s[mid - 1] + s[mid]) / 2
EOF
cat > statkit/spread.py <<'EOF'
"""Measures of spread."""

from __future__ import annotations

import math
from collections.abc import Sequence

from statkit.central import mean


def variance(values: Sequence[float]) -> float:
    """Sample variance (n - 1 in the denominator)."""
    if len(values) < 2:
        raise ValueError("variance needs at least two values")
    m = mean(values)
    return sum((v - m) ** 2 for v in values) / (len(values) - 1)


def stdev(values: Sequence[float]) -> float:
    return math.sqrt(variance(values))


def percentile(values: Sequence[float], p: float) -> float:
    """The ``p``-th percentile (0..100), linear interpolation between closest ranks."""
    if not values:
        raise ValueError("percentile of no values")
    if not 0 <= p <= 100:
        raise ValueError("p must be between 0 and 100")
    s = sorted(values)
    k = (len(s) - 1) * p / 100
    lo, hi = math.floor(k), math.ceil(k)
    return s[lo] + (s[hi] - s[lo]) * (k - lo)
EOF
cat > CHANGELOG.md <<'EOF'
# Changelog

## 0.3.0
- `stdev` and `variance`.

## 0.2.0
- `median`.
EOF
touch tests/__init__.py
cat > tests/test_stats.py <<'EOF'
import unittest

from statkit.central import mean, median
from statkit.spread import percentile, stdev, variance


class StatsTest(unittest.TestCase):
    def test_mean_median(self):
        self.assertEqual(mean([1, 2, 3, 4]), 2.5)
        self.assertEqual(median([5, 1, 3]), 3)
        self.assertEqual(median([4, 1, 3, 2]), 2.5)

    def test_spread(self):
        self.assertEqual(variance([2, 4, 4, 4, 5, 5, 7, 9]), 32 / 7)
        self.assertAlmostEqual(stdev([1, 2, 3, 4]), 1.2909944, places=6)

    def test_percentile(self):
        data = [15, 20, 35, 40, 50]
        self.assertEqual(percentile(data, 0), 15)
        self.assertEqual(percentile(data, 50), 35)
        self.assertEqual(percentile(data, 100), 50)
        self.assertEqual(percentile(data, 25), 20)
        with self.assertRaises(ValueError):
            percentile(data, 101)
EOF
cat > tests/test_api.py <<'EOF'
import unittest

import statkit


class PublicApiTest(unittest.TestCase):
    def test_percentile_is_public(self):
        from statkit import percentile

        self.assertEqual(percentile([1, 2, 3], 50), 2)
        self.assertIn("percentile", statkit.__all__)
EOF
