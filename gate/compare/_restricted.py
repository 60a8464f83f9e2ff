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
count; (0, n_b) restricts nothing. The pass-rate tables also take a range on only the first
``of`` of a task's baseline runs (:func:`subset_weights`; shaped (N, 3) for the tests of
gate/compare/_stats.py): the shape of a plan read from part of the baseline. The shipped rule
reads every run; bench/bench_plan_subset.py measured one that reads the older half and found
it costs more power than it frees (docs/statistics.md §5a), so the metric tests' draws and
labelling counts take the whole-baseline range only.
"""

from __future__ import annotations

import math
from fractions import Fraction
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


def whole(n_b: int, of: int | None) -> bool:
    """Whether a range on ``of`` runs is on the whole baseline part (None: it is)."""
    return of is None or of >= n_b


def _kept(n_b: int, n_c: int, t: int, lo: int, hi: int, of: int | None = None
          ) -> tuple[int, int]:
    """The candidate pass counts c (inclusive range) possible given t and the range: the
    baseline part's passes t − c in [lo, hi], or with a range on its first ``of`` runs in
    [lo, hi + n_b − of] (the other runs may pass or not); empty (first > last) when none is."""
    top = hi if whole(n_b, of) else hi + n_b - int(of or 0)
    return max(0, t - n_b, t - top), min(n_c, t, t - lo)


@lru_cache(maxsize=4096)
def subset_weights(n_b: int, of: int, lo: int, hi: int) -> tuple[int, ...]:
    """W(b′) for b′ = 0..n_b: how many ways b′ passes among the baseline part's n_b runs put
    between ``lo`` and ``hi`` of them in its first ``of`` runs, Σ_k C(of, k) C(n_b − of, b′ − k)
    over k in [lo, hi]. On the whole part (of = n_b) it is C(n_b, b′) inside the range, 0
    outside; a row's relabellings are weighted by W(b′) / C(n_b, b′), the chance that the
    plan's runs of a random relabelling land in its range."""
    rest = n_b - of
    return tuple(sum(math.comb(of, k) * math.comb(rest, bp - k)
                     for k in range(max(lo, bp - rest, 0), min(hi, bp, of) + 1))
                 for bp in range(n_b + 1))


def _row_weights(n_b: int, n_c: int, t: int, lo: int, hi: int, of: int | None
                 ) -> dict[int, int]:
    """Exact relative weights of c (the kept ones, each > 0) given t and the range."""
    first, last = _kept(n_b, n_c, t, lo, hi, of)
    if whole(n_b, of):
        m = n_b + n_c
        return {c: math.comb(t, c) * math.comb(m - t, n_c - c) for c in range(first, last + 1)}
    w = subset_weights(n_b, int(of or 0), lo, hi)
    return {c: math.comb(n_c, c) * w[t - c] for c in range(first, last + 1) if w[t - c]}


def binding(n_b: int, n_c: int, t: int, lo: int, hi: int, of: int | None = None) -> bool:
    """Whether the plan's range changes the null distribution of a task with t passes in all:
    it rules out a relabelling, or (a range on some of its runs) weighs them unevenly."""
    first, last = _kept(n_b, n_c, t, lo, hi, of)
    if (first, last) != (max(0, t - n_b), min(n_c, t)):
        return True
    if whole(n_b, of):
        return False
    w = subset_weights(n_b, int(of or 0), lo, hi)
    ratios = {Fraction(w[t - c], math.comb(n_b, t - c)) for c in range(first, last + 1)}
    return len(ratios) > 1


@lru_cache(maxsize=4096)
def restricted_tables(n_b: int, n_c: int, lo: int, hi: int, of: int | None = None
                      ) -> tuple[FloatArray, FloatArray]:
    """:func:`task_tables` given also the plan: the baseline part's passes t − c lie in
    [lo, hi] — or, with ``of`` below n_b, the passes among its first ``of`` runs do (the
    runs the plan read), each c weighted by C(n_c, c) · :func:`subset_weights`.

    A row the range does not change is :func:`task_tables`' own row (the same floats); a
    changed row is renormalised from exact integer weights and rounded once; a total the range
    makes impossible has an all-zero pmf row (and a cdf of 1)."""
    pmf0, cdf0 = task_tables(n_b, n_c)
    if lo <= 0 and hi >= (n_b if whole(n_b, of) else int(of or 0)):
        return pmf0, cdf0
    m = n_b + n_c
    pmf, cdf = pmf0.copy(), cdf0.copy()
    for t in range(m + 1):
        if not binding(n_b, n_c, t, lo, hi, of):
            continue
        weights = _row_weights(n_b, n_c, t, lo, hi, of)
        pmf[t] = 0.0
        cdf[t] = 1.0
        if not weights:
            continue
        total = sum(weights.values())
        for c, w in weights.items():
            pmf[t, c] = w / total
        last = max(weights)
        cdf[t, :last] = np.minimum(np.cumsum(pmf[t]), 1.0)[:last]
    pmf.setflags(write=False)
    cdf.setflags(write=False)
    return pmf, cdf


def checked(b: IntArray, n_b: IntArray, allowed: IntArray | None) -> IntArray | None:
    """``allowed`` as an (N, 3) int array — lo, hi and the runs ``of`` the baseline part the
    range is on, clipped to [0, of] — or None. It may come shaped (N, 2) (a range on every
    baseline run: ``of`` = n_b) or (N, 3) (``of`` ≥ n_b: on every run). Raises ValueError when
    it is shaped otherwise or a task's observed baseline passes could not have given it (the
    plan could not have come out as it did: a mismatch the caller names)."""
    if allowed is None:
        return None
    a = np.asarray(allowed, dtype=np.int64)
    if a.ndim != 2 or a.shape[0] != len(b) or a.shape[1] not in (2, 3):
        raise ValueError(f"allowed must be shaped ({len(b)}, 2) or ({len(b)}, 3), not {a.shape}")
    of = np.minimum(a[:, 2], n_b) if a.shape[1] == 3 else np.asarray(n_b, dtype=np.int64)
    a = np.stack([np.maximum(a[:, 0], 0), np.minimum(a[:, 1], of), of], axis=1)
    outside = np.flatnonzero((b < a[:, 0]) | (b > a[:, 1] + n_b - of))
    if len(outside):
        i = int(outside[0])
        on = "" if of[i] >= n_b[i] else f" on {int(of[i])} of its {int(n_b[i])} runs"
        raise ValueError(f"task {i}: the baseline's {int(b[i])} passes lie outside the "
                         f"plan's range {int(a[i, 0])}..{int(a[i, 1])}{on}")
    return a


def tables(n_b: int, n_c: int, lo: int | None, hi: int | None, of: int | None = None
           ) -> tuple[FloatArray, FloatArray]:
    """The task's tables: :func:`task_tables` without a range, else restricted."""
    if lo is None or hi is None:
        return task_tables(n_b, n_c)
    return restricted_tables(n_b, n_c, lo, hi, None if whole(n_b, of) else of)


def groups(n_b: IntArray, n_c: IntArray, allowed: IntArray | None
           ) -> list[tuple[FloatArray, FloatArray, list[int]]]:
    """Task columns grouped by the tables they share: (pmf, cdf, columns). Without a range
    the groups are by (n_b, n_c), in the order first seen; ``allowed`` as :func:`checked`
    gives it."""
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
