"""Exact tests when the PR's runs per task were planned from the baseline's outcomes.

The baseline's runs are one arm of every test. When a task's PR run count n_c was chosen from
its baseline pass count b (gate/compare/_plan.py: more runs where the baseline nearly always
passed), "nothing changed" no longer makes every relabelling of the task's runs equally
likely: only those under which the plan would have come out the same can have been observed.
Given the task's total passes t and its plan,

    P(c | t, plan) ∝ C(n_b, t − c) · C(n_c, c) · 1[lo ≤ t − c ≤ hi],

where [lo, hi] (the plan's ``allowed``) is the range of baseline pass counts under which the
rule gives this n_c. The plain conditional test (the hypergeometric given t alone) counts
relabellings the plan rules out and is anti-conservative: a task planned 3 runs because its
baseline passed 6 of 6 cannot have seen its baseline part pass fewer than the band's floor.

This module holds the pieces every restricted test is built from, so that each rule is
written once:

* :func:`task_tables` / :func:`restricted_tables`: the per-task null pmf and cdf of c for
  every t, the hypergeometric row masked to lo ≤ t − c ≤ hi and renormalised (exact integer
  weights, rounded once). A row the mask does not cut is today's row, bit for bit, so an
  ``allowed`` that restricts nothing gives today's p-values exactly;
* :func:`draw_candidates`: uniform relabellings of one task from the restricted set (the
  candidate part's pass count from the restricted row, then which passing and which failing
  runs), for the permutation tests of turns, cost, cache hits and duration;
* :func:`labelling_count` / :func:`design_labellings`: how many labellings the restricted set
  holds (exact enumeration, and the floors of docs/statistics.md's resolution).

``allowed`` is an int array shaped (N, 2): per task, the inclusive lo/hi of the baseline pass
count; (0, n_b) restricts nothing.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
from numpy.typing import NDArray

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]
BoolArray = NDArray[np.bool_]


@lru_cache(maxsize=4096)
def task_tables(n_b: int, n_c: int) -> tuple[FloatArray, FloatArray]:
    """Null pmf and cdf of c for every possible total t, in absolute coordinates.

    Returns ``(pmf, cdf)`` shaped ``(n_b + n_c + 1, n_c + 1)``: row t is the distribution of the
    candidate's passes c = 0..n_c given t passes in all M = n_b + n_c runs. The cdf is built
    from the normalised pmf so that observed p-values and attainable p-values are the very same
    floating-point numbers (the max test compares them).
    """
    m = n_b + n_c
    pmf = np.zeros((m + 1, n_c + 1))
    whole = math.comb(m, n_c)
    for t in range(m + 1):  # C(t, c) C(m - t, n_c - c) / C(m, n_c), exact then rounded once
        row = np.array([math.comb(t, c) * math.comb(m - t, n_c - c) / whole
                        for c in range(n_c + 1)])
        pmf[t] = row / row.sum()
    cdf = np.minimum(np.cumsum(pmf, axis=1), 1.0)
    for t in range(m + 1):  # exactly 1 from the top of the support on
        cdf[t, min(t, n_c):] = 1.0
    pmf.setflags(write=False)
    cdf.setflags(write=False)
    return pmf, cdf


def _kept(n_b: int, n_c: int, t: int, lo: int, hi: int) -> tuple[int, int]:
    """The candidate pass counts c (inclusive range) possible given t and lo ≤ t − c ≤ hi;
    empty (first > last) when none is."""
    return max(0, t - n_b, t - hi), min(n_c, t, t - lo)


def binding(n_b: int, n_c: int, t: int, lo: int, hi: int) -> bool:
    """Whether the plan's range rules out any relabelling of a task with t passes in all."""
    first, last = _kept(n_b, n_c, t, lo, hi)
    return (first, last) != (max(0, t - n_b), min(n_c, t))


@lru_cache(maxsize=4096)
def restricted_tables(n_b: int, n_c: int, lo: int, hi: int) -> tuple[FloatArray, FloatArray]:
    """:func:`task_tables` given also that the baseline part's passes t − c lie in [lo, hi].

    A row the range does not cut is :func:`task_tables`' own row (the same floats); a cut row
    is renormalised from exact integer weights and rounded once; a total the range makes
    impossible has an all-zero pmf row (and a cdf of 1)."""
    pmf0, cdf0 = task_tables(n_b, n_c)
    if lo <= 0 and hi >= n_b:
        return pmf0, cdf0
    m = n_b + n_c
    pmf, cdf = pmf0.copy(), cdf0.copy()
    for t in range(m + 1):
        if not binding(n_b, n_c, t, lo, hi):
            continue
        first, last = _kept(n_b, n_c, t, lo, hi)
        pmf[t] = 0.0
        cdf[t] = 1.0
        if first > last:
            continue
        weights = [math.comb(t, c) * math.comb(m - t, n_c - c) for c in range(first, last + 1)]
        whole = sum(weights)
        pmf[t, first:last + 1] = [w / whole for w in weights]
        cdf[t, :last] = np.minimum(np.cumsum(pmf[t]), 1.0)[:last]
    pmf.setflags(write=False)
    cdf.setflags(write=False)
    return pmf, cdf


def checked(b: IntArray, n_b: IntArray, allowed: IntArray | None) -> IntArray | None:
    """``allowed`` as an (N, 2) int array clipped to [0, n_b], or None; raises ValueError
    when it is not shaped so or a task's observed baseline passes lie outside it (the plan
    could not have come out as it did: a mismatch the caller names)."""
    if allowed is None:
        return None
    a = np.asarray(allowed, dtype=np.int64)
    if a.shape != (len(b), 2):
        raise ValueError(f"allowed must be shaped ({len(b)}, 2), not {a.shape}")
    a = np.stack([np.maximum(a[:, 0], 0), np.minimum(a[:, 1], n_b)], axis=1)
    outside = np.flatnonzero((b < a[:, 0]) | (b > a[:, 1]))
    if len(outside):
        i = int(outside[0])
        raise ValueError(f"task {i}: the baseline's {int(b[i])} passes lie outside the "
                         f"plan's range {int(a[i, 0])}..{int(a[i, 1])}")
    return a


def tables(n_b: int, n_c: int, lo: int | None, hi: int | None) -> tuple[FloatArray,
                                                                        FloatArray]:
    """The task's tables: :func:`task_tables` without a range, else restricted."""
    if lo is None or hi is None:
        return task_tables(n_b, n_c)
    return restricted_tables(n_b, n_c, lo, hi)


def groups(n_b: IntArray, n_c: IntArray, allowed: IntArray | None
           ) -> list[tuple[FloatArray, FloatArray, list[int]]]:
    """Task columns grouped by the tables they share: (pmf, cdf, columns). Without a range
    the groups are by (n_b, n_c), in the order first seen."""
    keys: dict[tuple[int, ...], list[int]] = {}
    bounds = allowed.tolist() if allowed is not None else None
    for i, (nb, nc) in enumerate(zip(n_b.tolist(), n_c.tolist(), strict=True)):
        key = (nb, nc) if bounds is None else (nb, nc, *bounds[i])
        keys.setdefault(key, []).append(i)
    return [(*tables(k[0], k[1], *(k[2:] or (None, None))), cols) for k, cols in keys.items()]


def moments(pmf_rows: FloatArray) -> tuple[FloatArray, FloatArray]:
    """Mean and variance of c under each row of ``pmf_rows`` (…, n_c + 1)."""
    c = np.arange(pmf_rows.shape[-1], dtype=float)
    mean = (pmf_rows * c).sum(axis=-1)
    var = np.maximum((pmf_rows * c * c).sum(axis=-1) - mean * mean, 0.0)
    return mean, var


def labelling_count(n_b: int, n_c: int, t: int, lo: int, hi: int) -> int:
    """How many of the task's C(n_b + n_c, n_c) labellings keep the baseline part's passes in
    [lo, hi], with t passes among its runs: Σ_c C(t, c) C(M − t, n_c − c) over the kept c."""
    first, last = _kept(n_b, n_c, t, lo, hi)
    m = n_b + n_c
    return sum(math.comb(t, c) * math.comb(m - t, n_c - c) for c in range(first, last + 1))


def design_labellings(n_b: int, n_c: int, b: int, lo: int, hi: int) -> int:
    """The most labellings any PR outcome gives the task (its passes c = 0..n_c): the design's
    floor for a permutation test is one over the largest such count."""
    return max(labelling_count(n_b, n_c, b + c, lo, hi) for c in range(n_c + 1))


def draw_candidates(rng: np.random.Generator, passed: BoolArray, n_c: int, lo: int, hi: int,
                    draws: int) -> IntArray:
    """``draws`` uniformly random relabellings of one task among those the plan allows: the
    indices (into its M runs, the baseline's first) that become the candidate's, ascending,
    shaped (draws, n_c). The candidate part's pass count k comes from the restricted row of
    the task's total t, then k of the t passing runs and n_c − k of the failing ones."""
    passed = np.asarray(passed, dtype=bool)
    n_b = len(passed) - n_c
    t = int(passed.sum())
    pmf, _ = restricted_tables(n_b, n_c, lo, hi)
    cum = np.cumsum(pmf[t])
    k = np.minimum(np.searchsorted(cum, rng.random(draws) * cum[-1], side="right"), n_c)
    pass_idx, fail_idx = np.flatnonzero(passed), np.flatnonzero(~passed)
    out = np.empty((draws, n_c), dtype=np.int64)
    for kk in np.unique(k).tolist():
        rows = np.flatnonzero(k == kk)
        p = np.argsort(rng.random((len(rows), len(pass_idx))), axis=1)[:, :kk]
        f = np.argsort(rng.random((len(rows), len(fail_idx))), axis=1)[:, :n_c - kk]
        out[rows] = np.sort(np.concatenate([pass_idx[p], fail_idx[f]], axis=1), axis=1)
    return out
