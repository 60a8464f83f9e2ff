"""Exact tests when the PR's runs per task were planned from the baseline's outcomes
(gate/compare/_restricted.py), checked by brute force on small designs.

A plan rule like "3 PR runs if the baseline passed ≥ 4 of 6, else 1" makes the test
conditional on the plan: only the relabellings under which the plan comes out the same can
have been observed. Every outcome of baseline and PR is enumerated with its null probability
(both arms at the same true pass rate, the PR's run count chosen by the rule from the
baseline's passes), at several true pass rates: given the plan, the restricted tests keep
P(p ≤ a) ≤ a at every attainable a, and the plain ones break it.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterator

import numpy as np
import pytest
from scipy.stats import binom, hypergeom, multinomial

from gate.compare import _restricted, _stats
from gate.core.metrics import metric

NB = 6  # baseline runs per task in the brute-force designs
RATES = (0.3, 0.5, 0.7, 0.9)


def _rule(b: int) -> int:
    """The plan of the brute-force designs: 3 PR runs if the baseline passed ≥ 4 of 6."""
    return 3 if b >= 4 else 1


def _allowed(b: int) -> tuple[int, int]:
    """The baseline pass counts under which :func:`_rule` gives what it gave for ``b``."""
    return (4, NB) if b >= 4 else (0, 3)


def _outcomes(rate: float, tasks: int) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray,
                                                         float]]:
    """Every (b, n_c, c) of ``tasks`` planned tasks with its probability under "nothing
    changed" at true pass rate ``rate``."""
    one = [(b, _rule(b), c, binom.pmf(b, NB, rate) * binom.pmf(c, _rule(b), rate))
           for b in range(NB + 1) for c in range(_rule(b) + 1)]
    for combo in itertools.product(one, repeat=tasks):
        yield (np.array([x[0] for x in combo]), np.array([x[1] for x in combo]),
               np.array([x[2] for x in combo]), float(np.prod([x[3] for x in combo])))


def _worst_ratio(rows: list[tuple[float, float, tuple[int, ...]]]) -> tuple[float, float]:
    """max over plans and attainable a < 1 of P(p ≤ a | plan) / a, with its a; ``rows`` are
    (p, probability, plan)."""
    worst = (0.0, 1.0)
    for plan in {r[2] for r in rows}:
        sub = [(p, w) for p, w, pl in rows if pl == plan]
        total = sum(w for _, w in sub)
        for a in {p for p, _ in sub if p < 0.999}:
            ratio = sum(w for p, w in sub if p <= a * (1 + 1e-9)) / total / a
            worst = max(worst, (ratio, a))
    return worst


def _level_check(test: Callable[..., float]) -> dict[float, tuple[tuple[float, float],
                                                                    tuple[float, float]]]:
    """Per true rate: the worst (ratio, a) of the plain and of the restricted p-value."""
    out = {}
    for rate in RATES:
        plain, restricted = [], []
        for b, nc, c, w in _outcomes(rate, 2):
            nb = np.full(len(b), NB)
            allowed = np.array([_allowed(int(x)) for x in b])
            plan = tuple(nc.tolist())
            plain.append((test(b, nb, c, nc, None), w, plan))
            restricted.append((test(b, nb, c, nc, allowed), w, plan))
        out[rate] = (_worst_ratio(plain), _worst_ratio(restricted))
    return out


def test_given_the_plan_the_restricted_sum_test_keeps_its_level_and_the_plain_one_breaks_it(
) -> None:
    def p_sum(b, nb, c, nc, allowed) -> float:
        return float(_stats.sum_test(b, nb, c, nc, allowed=allowed)[0])

    found = _level_check(p_sum)
    for rate, (_, restricted) in found.items():
        assert restricted[0] <= 1 + 1e-9, (rate, restricted)
    # the plain test, given the plan "3 runs on both tasks", blocks twice as often as it says
    plain_worst = max(plain for plain, _ in found.values())
    assert plain_worst[0] > 2.0, plain_worst


def test_given_the_plan_the_restricted_max_test_keeps_its_level() -> None:
    def p_max(b, nb, c, nc, allowed) -> float:
        return float(_stats.max_test(b, nb, c, nc, allowed)[0][0])

    found = _level_check(p_max)
    for rate, (_, restricted) in found.items():
        assert restricted[0] <= 1 + 1e-9, (rate, restricted)
    assert max(plain for plain, _ in found.values())[0] > 1.5


def test_restricted_tests_equal_brute_force_over_the_allowed_relabellings() -> None:
    """Given the totals t_i and the plan, P(c) ∝ C(n_b, t − c) C(n_c, c) over lo ≤ t − c ≤ hi:
    the sum and max tests equal the sums over every such joint outcome."""
    rng = np.random.default_rng(40)
    for _ in range(120):
        n = int(rng.integers(1, 4))
        nb, nc = rng.integers(1, 7, n), rng.integers(1, 4, n)
        b = np.array([rng.integers(0, x + 1) for x in nb])
        c = np.array([rng.integers(0, x + 1) for x in nc])
        lo = np.array([rng.integers(0, x + 1) for x in b])
        hi = np.array([rng.integers(x, y + 1) for x, y in zip(b, nb, strict=True)])
        allowed = np.stack([lo, hi], axis=1)
        t = b + c
        supports = []
        for ti, nbi, nci, li, hii in zip(t, nb, nc, lo, hi, strict=True):
            xs = [x for x in range(max(0, ti - nbi), min(ti, nci) + 1) if li <= ti - x <= hii]
            ws = [hypergeom.pmf(x, nbi + nci, ti, nci) for x in xs]
            supports.append([(x, w / sum(ws)) for x, w in zip(xs, ws, strict=True)])
        joint = [(np.array([x for x, _ in cm]), float(np.prod([w for _, w in cm])))
                 for cm in itertools.product(*supports)]
        want_sum = sum(w for xs, w in joint if xs.sum() <= c.sum())
        assert _stats.sum_test(b, nb, c, nc, allowed=allowed)[0] == pytest.approx(
            want_sum, abs=1e-12)
        m = _stats.task_pvalues(b, nb, c, nc, allowed)[0].min()
        want_max = sum(w for xs, w in joint
                       if _stats.task_pvalues(t - xs, nb, xs, nc, allowed)[0].min()
                       <= m * (1 + 1e-9))
        assert _stats.max_test(b, nb, c, nc, allowed)[0][0] == pytest.approx(want_max,
                                                                              abs=1e-9)


def test_the_worked_case_a_task_planned_four_runs_from_19_of_20() -> None:
    """The issue's kind of case: a baseline that passed 19 of 20 gets 4 PR runs (the band
    ≥ 0.9, 18..20), and all four fail. Plainly p = C(5, 4)/C(24, 4); given the plan only the
    relabellings that leave the baseline part ≥ 18 passes count: c ∈ {0, 1}."""
    b, nb, c, nc = (np.array([x]) for x in (19, 20, 0, 4))
    plain = float(_stats.sum_test(b, nb, c, nc)[0])
    given = float(_stats.sum_test(b, nb, c, nc, allowed=np.array([[18, 20]]))[0])
    assert plain == pytest.approx(5 / 10626)
    w0, w1 = math.comb(19, 0) * math.comb(5, 4), math.comb(19, 1) * math.comb(5, 3)
    assert given == pytest.approx(w0 / (w0 + w1))  # 0.026: fifty times the plain value
    # at the band's floor the plan leaves no relabelling at all: nothing to detect
    at_floor = _stats.sum_test(np.array([18]), nb, c, nc, allowed=np.array([[18, 20]]))[0]
    assert at_floor == 1.0


def test_a_range_that_restricts_nothing_gives_todays_pvalues_bit_for_bit() -> None:
    rng = np.random.default_rng(41)
    for _ in range(60):
        n = int(rng.integers(1, 8))
        nb, nc = rng.integers(1, 25, n), rng.integers(1, 6, n)
        b = np.array([rng.integers(0, x + 1) for x in nb])
        c = rng.integers(0, 6, (5, n)) % (nc + 1)
        full = np.stack([np.zeros(n, dtype=np.int64), nb], axis=1)
        assert np.array_equal(_stats.sum_test(b, nb, c, nc, allowed=full),
                              _stats.sum_test(b, nb, c, nc))
        assert np.array_equal(_stats.max_test(b, nb, c, nc, full)[0],
                              _stats.max_test(b, nb, c, nc)[0])
        assert np.array_equal(_stats.task_pvalues(b, nb, c, nc, full),
                              _stats.task_pvalues(b, nb, c, nc))
        assert _stats.collapse_p(b, nb, nc, True, full) == _stats.collapse_p(b, nb, nc, True)
    b, nb, nc = np.array([18, 9, 20]), np.array([20, 20, 20]), np.array([4, 3, 4])
    full = np.stack([np.zeros(3, dtype=np.int64), nb], axis=1)
    assert (_stats.detectable_drop(b, nb, nc, 0.05, sims=100, allowed=full)
            == _stats.detectable_drop(b, nb, nc, 0.05, sims=100))


def test_a_range_outside_the_observed_baseline_is_refused() -> None:
    b, nb, c, nc = (np.array([x]) for x in (3, 6, 0, 1))
    with pytest.raises(ValueError, match=r"outside the plan's range 4\.\.6"):
        _stats.sum_test(b, nb, c, nc, allowed=np.array([[4, 6]]))


# ----- power: what conditioning costs ---------------------------------------------------------

def test_power_given_the_plan_is_at_most_the_plain_power_on_high_band_tasks() -> None:
    """Tasks in the top band (the rule's most runs): the plan rules out the relabellings
    that move passes into the PR, so the restricted p-value is never smaller and its power
    (against a uniform drop, through the verdict's rule) never larger."""
    b = np.array([20, 19, 18, 20, 19, 20, 18, 19])
    nb, nc = np.full(8, 20), np.full(8, 4)
    allowed = np.tile([18, 20], (8, 1))
    rng = np.random.default_rng(42)
    for drop in (0.2, 0.4, 0.6):
        c = rng.binomial(4, np.clip(b / nb - drop, 0, 1), (400, 8))
        p_plain = _stats.sum_test(b, nb, c, nc)
        p_given = _stats.sum_test(b, nb, c, nc, allowed=allowed)
        assert np.all(p_given >= p_plain * (1 - 1e-12))
        assert (_stats.pass_rate_decide(b, nb, c, nc, 0.05, True, allowed).mean()
                <= _stats.pass_rate_decide(b, nb, c, nc, 0.05, True).mean())
    plain = _stats.detectable_drop(b, nb, nc, 0.05, sims=200)
    given = _stats.detectable_drop(b, nb, nc, 0.05, sims=200, allowed=allowed)
    assert plain is not None and (given is None or given >= plain)


def test_in_a_bottom_band_the_plan_can_add_power() -> None:
    """Not a theorem the other way: a task near the top of a bottom band (9 of 20, the band
    0..9) cannot have had more than 9 passes in its baseline part, which cuts the *lower*
    tail of its row, and the test given the plan is the stronger one (still exact)."""
    b = np.array([9, 8, 5, 9, 7, 6, 9, 8])
    nb, nc = np.full(8, 20), np.full(8, 3)
    allowed = np.tile([0, 9], (8, 1))
    c = np.random.default_rng(43).binomial(3, np.clip(b / nb - 0.2, 0, 1), (1000, 8))
    assert (_stats.pass_rate_decide(b, nb, c, nc, 0.05, True, allowed).mean()
            > _stats.pass_rate_decide(b, nb, c, nc, 0.05, True).mean() + 0.2)


def test_the_collapse_is_the_most_extreme_outcome_given_the_plan() -> None:
    """The resolution's pass-rate floor (``collapse_p``: every PR run failing) is the smallest
    deciding p any PR outcome reaches, given the plan too (every outcome enumerated)."""
    rng = np.random.default_rng(44)
    for _ in range(150):
        n = int(rng.integers(1, 4))
        nb, nc = rng.integers(2, 9, n), rng.integers(1, 5, n)
        b = np.array([rng.integers(0, x + 1) for x in nb])
        lo = np.array([rng.integers(0, x + 1) for x in b])
        hi = np.array([rng.integers(x, y + 1) for x, y in zip(b, nb, strict=True)])
        allowed = np.stack([lo, hi], axis=1)
        every = np.array(list(itertools.product(*[range(x + 1) for x in nc])))
        for deep in (False, True):
            p = _stats.sum_test(b, nb, every, nc, allowed=allowed)
            if deep:
                p = np.minimum(p, _stats.max_test(b, nb, every, nc, allowed)[0])
            assert p.min() >= _stats.collapse_p(b, nb, nc, deep, allowed) * (1 - 1e-9)


# ----- permutation tests (turns, cost, cache hits, duration) ----------------------------------

COST = _stats.layout([metric("cost")])
#: a run's (passed, cost) and its probability given passed: failing runs cost more
_COST_GIVEN = {True: {1.0: 0.95, 3.0: 0.05}, False: {1.0: 0.05, 3.0: 0.95}}
_KINDS = [(True, 1.0), (True, 3.0), (False, 1.0), (False, 3.0)]
PB = 3  # the planned task's baseline runs: 2 PR runs if it passed 3 of 3, else 1


def _arms(n: int, rate: float) -> Iterator[tuple[tuple[int, ...], float]]:
    """Every multiset of ``n`` runs (counts of each kind) with its probability."""
    probs = [(rate if ok else 1 - rate) * _COST_GIVEN[ok][cost] for ok, cost in _KINDS]
    for counts in itertools.product(range(n + 1), repeat=len(_KINDS)):
        if sum(counts) == n:
            yield counts, float(multinomial.pmf(counts, n, probs))


def _rows(counts: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
    kinds = [k for k, n in zip(_KINDS, counts, strict=True) for _ in range(n)]
    return (np.array([[cost] for _, cost in kinds], dtype=float),
            np.array([ok for ok, _ in kinds], dtype=bool))


def _perm_p(planned: tuple[tuple[int, ...], tuple[int, ...]], other: tuple[np.ndarray,
                                                                            np.ndarray],
            given: bool) -> float:
    (bv, bp), (cv, cp) = _rows(planned[0]), _rows(planned[1])
    b = int(bp.sum())
    first = _stats.TaskSamples(bv, cv, allowed=((PB, PB) if b == PB else (0, PB - 1)) if given
                               else None, baseline_passed=bp, candidate_passed=cp)
    res = _stats.permutation_tests([first, _stats.TaskSamples(*other)], permutations=999,
                                   seed=0, lay=COST)["cost"]
    assert res is not None
    return res.p_aggregate


def test_given_the_plan_the_restricted_permutation_test_keeps_its_level() -> None:
    """A mixed design: one task planned from its 3 baseline runs (2 PR runs if all 3 passed,
    else 1), failing runs costing more; one task unplanned, 2 v 1 runs of cost 1 or 2. Every
    outcome enumerated (runs as multisets per arm): given the plan, the exact restricted
    permutation test keeps its level; the plain one, counting relabellings the plan rules
    out, does not (the plan put the passing, cheap runs in the baseline)."""
    other = [((np.array([[x], [y]]), np.array([[z]])), 0.25 * 0.25 * 0.5)
             for x in (1.0, 2.0) for y in (1.0, 2.0) for z in (1.0, 2.0)]
    worst_plain, worst_given = (0.0, 1.0), (0.0, 1.0)
    for rate in (0.5, 0.8):
        plain, given = [], []
        for base, wb in _arms(PB, rate):
            b = base[0] + base[1]
            nc = 2 if b == PB else 1
            for cand, wc in _arms(nc, rate):
                for arms, wo in other:
                    w = wb * wc * wo
                    plain.append((_perm_p((base, cand), arms, False), w, (nc,)))
                    given.append((_perm_p((base, cand), arms, True), w, (nc,)))
        worst_plain = max(worst_plain, _worst_ratio(plain))
        worst_given = max(worst_given, _worst_ratio(given))
    assert worst_given[0] <= 1 + 1e-9, worst_given
    assert worst_plain[0] > 2.0, worst_plain  # at a = 0.1: p ≤ 0.1 in 22 % of outcomes


def test_sampled_relabellings_are_uniform_over_the_allowed_ones() -> None:
    passed = np.array([True, True, True, False, True, False, False])  # 4 + 3 runs
    lo, hi = 2, 4
    draws = _restricted.draw_candidates(np.random.default_rng(5), passed, 3, lo, hi, 60_000)
    allowed = [s for s in itertools.combinations(range(7), 3)
               if lo <= int(passed.sum()) - int(passed[list(s)].sum()) <= hi]
    assert len(allowed) == _restricted.labelling_count(4, 3, int(passed.sum()), lo, hi)
    seen: dict[tuple[int, ...], int] = {}
    for row in map(tuple, draws.tolist()):
        seen[row] = seen.get(row, 0) + 1
    assert set(seen) == set(allowed)
    expected = len(draws) / len(allowed)
    assert max(abs(n - expected) for n in seen.values()) < 5 * math.sqrt(expected)


def test_sampled_restricted_pvalue_agrees_with_the_exact_one() -> None:
    rng = np.random.default_rng(6)
    tasks = []
    for _ in range(3):
        bp = rng.random(8) < 0.8
        cp = rng.random(4) < 0.5
        tasks.append(_stats.TaskSamples(
            rng.gamma(4, 1, (8, 1)) + np.where(bp, 0, 2)[:, None],
            rng.gamma(4, 1, (4, 1)) + np.where(cp, 0, 2)[:, None] + 1,
            allowed=(int(bp.sum()), 8), baseline_passed=bp, candidate_passed=cp))
    shapes = [(8, 4)] * 3
    count = math.prod(_restricted.labelling_count(8, 4, int(t.baseline_passed.sum()
                                                            + t.candidate_passed.sum()),
                                                  *t.allowed) for t in tasks)
    assert count < _stats.labellings(shapes)  # the plan rules some out
    exact = _stats.permutation_tests(tasks, permutations=count, seed=0, lay=COST)["cost"]
    sampled = _stats.permutation_tests(tasks, permutations=9_999, seed=1, lay=COST)["cost"]
    assert exact is not None and sampled is not None
    assert sampled.p_aggregate == pytest.approx(exact.p_aggregate, abs=0.015)


def test_a_permutation_range_that_restricts_nothing_gives_todays_pvalues_exactly() -> None:
    rng = np.random.default_rng(7)
    plain, full = [], []
    for nb, nc in [(6, 3), (20, 4), (3, 3)]:
        bp, cp = rng.random(nb) < 0.6, rng.random(nc) < 0.6
        bv, cv = rng.gamma(3, 1, (nb, 1)), rng.gamma(3, 1, (nc, 1))
        plain.append(_stats.TaskSamples(bv, cv))
        full.append(_stats.TaskSamples(bv, cv, allowed=(0, nb), baseline_passed=bp,
                                       candidate_passed=cp))
    for r in (99, 9999):
        assert (_stats.permutation_tests(full, permutations=r, seed=3, lay=COST)
                == _stats.permutation_tests(plain, permutations=r, seed=3, lay=COST))


def test_the_normal_fallback_uses_the_restricted_moments() -> None:
    """Past the exact budget (very large suites, the power search only) the sum test is a
    normal approximation: given the plan, with the restricted rows' mean and variance."""
    rng = np.random.default_rng(45)
    nb, nc = np.full(60, 20), rng.integers(1, 5, 60)
    b = rng.binomial(20, rng.uniform(0.4, 1.0, 60))
    allowed = np.stack([np.where(b >= 18, 18, np.where(b >= 10, 10, 0)),
                        np.where(b >= 18, 20, np.where(b >= 10, 17, 9))], axis=1)
    c = rng.binomial(nc, np.clip(b / nb - 0.15, 0, 1), (20, 60))
    exact = _stats.sum_test(b, nb, c, nc, allowed=allowed)
    approx = _stats.sum_test(b, nb, c, nc, allowed=allowed, exact_budget=0)
    plain = _stats.sum_test(b, nb, c, nc, exact_budget=0)
    assert np.max(np.abs(approx - exact)) < 0.02
    # the plain moments approximate another test: farther off
    assert np.mean(np.abs(approx - exact)) < np.mean(np.abs(plain - exact)) / 2
