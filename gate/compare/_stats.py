"""The statistics behind the verdict (docs/statistics.md), as pure, vectorised functions.

Pass rate: an exact conditional test stratified by task. Under "nothing changed" a task's
candidate runs are exchangeable with its baseline runs, so given the task's total number of
passes t_i, the candidate's passes c_i follow Hypergeometric(M_i, t_i, n_i^C) whatever the
task's unknown pass probability. Two exact tests use that:

* the **sum test** (exact Cochran–Mantel–Haenszel; McNemar's exact test with one run per arm):
  P(Σ c_i ≤ observed), by convolving the per-task hypergeometrics;
* the **max test** (one or a few tasks broken): the smallest per-task one-sided Fisher p-value,
  calibrated exactly with each task's *attainable* p-values.

Every function here takes a *batch* of R outcomes at once (arrays shaped ``(R, N)``), so the
single verdict, the power calculation and the benchmark all go through the same code.

The table's other metrics (gate/core/metrics.py: turns, cost, cache-hit rate, duration): a
within-task permutation test (arm labels shuffled inside each task), for a suite-level
aggregate and a task-equal-weight statistic.

Runs per task may differ between tasks and arms. When the PR's runs were planned from the
baseline's outcomes, every test here takes the plan's ``allowed`` and counts only the
relabellings under which the plan would have come out the same (gate/compare/_restricted.py).
"""

from __future__ import annotations

import itertools
import math
import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, TypeVar

import numpy as np
from numpy.typing import NDArray

from gate.compare._rate_ci import pass_rate_ci as pass_rate_ci
from gate.compare._rate_ci import wilson as wilson
from gate.compare._restricted import (
    binding,
    checked,
    design_labellings,
    draw_candidates,
    groups,
    labelling_count,
    moments,
    tables,
)
from gate.core.metrics import Metric

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]

_T = TypeVar("_T")
_REL_TOL = 1e-9  # ties between floating p-values that are equal in exact arithmetic


# --------------------------------------------------------------------------------------------
# Pass rate: exact stratified sum and max tests
# --------------------------------------------------------------------------------------------


def task_pvalues(b: IntArray, n_b: IntArray, c: IntArray, n_c: IntArray,
                 allowed: IntArray | None = None) -> FloatArray:
    """Per-task one-sided Fisher p-values P(C ≤ c_i | t_i), batch shaped like ``c``; with
    the plan's ``allowed`` (gate/compare/_restricted.py) given also the plan."""
    c = np.atleast_2d(c)
    out = np.empty(c.shape)
    for _, cdf, cols in groups(n_b, n_c, checked(b, n_b, allowed)):
        cc = c[:, cols]
        out[:, cols] = cdf[b[cols][None, :] + cc, cc]
    return out


def sum_test(b: IntArray, n_b: IntArray, c: IntArray, n_c: IntArray,
             *, exact_budget: float = 4e8, allowed: IntArray | None = None) -> FloatArray:
    """p_sum = P(Σ c_i ≤ observed Σ c_i | t) for each of R outcomes (rows of ``c``); with the
    plan's ``allowed``, given also the plan (each task's row restricted).

    Exact by convolution. Above ``exact_budget`` (≈ R·N·k·Σk cells, only reached by the power
    calculation on very large suites) it falls back to a continuity-corrected normal
    approximation with the exact (restricted) moments.
    """
    c = np.atleast_2d(c)
    r, n = c.shape
    width = int(n_c.sum()) + 1
    t = b[None, :] + c
    observed = c.sum(axis=1)
    bounds = checked(b, n_b, allowed)

    def pmf_of(i: int) -> FloatArray:
        if bounds is None:
            return tables(int(n_b[i]), int(n_c[i]), None, None)[0]
        return tables(int(n_b[i]), int(n_c[i]), *(int(x) for x in bounds[i]))[0]

    if float(r) * float(n_c.sum() + n) * width > exact_budget:
        if bounds is None:
            m = (n_b + n_c)[None, :].astype(float)
            mean = t * n_c / m
            var = np.where(m > 1, t * (m - t) * n_c * n_b / (m * m * np.maximum(m - 1, 1)),
                           0.0)
        else:
            mv = [moments(pmf_of(i)[t[:, i]]) for i in range(n)]
            mean = np.stack([x for x, _ in mv], axis=1)
            var = np.stack([v for _, v in mv], axis=1)
        z = (observed + 0.5 - mean.sum(axis=1)) / np.sqrt(np.maximum(var.sum(axis=1), 1e-300))
        return np.array([0.5 * math.erfc(-float(x) / math.sqrt(2)) for x in z], dtype=float)
    dist = np.zeros((r, width))
    dist[:, 0] = 1.0
    top = 0
    for i in range(n):
        nc = int(n_c[i])
        kernel = pmf_of(i)[t[:, i]]  # (R, nc + 1)
        new = np.zeros((r, width))
        for j in range(nc + 1):
            new[:, j:top + j + 1] += kernel[:, j:j + 1] * dist[:, :top + 1]
        dist = new
        top += nc
    cum = np.cumsum(dist, axis=1)
    p = cum[np.arange(r), observed]
    return np.clip(p, 0.0, 1.0)


def max_test(b: IntArray, n_b: IntArray, c: IntArray, n_c: IntArray,
             allowed: IntArray | None = None) -> tuple[FloatArray, FloatArray]:
    """p_max = 1 − Π_i [1 − P(p_i ≤ m | t_i)] with m = min_i p_i; also returns the p_i.

    P(p_i ≤ m | t_i) is the largest *attainable* value of task i's p-value distribution that is
    ≤ m (a discrete p-value can only take the values of its cdf), which keeps the test exact
    instead of Bonferroni-conservative. With the plan's ``allowed``, both the p_i and their
    attainable values come from the restricted rows (the cdf of the c the plan allows).
    """
    c = np.atleast_2d(c)
    bounds = checked(b, n_b, allowed)
    p_i = task_pvalues(b, n_b, c, n_c, bounds)
    m = p_i.min(axis=1) * (1 + _REL_TOL)
    log_keep = np.zeros(c.shape[0])
    for _, cdf, cols in groups(n_b, n_c, bounds):
        rows = cdf[b[cols][None, :] + c[:, cols]]  # (R, G, nc + 1): attainable p-values
        q = np.where(rows <= m[:, None, None], rows, 0.0).max(axis=2)
        with np.errstate(divide="ignore"):  # q = 1 (m = 1): p_max = 1
            log_keep += np.log1p(-np.minimum(q, 1.0)).sum(axis=1)
    return np.clip(-np.expm1(log_keep), 0.0, 1.0), p_i


def is_deep(n_b: IntArray) -> bool:
    """A deep baseline (median ≥ 10 runs per task) buys the max test its half of α."""
    return bool(np.median(n_b) >= 10) if len(n_b) else False


def decisive_p(p_sum: float, p_max: float, deep: bool) -> float:
    """The pass-rate p-value the decision rests on: the sum test's, or with a deep baseline
    the smaller of the sum and max tests' (the one place this rule is written)."""
    return min(p_sum, p_max) if deep else p_sum


def pass_rate_blocks(p_sum: FloatArray, p_max: FloatArray, alpha: float,
                     deep: bool) -> NDArray[np.bool_]:
    """The decision rule of docs/statistics.md: false blocks ≤ α by construction."""
    if deep:
        return (p_sum <= alpha / 2) | (p_max <= alpha / 2)
    return p_sum <= alpha


def pass_rate_decide(b: IntArray, n_b: IntArray, c: IntArray, n_c: IntArray, alpha: float,
                     deep: bool, allowed: IntArray | None = None) -> NDArray[np.bool_]:
    """Batch verdict on R candidate outcomes (power, benchmark): True where the gate blocks;
    with the plan's ``allowed``, by the tests given the plan."""
    p_sum = sum_test(b, n_b, c, n_c, allowed=allowed)
    if not deep:
        return pass_rate_blocks(p_sum, p_sum, alpha, deep)
    p_max, _ = max_test(b, n_b, c, n_c, allowed)
    return pass_rate_blocks(p_sum, p_max, alpha, deep)


# --------------------------------------------------------------------------------------------
# Power: the smallest uniform drop the gate catches 80 % of the time
# --------------------------------------------------------------------------------------------


@lru_cache(maxsize=256)
def _detectable_drop_cached(b: tuple[int, ...], n_b: tuple[int, ...], n_c: tuple[int, ...],
                            alpha: float, target: float, sims: int, seed: int,
                            allowed: tuple[tuple[int, ...], ...] | None = None) -> float | None:
    bb, nb, nc = (np.asarray(x, dtype=np.int64) for x in (b, n_b, n_c))
    bounds = None if allowed is None else np.asarray(allowed, dtype=np.int64).reshape(-1, 3)
    rates = bb / nb
    deep = is_deep(nb)
    rng = np.random.default_rng(seed)
    u = rng.random((sims, len(bb), int(nc.max())))  # common random numbers: power ↑ in the drop
    valid = np.arange(int(nc.max()))[None, None, :] < nc[None, :, None]

    def power(drop_points: int) -> float:
        p = np.clip(rates - drop_points / 100, 0.0, 1.0)
        c = ((u < p[None, :, None]) & valid).sum(axis=2).astype(np.int64)
        return float(pass_rate_decide(bb, nb, c, nc, alpha, deep, bounds).mean())

    if power(100) < target:
        return None
    lo, hi = 0, 100  # power(lo) < target ≤ power(hi)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if power(mid) >= target:
            hi = mid
        else:
            lo = mid
    return hi / 100


def detectable_drop(b: IntArray, n_b: IntArray, n_c: IntArray, alpha: float, *,
                    target: float = 0.8, sims: int = 200, seed: int = 0,
                    allowed: IntArray | None = None) -> float | None:
    """Smallest uniform per-task drop (in rate, 0.01 steps) caught with ``target`` power.

    Simulated with the baseline held as observed and each task's true rate taken to be its
    baseline rate, the candidate drawn at that rate minus the drop (floored at 0), through the
    same decision rule as the verdict (with the plan's ``allowed``, the tests given the plan;
    each task keeps its own runs, equal or not). ``None``: even breaking every task is not
    reliably seen. Cached: the answer depends only on the baseline counts, the candidate's
    runs and the plan's ranges.
    """
    if len(b) == 0 or sims <= 0:
        return None
    bounds = checked(b, n_b, allowed)
    return _detectable_drop_cached(
        tuple(int(x) for x in b), tuple(int(x) for x in n_b), tuple(int(x) for x in n_c),
        alpha, target, sims, seed,
        None if bounds is None else tuple(tuple(int(x) for x in row) for row in bounds.tolist()))


# --------------------------------------------------------------------------------------------
# Infra errors
# --------------------------------------------------------------------------------------------


def infra_pvalue(errors_b: int, runs_b: int, errors_c: int, runs_c: int) -> float:
    """One-sided Fisher exact p that the candidate's infra-error rate is higher."""
    if runs_b == 0 or runs_c == 0 or errors_b + errors_c == 0:
        return 1.0
    from scipy.stats import fisher_exact  # only when there are errors: a costly import

    table = [[errors_c, runs_c - errors_c], [errors_b, runs_b - errors_b]]
    return float(fisher_exact(table, alternative="greater").pvalue)


# --------------------------------------------------------------------------------------------
# The table's means and ratios: within-task permutation tests
# --------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class TaskSamples:
    """One task's valid runs: a row per run, the columns a :class:`Layout` lays out."""

    baseline: FloatArray  # (n_b, columns)
    candidate: FloatArray  # (n_c, columns)
    # the plan's inclusive range of the baseline's passes (gate/compare/_restricted.py), with
    # each run's pass flag per arm to keep relabellings in it; None: every relabelling counts
    allowed: tuple[int, int] | None = None
    baseline_passed: NDArray[np.bool_] | None = None
    candidate_passed: NDArray[np.bool_] | None = None

    def restriction(self) -> tuple[NDArray[np.bool_], int, int] | None:
        """(pass flags of the M runs, the baseline's first; lo; hi) when the plan rules out some
        relabelling of this task; None when every one counts."""
        if self.allowed is None:
            return None
        if self.baseline_passed is None or self.candidate_passed is None:
            raise ValueError("a task with a planned range needs each run's pass flag")
        flags = np.concatenate([self.baseline_passed, self.candidate_passed]).astype(bool)
        nb, nc, (lo, hi) = len(self.baseline), len(self.candidate), self.allowed
        if not lo <= int(self.baseline_passed.sum()) <= hi:
            raise ValueError(f"the baseline's passes lie outside the plan's range {lo}..{hi}")
        return (flags, lo, hi) if binding(nb, nc, int(flags.sum()), lo, hi) else None


@dataclass(frozen=True)
class PermResult:
    """Observed statistics and one-sided p-values in the harmful direction."""

    baseline: float  # suite-level value, baseline arm
    candidate: float
    aggregate: float  # ratio (a mean) or difference of pooled rates (a ratio)
    equal_weight: float  # mean per-task log ratio / rate difference
    p_aggregate: float
    p_equal_weight: float


@dataclass(frozen=True)
class Layout:
    """Which columns of :class:`TaskSamples` each permutation-tested metric reads
    (gate/core/metrics.py): a mean one column, a ratio two (numerator, denominator)."""

    means: tuple[tuple[str, int, bool], ...]  # (name, column, a rise is the harm)
    ratios: tuple[tuple[str, int, int, bool], ...]  # (name, numerator, denominator, harm up)

    @property
    def columns(self) -> int:
        return len(self.means) + 2 * len(self.ratios)


def layout(rows: Sequence[Metric]) -> Layout:
    """The columns of ``rows`` (the table's mean and ratio metrics), in their order: what
    ``rows``' samples concatenated per run give."""
    means: list[tuple[str, int, bool]] = []
    ratios: list[tuple[str, int, int, bool]] = []
    col = 0
    for m in rows:
        if m.kind == "mean":
            means.append((m.name, col, not m.higher_is_better))
            col += 1
        elif m.kind == "ratio":
            ratios.append((m.name, col, col + 1, not m.higher_is_better))
            col += 2
    return Layout(tuple(means), tuple(ratios))




def _subsets(rng: np.random.Generator, shape: tuple[int, ...], m: int,
             k: int) -> tuple[list[IntArray], list[IntArray]]:
    """Uniformly random k-subsets of ``range(m)``, one per element of ``shape``, as k arrays
    shaped ``shape``: in the order drawn, and in ascending order.

    For small k: the j-th index is uniform over the m - j indices not drawn yet (the draw r is
    mapped to the r-th unchosen index by stepping over the chosen ones in ascending order), so
    every k-subset is equally likely. k random integers per row instead of m random floats and
    a partition; the ascending order is kept by inserting each draw with compare-exchanges.
    For large k: the k smallest of m uniform keys."""
    if k > 8:
        keys = rng.random((*shape, m))
        part = np.argpartition(keys, k - 1, axis=-1)[..., :k]
        return (list(np.moveaxis(part, -1, 0)),
                list(np.moveaxis(np.sort(part, axis=-1), -1, 0)))
    drawn: list[IntArray] = []
    ordered: list[IntArray] = []
    for j in range(k):
        pos = rng.integers(0, m - j, size=shape)
        for prev in ordered:
            pos += prev <= pos
        drawn.append(pos)
        merged, x = [], pos
        for prev in ordered:
            merged.append(np.minimum(prev, x))
            x = np.maximum(prev, x)
        ordered = [*merged, x]
    return drawn, ordered


def random_subsets(rng: np.random.Generator, shape: tuple[int, ...], m: int,
                   k: int) -> IntArray:
    """Uniformly random k-subsets of ``range(m)``, one per row: ``shape + (k,)`` indices in
    the order drawn (see :func:`_subsets`)."""
    drawn, _ = _subsets(rng, shape, m, k)
    return np.stack(drawn, axis=-1) if drawn else np.empty((*shape, 0), dtype=np.int64)


@dataclass(frozen=True)
class _Sums:
    """One chunk's statistics summed over its tasks, one row per labelling (observed first)."""

    base: FloatArray  # (R + 1, columns): Σ_i per-task baseline means
    cand: FloatArray  # (R + 1, columns)
    log_ratio: FloatArray  # (R + 1, means): Σ_i log((cand_i + δ) / (base_i + δ))
    hit_diff: FloatArray  # (R + 1, ratios): Σ_i of the per-task rate differences
    hit_n: FloatArray  # (R + 1, ratios): how many tasks have the rate in both arms


def _chunk_means(vals: FloatArray, nb: int, nc: int, permutations: int, seed: tuple[int, ...],
                 restrict: tuple[NDArray[np.bool_], int, int] | None = None
                 ) -> tuple[list[FloatArray], list[FloatArray]]:
    """Per-task arm means of ``vals`` (G tasks, M = nb + nc runs, any number of columns) for
    the observed labels (row 0) and ``permutations`` relabellings drawn from their own seeded
    stream: per column, the baseline's and the candidate's means shaped (G, R + 1).

    A relabelling picks which runs are "candidate" (or, when fewer, which are "baseline") as a
    uniformly random subset, and sums the picked runs in ascending index order. The observed
    row takes the same path, so a relabelling identical to the observed one gives bit-identical
    statistics (it must count as "as extreme"). Works column by column on arrays shaped
    (G, R + 1), gathering from the flattened column, which keeps every gather contiguous.
    ``restrict`` (one task, G = 1: its pass flags, lo, hi) draws the relabellings uniformly
    among those the plan allows (gate/compare/_restricted.py), always picking candidates."""
    g, m = vals.shape[0], nb + nc
    rng = np.random.default_rng(seed)
    pick_candidates = nc <= nb or restrict is not None
    k = nc if pick_candidates else nb
    if restrict is None:
        _, ordered = _subsets(rng, (g, permutations), m, k)
    else:
        drawn = draw_candidates(rng, restrict[0], nc, restrict[1], restrict[2], permutations)
        ordered = [drawn[None, :, j] for j in range(nc)]
    offsets = (np.arange(g, dtype=np.int64) * m)[:, None]
    first = nb if pick_candidates else 0
    idx: list[IntArray] = []
    for j, sub in enumerate(ordered):  # j-th smallest picked index, as a flat index
        at = np.empty((g, permutations + 1), dtype=np.int64)
        at[:, 0] = first + j
        at[:, 1:] = sub
        at += offsets
        idx.append(at)
    cols = vals.shape[2]
    totals = vals.sum(axis=1)  # (G, cols)
    flat = np.ascontiguousarray(vals.transpose(2, 0, 1).reshape(cols, g * m))
    base, cand = [], []
    for col in range(cols):
        picked = np.zeros((g, permutations + 1))
        for at in idx:
            picked += flat[col][at]
        total = totals[:, col][:, None]
        c = picked if pick_candidates else total - picked
        base.append((total - c) / nb)
        cand.append(c / nc)
    return base, cand


def _stack(columns: list[FloatArray], rows: int) -> FloatArray:
    return np.stack(columns, axis=1) if columns else np.zeros((rows, 0))


def _per_task(base: Sequence[FloatArray], cand: Sequence[FloatArray], delta: FloatArray,
              lay: Layout, axis: int | None) -> tuple[FloatArray, FloatArray, FloatArray]:
    """Each mean's log ratio and each ratio's rate difference (with whether it exists: a
    task with a zero denominator in an arm has no rate there), per task and labelling, summed
    over ``axis`` (the chunk's tasks) unless None."""
    def total(x: FloatArray) -> FloatArray:
        return x.sum(axis=axis) if axis is not None else x

    rows = (base[0].shape[1] if axis == 0 else base[0].shape[0]) if len(base) else 0
    logs = [total(np.log((cand[col] + delta[col]) / (base[col] + delta[col])))
            for _, col, _ in lay.means]
    diffs, oks = [], []
    for _, num, den, _ in lay.ratios:
        with np.errstate(invalid="ignore", divide="ignore"):
            diff = cand[num] / cand[den] - base[num] / base[den]
        ok = np.isfinite(diff)
        diffs.append(total(np.where(ok, diff, 0.0)))
        oks.append(total(ok.astype(np.float64)))
    return _stack(logs, rows), _stack(diffs, rows), _stack(oks, rows)


def _chunk_sums(vals: FloatArray, nb: int, nc: int, permutations: int,
                seed: tuple[int, ...], restrict: tuple[NDArray[np.bool_], int, int] | None,
                delta: FloatArray, lay: Layout) -> _Sums:
    """The statistics of :func:`permutation_tests` summed over the G tasks of ``vals``, for
    the observed labels and the relabellings of :func:`_chunk_means`."""
    base, cand = _chunk_means(vals, nb, nc, permutations, seed, restrict)
    log_ratio, hit_diff, hit_n = _per_task(base, cand, delta, lay, axis=0)
    return _Sums(base=np.stack([b.sum(axis=0) for b in base], axis=1),
                 cand=np.stack([c.sum(axis=0) for c in cand], axis=1),
                 log_ratio=log_ratio, hit_diff=hit_diff, hit_n=hit_n)


def _chunk_arm_sums(vals: FloatArray, nb: int, nc: int, permutations: int,
                    seed: tuple[int, ...], restrict: tuple[NDArray[np.bool_], int, int] | None
                    ) -> tuple[FloatArray, FloatArray]:
    """Σ over the chunk's tasks of each arm's per-task means, shaped (R + 1, cols)."""
    base, cand = _chunk_means(vals, nb, nc, permutations, seed, restrict)
    return (np.stack([b.sum(axis=0) for b in base], axis=1),
            np.stack([c.sum(axis=0) for c in cand], axis=1))


def relabelled_arm_sums(tasks: Sequence[TaskSamples], seed: int, permutations: int
                        ) -> Iterator[tuple[FloatArray, FloatArray]]:
    """(Σ_i baseline means, Σ_i candidate means), each (R + 1, cols), for the observed labels
    (row 0) and R relabellings within each task, chunk by chunk: the same relabellings as
    :func:`permutation_tests` draws, for any number of columns (the skill-effect report)."""
    yield from _chunked(tasks, seed, permutations, _chunk_arm_sums)


def _relabelled_sums(tasks: Sequence[TaskSamples], seed: int, permutations: int,
                     delta: FloatArray, lay: Layout) -> Iterator[_Sums]:
    """:class:`_Sums` for the observed labels (row 0) and R relabellings, chunk by chunk."""
    yield from _chunked(tasks, seed, permutations, _chunk_sums, delta, lay)


def _chunked(tasks: Sequence[TaskSamples], seed: int, permutations: int,
             fn: Callable[..., _T], *extra: Any) -> Iterator[_T]:
    """``fn(values, n_b, n_c, permutations, chunk seed, restriction, *extra)`` over the tasks,
    chunk by chunk.

    Tasks with the same (n_b, n_c) are shuffled together (a task whose relabellings the plan
    restricts, alone); a chunk holds ≈ 4M random numbers,
    so memory stays flat however large the suite. Each chunk draws from its own stream, seeded
    by (seed, shape, first task), so chunks run on every core and the result does not depend
    on how many there are; they are yielded in order, so the sums are reproducible bit for bit.
    """
    by_shape: dict[tuple[int, int], list[int]] = {}
    jobs: list[tuple[Any, ...]] = []
    for i, t in enumerate(tasks):
        nb, nc = len(t.baseline), len(t.candidate)
        if (restrict := t.restriction()) is not None:  # the plan's range: a chunk of its own
            jobs.append((np.concatenate([t.baseline, t.candidate])[None], nb, nc, permutations,
                         (seed, nb, nc, len(tasks) + i), restrict, *extra))
        else:
            by_shape.setdefault((nb, nc), []).append(i)
    for (nb, nc), idx in by_shape.items():
        m = nb + nc
        values = np.stack([np.concatenate([tasks[i].baseline, tasks[i].candidate]) for i in idx])
        chunk = max(1, 4_000_000 // max(1, m * permutations))
        for start in range(0, len(idx), chunk):
            jobs.append((values[start:start + chunk], nb, nc, permutations,
                         (seed, nb, nc, start), None, *extra))
    if len(jobs) == 1:
        yield fn(*jobs[0])
        return
    workers = min(len(jobs), os.cpu_count() or 1, 4)  # numpy releases the GIL here
    with ThreadPoolExecutor(max_workers=workers) as pool:
        pending = [pool.submit(fn, *job) for job in jobs[:workers]]
        for i in range(len(jobs)):
            result = pending[i].result()
            if i + workers < len(jobs):  # at most `workers` chunks in memory at once
                pending.append(pool.submit(fn, *jobs[i + workers]))
            yield result


def permutation_tests(tasks: Sequence[TaskSamples], *, permutations: int, seed: int,
                      lay: Layout) -> dict[str, PermResult | None]:
    """The tests of ``lay``'s metrics (gate/core/metrics.py) on the same relabellings (one seeded
    Generator).

    Aggregate statistics compare one pass through the suite: Σ_i mean_i^C / Σ_i mean_i^B for
    a mean (turns, cost), Σ numerator / Σ denominator (of per-task means) for a ratio (cache
    hits), so a baseline pooled deeper on some tasks does not tilt the mix. The equal-weight
    statistics give every task one vote: the mean per-task log ratio (a pseudo-count of 1 % of
    the overall mean keeps a task whose mean is 0 finite) or the mean per-task rate
    difference. Only sums over tasks are kept per relabelling. p-values count the observed
    labelling among the relabellings: (1 + #as extreme) / (R + 1), in the metric's harmful
    direction. A metric with nothing to measure (all zero) is ``None``.
    """
    out: dict[str, PermResult | None] = dict.fromkeys(
        [m[0] for m in lay.means] + [r[0] for r in lay.ratios])
    if not tasks:
        return out
    n = len(tasks)
    overall = np.concatenate([np.concatenate([t.baseline, t.candidate]) for t in tasks])
    delta = np.maximum(1e-12, 0.01 * overall.mean(axis=0))
    # a small design is enumerated whole: every relabelling once, the p-value exact (a random
    # sample of a few hundred labellings would only blur it, and could miss the one extreme)
    exact = _labellings(tasks) <= permutations + 1
    parts: Iterable[_Sums] = ([exact_relabelled_sums(tasks, delta, lay)] if exact else
                              _relabelled_sums(tasks, seed, permutations, delta, lay))
    total: _Sums | None = None
    for part in parts:
        total = part if total is None else _Sums(
            base=total.base + part.base, cand=total.cand + part.cand,
            log_ratio=total.log_ratio + part.log_ratio, hit_diff=total.hit_diff + part.hit_diff,
            hit_n=total.hit_n + part.hit_n)
    assert total is not None
    pvalue = _exact_pvalue if exact else _pvalue
    for i, (name, col, up) in enumerate(lay.means):
        sb, sc = total.base[:, col], total.cand[:, col]
        if sb[0] <= 0 and sc[0] <= 0:
            continue
        agg = sc / np.maximum(sb, 1e-300)
        eq = total.log_ratio[:, i] / n
        out[name] = PermResult(
            baseline=float(sb[0] / n), candidate=float(sc[0] / n),
            aggregate=float(agg[0]), equal_weight=float(eq[0]),
            p_aggregate=pvalue(agg, up), p_equal_weight=pvalue(eq, up))
    for i, (name, num, den, up) in enumerate(lay.ratios):
        if total.base[0, den] <= 0 or total.cand[0, den] <= 0:
            continue
        rate_b = total.base[:, num] / np.maximum(total.base[:, den], 1e-300)
        rate_c = total.cand[:, num] / np.maximum(total.cand[:, den], 1e-300)
        agg = rate_c - rate_b
        eq = total.hit_diff[:, i] / np.maximum(total.hit_n[:, i], 1)
        out[name] = PermResult(
            baseline=float(rate_b[0]), candidate=float(rate_c[0]),
            aggregate=float(agg[0]), equal_weight=float(eq[0]),
            p_aggregate=pvalue(agg, up), p_equal_weight=pvalue(eq, up))
    return out


def _pvalue(stat: FloatArray, harmful_up: bool) -> float:
    obs = stat[0]
    rest = stat[1:]
    tol = _REL_TOL * max(1.0, abs(float(obs)))
    hits = np.count_nonzero(rest >= obs - tol) if harmful_up else np.count_nonzero(
        rest <= obs + tol)
    return float((1 + hits) / (len(rest) + 1))


# --------------------------------------------------------------------------------------------
# Small designs: exact enumeration, and what each test can reach at all
# --------------------------------------------------------------------------------------------


def _labellings(tasks: Sequence[TaskSamples], cap: int = 10**12) -> int:
    """How many labellings the tasks have, counting only those the plan allows."""
    total = 1
    for t in tasks:
        nb, nc, r = len(t.baseline), len(t.candidate), t.restriction()
        total *= math.comb(nb + nc, nc) if r is None else labelling_count(
            nb, nc, int(r[0].sum()), r[1], r[2])
        if total > cap:
            return cap + 1
    return total


def labellings(shapes: Sequence[tuple[int, int]], cap: int = 10**12) -> int:
    """How many distinct within-task relabellings a design has: Π_i C(n_i^B + n_i^C, n_i^C)
    over its (n_i^B, n_i^C), capped at ``cap`` (only "more than so many" matters)."""
    total = 1
    for nb, nc in shapes:
        total *= math.comb(nb + nc, nc)
        if total > cap:
            return cap + 1
    return total


def min_permutation_p(shapes: Sequence[tuple[int, int]], permutations: int,
                      plan: Sequence[tuple[int, int, int] | None] | None = None) -> float:
    """The smallest p-value the permutation test can give on this design, whatever the data.

    Enumerated exactly (at most ``permutations + 1`` labellings): 1/L, the observed labelling
    being the single most extreme one. Sampled: (1 + R/L) / (R + 1), the expected count of the
    observed labelling among R random ones, counted with it: never below 1/(R + 1). ``plan``:
    per task, (the baseline's passes, lo, hi) of the plan's range, or None; L then counts only
    the labellings the plan allows, for the PR outcome that leaves the most."""
    total = labellings(shapes)
    if plan is not None:
        total = 1
        for (nb, nc), p in zip(shapes, plan, strict=True):
            total *= math.comb(nb + nc, nc) if p is None else design_labellings(nb, nc, *p)
    if total <= permutations + 1:
        return 1.0 / total
    return (1.0 + permutations / total) / (permutations + 1)


def exact_relabelled_sums(tasks: Sequence[TaskSamples], delta: FloatArray,
                          lay: Layout) -> _Sums:
    """:class:`_Sums` of the observed labels (row 0) and then of *every* relabelling within
    each task (L rows, the observed one among them), for :func:`permutation_tests` on a design
    small enough to enumerate (:func:`labellings`); a task the plan restricts keeps only the
    labellings it allows (its observed one is among them, the last still)."""
    per_task: list[tuple[FloatArray, FloatArray]] = []
    observed: list[int] = []
    for t in tasks:
        nb, nc = len(t.baseline), len(t.candidate)
        vals = np.concatenate([t.baseline, t.candidate])
        combos = np.array(list(itertools.combinations(range(nb + nc), nc)), dtype=np.int64)
        if (r := t.restriction()) is not None:  # only the labellings the plan allows
            left = int(r[0].sum()) - r[0][combos].sum(axis=1)  # the baseline part's passes
            combos = combos[(left >= r[1]) & (left <= r[2])]
        total = vals.sum(axis=0)
        picked = np.zeros((len(combos), vals.shape[1]))
        for j in range(nc):  # ascending index order, as the sampled path sums them
            picked += vals[combos[:, j]]
        per_task.append(((total - picked) / nb, picked / nc))
        observed.append(len(combos) - 1)  # the last combination: the candidate's own runs
    shape = tuple(len(b) for b, _ in per_task)
    grid = np.unravel_index(np.arange(int(np.prod(shape))), shape)
    first = int(np.ravel_multi_index(tuple(observed), shape))
    order = np.concatenate([[first], np.arange(len(grid[0]))])
    rows, cols = len(order), tasks[0].baseline.shape[1]
    sums = _Sums(base=np.zeros((rows, cols)), cand=np.zeros((rows, cols)),
                 log_ratio=np.zeros((rows, len(lay.means))),
                 hit_diff=np.zeros((rows, len(lay.ratios))),
                 hit_n=np.zeros((rows, len(lay.ratios))))
    for (b, c), idx in zip(per_task, grid, strict=True):
        bi, ci = b[idx[order]], c[idx[order]]
        sums.base[:] += bi
        sums.cand[:] += ci
        logs, diffs, oks = _per_task(list(bi.T), list(ci.T), delta, lay, axis=None)
        sums.log_ratio[:] += logs
        sums.hit_diff[:] += diffs
        sums.hit_n[:] += oks
    return sums


def _exact_pvalue(stat: FloatArray, harmful_up: bool) -> float:
    """The exact permutation p-value: the share of all labellings (row 0 is the observed one,
    rows 1.. all of them, itself included) at least as extreme as the observed."""
    obs = stat[0]
    rest = stat[1:]
    tol = _REL_TOL * max(1.0, abs(float(obs)))
    hits = np.count_nonzero(rest >= obs - tol) if harmful_up else np.count_nonzero(
        rest <= obs + tol)
    return float(hits / len(rest))


def collapse_p(b: IntArray, n_b: IntArray, n_c: IntArray, deep: bool,
               allowed: IntArray | None = None) -> float:
    """The deciding pass-rate p-value if every candidate run of every task failed: the
    smallest the test can reach against this baseline with these runs (0 passes is the most
    extreme outcome for both the sum and the max test), given the plan's ``allowed``."""
    zero = np.zeros((1, len(b)), dtype=np.int64)
    p_sum = float(sum_test(b, n_b, zero, n_c, allowed=allowed)[0])
    p_max = float(max_test(b, n_b, zero, n_c, allowed)[0][0]) if deep else 1.0
    return decisive_p(p_sum, p_max, deep)
