"""A plan that reads only some of the baseline's runs (gate/compare/_restricted.py, ``of``),
checked by brute force on small designs.

A rule like "3 PR runs if the first 3 of the baseline's 6 runs passed ≥ 2, else 1" conditions
the test only on those runs' pass count. Given the plan, a relabelling counts with the number
of ways its baseline part puts a count in the range on those runs, W(b′) = Σ_k C(of, k)
C(n_b − of, b′ − k). Every outcome is enumerated with its null probability: the weighted tests
keep P(p ≤ a | plan) ≤ a; conditioning on the whole baseline's count instead (the wrong range)
and the plain test do not. The benchmark that measured such a rule against the shipped one
is bench/bench_plan_subset.py (docs/statistics.md §5a).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable

import numpy as np
import pytest
from scipy.stats import binom

from gate.compare import _restricted, _stats

NB, OF = 6, 3  # the baseline's runs per task; the plan reads its first OF
RATES = (0.3, 0.5, 0.7, 0.9)


def _rule(k: int) -> int:
    return 3 if k >= 2 else 1


def _range(k: int) -> tuple[int, int, int]:
    """(lo, hi, of): the counts on the first OF runs under which the rule gives the same."""
    return (2, OF, OF) if k >= 2 else (0, 1, OF)


def _worst(rows: list[tuple[float, float, tuple[int, ...]]]) -> float:
    """max over plans and attainable a < 1 of P(p ≤ a | plan) / a; rows: (p, weight, plan)."""
    worst = 0.0
    for plan in {r[2] for r in rows}:
        sub = [(p, w) for p, w, pl in rows if pl == plan]
        total = sum(w for _, w in sub)
        for a in {p for p, _ in sub if p < 0.999}:
            worst = max(worst, sum(w for p, w in sub if p <= a * (1 + 1e-9)) / total / a)
    return worst


def _level(test: Callable[[np.ndarray, np.ndarray, np.ndarray, np.ndarray, object], float],
           ranges: Callable[[int, int], object]) -> float:
    """The worst ratio over true rates, two tasks, every (k_S, k_rest, c) of each."""
    worst = 0.0
    for rate in RATES:
        one = [(k, r, c, binom.pmf(k, OF, rate) * binom.pmf(r, NB - OF, rate)
                * binom.pmf(c, _rule(k), rate))
               for k in range(OF + 1) for r in range(NB - OF + 1) for c in range(_rule(k) + 1)]
        rows = []
        for combo in itertools.product(one, repeat=2):
            b = np.array([k + r for k, r, _, _ in combo])
            nc = np.array([_rule(k) for k, _, _, _ in combo])
            c = np.array([x[2] for x in combo])
            given = [ranges(k, int(k + r)) for k, r, _, _ in combo]
            allowed = None if None in given else np.array(given)
            rows.append((test(b, np.full(2, NB), c, nc, allowed),
                         float(np.prod([x[3] for x in combo])), tuple(nc.tolist())))
        worst = max(worst, _worst(rows))
    return worst


def _p_sum(b, nb, c, nc, allowed) -> float:  # type: ignore[no-untyped-def]
    return float(_stats.sum_test(b, nb, c, nc, allowed=allowed)[0])


def _p_max(b, nb, c, nc, allowed) -> float:  # type: ignore[no-untyped-def]
    return float(_stats.max_test(b, nb, c, nc, allowed)[0][0])


@pytest.mark.parametrize("test", [_p_sum, _p_max])
def test_a_range_on_the_runs_the_plan_read_keeps_the_level(test) -> None:  # type: ignore[no-untyped-def]
    assert _level(test, lambda k, b: _range(k)) <= 1 + 1e-9
    # conditioning on nothing is anti-conservative under this plan
    assert _level(test, lambda k, b: None) > 1.1


def test_a_range_on_the_whole_baseline_is_the_wrong_condition_for_such_a_plan() -> None:
    """Reading the first 3 runs' band as if it were the whole baseline's (every count the
    plan's band could give, 2..6 or 0..4) is not the condition the plan imposed."""
    wrong = _level(_p_sum, lambda k, b: (2, NB) if k >= 2 else (0, NB - OF + 1))
    assert wrong > 1.05


def test_the_weighted_rows_equal_brute_force_over_labellings() -> None:
    for nb, of, nc, lo, hi in [(6, 3, 3, 2, 3), (7, 4, 2, 0, 1), (5, 2, 4, 1, 1), (8, 4, 3, 3, 4),
                               (9, 5, 1, 0, 4)]:
        pmf, cdf = _restricted.restricted_tables(nb, nc, lo, hi, of)
        for t in range(nb + nc + 1):
            count = np.zeros(nc + 1)
            for v in itertools.product((0, 1), repeat=nb + nc):
                if sum(v) == t and lo <= sum(v[:of]) <= hi:
                    count[sum(v[nb:])] += 1
            want = count / count.sum() if count.sum() else count
            assert pmf[t] == pytest.approx(want, abs=1e-12), (nb, of, nc, lo, hi, t)
            assert cdf[t, -1] == 1.0


def test_a_range_on_every_run_is_the_whole_baseline_range_bit_for_bit() -> None:
    rng = np.random.default_rng(42)
    for _ in range(40):
        n = int(rng.integers(1, 6))
        nb, nc = rng.integers(2, 12, n), rng.integers(1, 5, n)
        b = np.array([rng.integers(0, x + 1) for x in nb])
        c = rng.integers(0, 5, (4, n)) % (nc + 1)
        lo = np.array([rng.integers(0, x + 1) for x in b])
        hi = np.array([rng.integers(x, y + 1) for x, y in zip(b, nb, strict=True)])
        two = np.stack([lo, hi], axis=1)
        three = np.stack([lo, hi, nb + rng.integers(0, 3, n)], axis=1)  # of ≥ n_b: the whole
        assert np.array_equal(_stats.sum_test(b, nb, c, nc, allowed=two),
                              _stats.sum_test(b, nb, c, nc, allowed=three))
        assert np.array_equal(_stats.max_test(b, nb, c, nc, two)[0],
                              _stats.max_test(b, nb, c, nc, three)[0])


def test_a_subset_range_the_baseline_could_not_have_given_is_refused() -> None:
    # 1 pass in all cannot put 2 in the first 3 runs
    b, nb, c, nc = (np.array([x]) for x in (1, 6, 0, 3))
    with pytest.raises(ValueError, match=r"outside the plan's range 2\.\.3 on 3 of its 6 runs"):
        _stats.sum_test(b, nb, c, nc, allowed=np.array([[2, 3, 3]]))
    # 5 passes in all put at least 2 in the first 3: every count there from 2 is possible
    assert _stats.sum_test(np.array([5]), nb, c, nc, allowed=np.array([[2, 3, 3]]))[0] < 1


def test_the_worked_case_subset_against_whole_band() -> None:
    """An easy task at 19 of 20, planned from its first 10 (10 of 10: the band 9..10), fails
    0 of 7: given the plan p = W(19) / Σ_c C(7, c) W(19 − c)."""
    b, nb, c, nc = (np.array([x]) for x in (19, 20, 0, 7))
    w = _restricted.subset_weights(20, 10, 9, 10)
    from math import comb

    want = w[19] / sum(comb(7, k) * w[19 - k] for k in range(8))
    got = float(_stats.sum_test(b, nb, c, nc, allowed=np.array([[9, 10, 10]]))[0])
    assert got == pytest.approx(want, rel=1e-12)
    plain = float(_stats.sum_test(b, nb, c, nc)[0])
    assert plain < got < 0.01
