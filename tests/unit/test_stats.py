"""The statistics of the verdict against brute force and textbook answers."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy.stats import binomtest, fisher_exact, hypergeom

from gate.compare import _stats
from gate.core.metrics import metric

#: the three usage metrics' columns (gate/core/metrics.py): turns, cost, cache read / prompt
LAY = _stats.layout([metric("turns"), metric("cost"), metric("cache_hit_rate")])


def _random_case(rng: np.random.Generator, max_n: int = 4, max_nb: int = 5, max_nc: int = 3):
    n = int(rng.integers(1, max_n + 1))
    nb = rng.integers(1, max_nb + 1, n)
    nc = rng.integers(1, max_nc + 1, n)
    b = np.array([rng.integers(0, x + 1) for x in nb])
    c = np.array([rng.integers(0, x + 1) for x in nc])
    return b, nb, c, nc


def _null_outcomes(b, nb, c, nc):
    """Every joint candidate outcome given the margins, with its null probability."""
    supports = []
    for bi, nbi, ci, nci in zip(b, nb, c, nc, strict=True):
        t, m = bi + ci, nbi + nci
        xs = range(max(0, t - nbi), min(t, nci) + 1)
        supports.append([(x, hypergeom.pmf(x, m, t, nci)) for x in xs])
    for combo in itertools.product(*supports):
        yield np.array([x for x, _ in combo]), float(np.prod([p for _, p in combo]))


def test_sum_test_equals_brute_force_enumeration() -> None:
    rng = np.random.default_rng(1)
    for _ in range(150):
        b, nb, c, nc = _random_case(rng)
        expected = sum(p for xs, p in _null_outcomes(b, nb, c, nc) if xs.sum() <= c.sum())
        assert _stats.sum_test(b, nb, c, nc)[0] == pytest.approx(expected, abs=1e-12)


def test_max_test_equals_brute_force_enumeration() -> None:
    rng = np.random.default_rng(2)
    for _ in range(150):
        b, nb, c, nc = _random_case(rng)
        m = _stats.task_pvalues(b, nb, c, nc)[0].min()
        expected = 0.0
        t = b + c  # the margins stay fixed: a null outcome x moves passes between the arms
        for xs, p in _null_outcomes(b, nb, c, nc):
            if _stats.task_pvalues(t - xs, nb, xs, nc)[0].min() <= m * (1 + 1e-9):
                expected += p
        p_max, _ = _stats.max_test(b, nb, c, nc)
        assert p_max[0] == pytest.approx(expected, abs=1e-9)


def test_task_pvalue_is_one_sided_fisher() -> None:
    b, nb, c, nc = np.array([9]), np.array([10]), np.array([1]), np.array([5])
    p = _stats.task_pvalues(b, nb, c, nc)[0, 0]
    ref = fisher_exact([[1, 4], [9, 1]], alternative="less").pvalue
    assert p == pytest.approx(ref)


def test_sum_test_with_one_run_per_arm_is_mcnemar_exact() -> None:
    rng = np.random.default_rng(3)
    ones = np.ones(15, dtype=np.int64)
    for _ in range(100):
        b = rng.integers(0, 2, 15)
        c = rng.integers(0, 2, 15)
        discordant = b != c
        n, k = int(discordant.sum()), int((c[discordant] == 1).sum())
        ref = binomtest(k, n, 0.5, alternative="less").pvalue if n else 1.0
        assert _stats.sum_test(b, ones, c, ones)[0] == pytest.approx(ref, abs=1e-12)


def test_batch_rows_equal_single_calls() -> None:
    rng = np.random.default_rng(4)
    nb = np.array([3, 20, 5, 5])
    nc = np.array([3, 5, 5, 2])
    b = np.array([2, 17, 4, 1])
    c = np.stack([[rng.integers(0, x + 1) for x in nc] for _ in range(20)])
    batch_sum = _stats.sum_test(b, nb, c, nc)
    batch_max, _ = _stats.max_test(b, nb, c, nc)
    for row, ps, pm in zip(c, batch_sum, batch_max, strict=True):
        assert _stats.sum_test(b, nb, row, nc)[0] == pytest.approx(ps)
        assert _stats.max_test(b, nb, row, nc)[0][0] == pytest.approx(pm)


def test_normal_fallback_is_close_to_exact() -> None:
    rng = np.random.default_rng(5)
    n = 60
    nb, nc = np.full(n, 10), np.full(n, 5)
    b = rng.integers(3, 10, n)
    c = np.stack([rng.binomial(5, b / 10) - (rng.random(n) < 0.2) for _ in range(5)]).clip(0)
    exact = _stats.sum_test(b, nb, c, nc)
    approx = _stats.sum_test(b, nb, c, nc, exact_budget=0)
    assert np.allclose(exact, approx, atol=0.02)


def test_decision_rule_uses_max_test_only_with_a_deep_baseline() -> None:
    assert not _stats.is_deep(np.array([3, 3, 20]))
    assert _stats.is_deep(np.array([20, 20, 5]))
    one = np.array([0.004])
    big = np.array([0.5])
    assert _stats.pass_rate_blocks(big, one, 0.01, deep=True)[0]
    assert not _stats.pass_rate_blocks(big, one, 0.01, deep=False)[0]
    assert _stats.pass_rate_blocks(np.array([0.009]), big, 0.01, deep=False)[0]
    assert not _stats.pass_rate_blocks(np.array([0.009]), big, 0.01, deep=True)[0]


def test_ci_covers_and_behaves_at_the_edges() -> None:
    n = 15
    same = np.full(n, 3)
    d, lo, hi = _stats.pass_rate_ci(same, same, same, same)
    assert d == 0 and lo < 0 < hi  # 100 % vs 100 %: still an interval, not a point
    d, lo, hi = _stats.pass_rate_ci(np.full(n, 3), same, np.zeros(n, int), same)
    assert d == -1 and lo >= -1 and hi < -0.5
    # coverage by simulation, 95 % nominal
    rng = np.random.default_rng(6)
    p = np.array([0.95] * 6 + [0.7] * 6 + [0.35] * 3)
    q = np.clip(p - 0.1, 0, 1)
    k = np.full(n, 5)
    hits = 0
    for _ in range(400):
        _, lo, hi = _stats.pass_rate_ci(rng.binomial(5, p), k, rng.binomial(5, q), k)
        hits += lo <= -0.1 <= hi
    assert hits / 400 >= 0.93


def test_fisher_infra() -> None:
    assert _stats.infra_pvalue(0, 100, 10, 50) < 0.01
    assert _stats.infra_pvalue(5, 100, 3, 50) > 0.3
    assert _stats.infra_pvalue(0, 0, 3, 50) == 1.0


def _samples(rng: np.random.Generator, n: int, scale: float = 1.0) -> np.ndarray:
    turns = rng.poisson(8, n).astype(float) * scale
    cost = rng.gamma(4, 0.01, n) * scale
    prompt = rng.integers(1000, 5000, n).astype(float)
    return np.stack([turns, cost, prompt * 0.8, prompt], axis=1)


def test_permutation_detects_a_cost_shift_and_not_noise() -> None:
    rng = np.random.default_rng(7)
    same = [_stats.TaskSamples(_samples(rng, 20), _samples(rng, 5)) for _ in range(15)]
    up = [_stats.TaskSamples(_samples(rng, 20), _samples(rng, 5, 1.5)) for _ in range(15)]
    r_same = _stats.permutation_tests(same, permutations=999, seed=0, lay=LAY)
    r_up = _stats.permutation_tests(up, permutations=999, seed=0, lay=LAY)
    assert r_same["cost"] is not None and r_up["cost"] is not None
    assert min(r_same["cost"].p_aggregate, r_same["cost"].p_equal_weight) > 0.005
    assert r_up["cost"].p_aggregate <= 0.002 and r_up["cost"].aggregate > 1.3


def test_permutation_is_seeded_and_reproducible() -> None:
    rng = np.random.default_rng(8)
    tasks = [_stats.TaskSamples(_samples(rng, 4), _samples(rng, 3)) for _ in range(5)]
    a = _stats.permutation_tests(tasks, permutations=199, seed=42, lay=LAY)
    b = _stats.permutation_tests(tasks, permutations=199, seed=42, lay=LAY)
    assert a == b


def test_permutation_pvalues_are_calibrated_under_the_null() -> None:
    rng = np.random.default_rng(9)
    ps = []
    for _ in range(200):
        tasks = [_stats.TaskSamples(_samples(rng, 3), _samples(rng, 3)) for _ in range(6)]
        res = _stats.permutation_tests(tasks, permutations=199,
                                       seed=int(rng.integers(1 << 30)), lay=LAY)
        assert res["turns"] is not None
        ps.append(res["turns"].p_aggregate)
    assert np.mean(np.array(ps) <= 0.1) <= 0.16  # ~0.10 nominal


def _naive_permutation_tests(tasks: list[_stats.TaskSamples], permutations: int,
                             seed: int) -> dict[str, tuple[float, ...] | None]:
    """permutation_tests spelled out one task and one relabelling at a time: the same seeded
    subsets (one stream per (n_b, n_c) group, ``random_subsets``), the statistics of its
    docstring, the observed labelling counted among the relabellings."""
    groups: dict[tuple[int, int], list[int]] = {}
    for i, t in enumerate(tasks):
        groups.setdefault((len(t.baseline), len(t.candidate)), []).append(i)
    means = np.zeros((permutations + 1, len(tasks), 2, 4))  # (labelling, task, arm, column)
    for (nb, nc), idx in groups.items():
        m, pick_c = nb + nc, nc <= nb
        subsets = _stats.random_subsets(np.random.default_rng((seed, nb, nc, 0)),
                                        (len(idx), permutations), m, nc if pick_c else nb)
        for g, i in enumerate(idx):
            vals = np.concatenate([tasks[i].baseline, tasks[i].candidate])
            labellings = [list(range(nb, m)) if pick_c else list(range(nb))]
            labellings += [sorted(r) for r in subsets[g].tolist()]
            for r, picked in enumerate(labellings):
                cand = picked if pick_c else [j for j in range(m) if j not in picked]
                base = [j for j in range(m) if j not in cand]
                means[r, i, 0], means[r, i, 1] = vals[base].mean(0), vals[cand].mean(0)
    overall = np.concatenate([np.concatenate([t.baseline, t.candidate]) for t in tasks])
    delta = np.maximum(1e-12, 0.01 * overall.mean(axis=0))
    b, c = means[:, :, 0], means[:, :, 1]

    def p(stat: np.ndarray, up: bool) -> float:
        tol = 1e-9 * max(1.0, abs(stat[0]))
        rest = stat[1:]
        return (1 + int(np.sum(rest >= stat[0] - tol if up else rest <= stat[0] + tol))) / (
            permutations + 1)

    out: dict[str, tuple[float, ...] | None] = {}
    for name, col in (("turns", 0), ("cost", 1)):
        agg = c[:, :, col].sum(1) / b[:, :, col].sum(1)
        eq = np.log((c[:, :, col] + delta[col]) / (b[:, :, col] + delta[col])).mean(1)
        out[name] = (agg[0], eq[0], p(agg, True), p(eq, True))
    agg = c[:, :, 2].sum(1) / c[:, :, 3].sum(1) - b[:, :, 2].sum(1) / b[:, :, 3].sum(1)
    diff = c[:, :, 2] / c[:, :, 3] - b[:, :, 2] / b[:, :, 3]
    eq = diff.mean(1)
    out["cache_hit_rate"] = (agg[0], eq[0], p(agg, False), p(eq, False))
    return out


def test_permutation_tests_equal_their_naive_definition() -> None:
    """The vectorised gather (column by column, reduced per chunk) computes exactly the
    statistics and p-values of the relabellings it draws, for candidate-side and
    baseline-side picks and both subset samplers (k ≤ 8 and k > 8)."""
    rng = np.random.default_rng(12)
    shapes = [(20, 3), (3, 5), (12, 10), (1, 1), (4, 4)] * 3
    tasks = [_stats.TaskSamples(_samples(rng, nb), _samples(rng, nc, 1.1)) for nb, nc in shapes]
    for t in tasks:  # cache reads that vary from run to run
        t.baseline[:, 2] *= rng.uniform(0.5, 1.0, len(t.baseline))
        t.candidate[:, 2] *= rng.uniform(0.4, 1.0, len(t.candidate))
    got = _stats.permutation_tests(tasks, permutations=199, seed=3, lay=LAY)
    want = _naive_permutation_tests(tasks, 199, 3)
    for name, expected in want.items():
        res = got[name]
        assert res is not None and expected is not None
        observed = (res.aggregate, res.equal_weight, res.p_aggregate, res.p_equal_weight)
        assert observed == pytest.approx(expected, rel=1e-9), name


def test_zero_metrics_are_not_measured() -> None:
    zero = np.zeros((3, 4))
    tasks = [_stats.TaskSamples(zero, zero) for _ in range(3)]
    res = _stats.permutation_tests(tasks, permutations=99, seed=0, lay=LAY)
    assert res == {"turns": None, "cost": None, "cache_hit_rate": None}


def test_detectable_drop_matches_the_power_table() -> None:
    """docs/statistics.md: a pooled 20-run baseline with k = 5 sees −20 points ~85 % of the time."""
    rates = np.array([0.95] * 6 + [0.7] * 6 + [0.35] * 3)
    nb = np.full(15, 20)
    b = np.round(rates * 20).astype(np.int64)
    deep = _stats.detectable_drop(b, nb, np.full(15, 5), 0.01)
    shallow = _stats.detectable_drop(np.round(rates * 3).astype(np.int64), np.full(15, 3),
                                     np.full(15, 3), 0.01)
    assert deep is not None and 0.12 <= deep <= 0.25
    # 15 tasks at 3 vs 3 runs can still see a uniform drop (None would mean not even
    # breaking every task), just a bigger one than a pooled 20-run baseline at k = 5
    assert shallow is not None and deep < shallow <= 1.0
    assert _stats.detectable_drop(np.zeros(15, np.int64), nb, np.full(15, 5), 0.01) is None


def test_random_subsets_are_uniform_k_subsets() -> None:
    import collections
    import itertools

    rng = np.random.default_rng(3)
    for m, k in ((5, 2), (6, 3), (12, 9)):  # 9 > 8 takes the keys-and-partition path
        subsets = _stats.random_subsets(rng, (30000,), m, k)
        assert subsets.shape == (30000, k)
        assert all(len(set(row)) == k for row in subsets.tolist())
        assert subsets.min() >= 0 and subsets.max() < m
        counts = collections.Counter(tuple(sorted(r)) for r in subsets.tolist())
        n = sum(1 for _ in itertools.combinations(range(m), k))
        assert len(counts) == n
        expected = 30000 / n
        chi2 = sum((c - expected) ** 2 / expected for c in counts.values())
        assert chi2 < n + 6 * (2 * n) ** 0.5  # far inside the χ²(n - 1) bulk


@pytest.mark.slow
def test_permutation_tests_do_not_depend_on_the_number_of_cores(
        monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(5)
    tasks = [_stats.TaskSamples(baseline=rng.random((6, 4)), candidate=rng.random((3, 4)))
             for _ in range(200)]  # 5 chunks of 44 tasks at 9,999 permutations
    monkeypatch.setattr(_stats.os, "cpu_count", lambda: 1)
    one = _stats.permutation_tests(tasks, permutations=9999, seed=9, lay=LAY)
    monkeypatch.setattr(_stats.os, "cpu_count", lambda: 4)
    four = _stats.permutation_tests(tasks, permutations=9999, seed=9, lay=LAY)
    assert one == four


def test_relabelled_arm_sums_are_the_arm_means_of_each_relabelling() -> None:
    """The skill-effect report's permutation engine (any number of columns): row 0 is the
    observed labelling's Σ_i of each arm's per-task means, and every row is a split of each
    task's runs into arms of the observed sizes (so the two arms always add up to the
    observed total of per-task run sums)."""
    rng = np.random.default_rng(11)
    tasks = [_stats.TaskSamples(baseline=rng.random((4, 6)), candidate=rng.random((3, 6)))
             for _ in range(7)]
    parts = list(_stats.relabelled_arm_sums(tasks, 3, 99))
    base = sum(b for b, _ in parts)
    cand = sum(c for _, c in parts)
    assert base.shape == cand.shape == (100, 6)
    np.testing.assert_allclose(base[0], sum(t.baseline.mean(axis=0) for t in tasks))
    np.testing.assert_allclose(cand[0], sum(t.candidate.mean(axis=0) for t in tasks))
    total = sum(t.baseline.sum(axis=0) + t.candidate.sum(axis=0) for t in tasks)
    np.testing.assert_allclose(base * 4 + cand * 3, np.broadcast_to(total, (100, 6)))
    assert not np.allclose(base[1:], base[0])  # relabellings move the arms
    again = sum(b for b, _ in _stats.relabelled_arm_sums(tasks, 3, 99))
    np.testing.assert_array_equal(base, again)


def test_the_bootstrap_draws_are_resampled_runs_within_tasks() -> None:
    """arm_stats' draws of a mean are its textbook bootstrap: per task, ``BOOTSTRAP`` resamples
    of the task's runs with replacement (drawn in the task's order from the seeded generator),
    each resample's mean, averaged over the tasks. Computed here by gathering the resamples;
    the gate counts them instead, which must not change a draw."""
    from gate.compare import arm_stats
    from gate.compare._synthetic import reference_rates, synthetic_results

    res = synthetic_results(reference_rates(6), 7, np.random.default_rng(5))
    by: dict[str, list] = {}
    for r in res.runs:
        by.setdefault(r.task, []).append(r)
    tasks = sorted(by)
    stats = arm_stats(by, tasks, 0.95, 11)
    rng = np.random.default_rng(11)
    want = np.zeros(1000)
    for t in tasks:
        turns = np.array([float(r.turns) for r in by[t]])
        want += turns[rng.integers(0, len(turns), size=(1000, len(turns)))].mean(axis=1)
    want /= len(tasks)
    assert np.allclose(stats.draws["turns"], want, rtol=1e-12, atol=0)
    assert len(set(np.round(want, 9))) > 50  # resamples that differ: a check that can fail
