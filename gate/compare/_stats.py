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

The table's other metrics (gate/metrics.py: turns, cost, cache-hit rate, duration): a
within-task permutation test (arm labels shuffled inside each task), for a suite-level
aggregate and a task-equal-weight statistic.
"""

from __future__ import annotations

import itertools
import math
import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import lru_cache
from statistics import NormalDist
from typing import Any, TypeVar

import numpy as np
from numpy.typing import NDArray

from gate.metrics import Metric

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]

_T = TypeVar("_T")
_NORMAL = NormalDist()  # not scipy.stats: importing scipy costs ~1 s of CPU per `gate compare`
_REL_TOL = 1e-9  # ties between floating p-values that are equal in exact arithmetic


# --------------------------------------------------------------------------------------------
# Pass rate: exact stratified sum and max tests
# --------------------------------------------------------------------------------------------


@lru_cache(maxsize=4096)
def _task_tables(n_b: int, n_c: int) -> tuple[FloatArray, FloatArray]:
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


def _shapes(n_b: IntArray, n_c: IntArray) -> list[tuple[int, int, list[int]]]:
    """Group task columns by their (n_b, n_c) so each group shares lookup tables."""
    groups: dict[tuple[int, int], list[int]] = {}
    for i, (nb, nc) in enumerate(zip(n_b.tolist(), n_c.tolist(), strict=True)):
        groups.setdefault((nb, nc), []).append(i)
    return [(nb, nc, cols) for (nb, nc), cols in groups.items()]


def task_pvalues(b: IntArray, n_b: IntArray, c: IntArray, n_c: IntArray) -> FloatArray:
    """Per-task one-sided Fisher p-values P(C ≤ c_i | t_i), batch shaped like ``c``."""
    c = np.atleast_2d(c)
    out = np.empty(c.shape)
    for nb, nc, cols in _shapes(n_b, n_c):
        _, cdf = _task_tables(nb, nc)
        cc = c[:, cols]
        out[:, cols] = cdf[b[cols][None, :] + cc, cc]
    return out


def sum_test(b: IntArray, n_b: IntArray, c: IntArray, n_c: IntArray,
             *, exact_budget: float = 4e8) -> FloatArray:
    """p_sum = P(Σ c_i ≤ observed Σ c_i | t) for each of R outcomes (rows of ``c``).

    Exact by convolution. Above ``exact_budget`` (≈ R·N·k·Σk cells, only reached by the power
    calculation on very large suites) it falls back to a continuity-corrected normal
    approximation with the exact hypergeometric moments.
    """
    c = np.atleast_2d(c)
    r, n = c.shape
    width = int(n_c.sum()) + 1
    t = b[None, :] + c
    observed = c.sum(axis=1)
    if float(r) * float(n_c.sum() + n) * width > exact_budget:
        m = (n_b + n_c)[None, :].astype(float)
        mean = t * n_c / m
        var = np.where(m > 1, t * (m - t) * n_c * n_b / (m * m * np.maximum(m - 1, 1)), 0.0)
        z = (observed + 0.5 - mean.sum(axis=1)) / np.sqrt(np.maximum(var.sum(axis=1), 1e-300))
        return np.array([0.5 * math.erfc(-float(x) / math.sqrt(2)) for x in z], dtype=float)
    dist = np.zeros((r, width))
    dist[:, 0] = 1.0
    top = 0
    for i in range(n):
        nb, nc = int(n_b[i]), int(n_c[i])
        pmf, _ = _task_tables(nb, nc)
        kernel = pmf[t[:, i]]  # (R, nc + 1)
        new = np.zeros((r, width))
        for j in range(nc + 1):
            new[:, j:top + j + 1] += kernel[:, j:j + 1] * dist[:, :top + 1]
        dist = new
        top += nc
    cum = np.cumsum(dist, axis=1)
    p = cum[np.arange(r), observed]
    return np.clip(p, 0.0, 1.0)


def max_test(b: IntArray, n_b: IntArray, c: IntArray, n_c: IntArray) -> tuple[FloatArray,
                                                                                FloatArray]:
    """p_max = 1 − Π_i [1 − P(p_i ≤ m | t_i)] with m = min_i p_i; also returns the p_i.

    P(p_i ≤ m | t_i) is the largest *attainable* value of task i's p-value distribution that is
    ≤ m (a discrete p-value can only take the values of its cdf), which keeps the test exact
    instead of Bonferroni-conservative.
    """
    c = np.atleast_2d(c)
    p_i = task_pvalues(b, n_b, c, n_c)
    m = p_i.min(axis=1) * (1 + _REL_TOL)
    log_keep = np.zeros(c.shape[0])
    for nb, nc, cols in _shapes(n_b, n_c):
        _, cdf = _task_tables(nb, nc)
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
                     deep: bool) -> NDArray[np.bool_]:
    """Batch verdict on R candidate outcomes (power, benchmark): True where the gate blocks."""
    p_sum = sum_test(b, n_b, c, n_c)
    if not deep:
        return pass_rate_blocks(p_sum, p_sum, alpha, deep)
    p_max, _ = max_test(b, n_b, c, n_c)
    return pass_rate_blocks(p_sum, p_max, alpha, deep)


# --------------------------------------------------------------------------------------------
# Confidence interval for the pass-rate difference
# --------------------------------------------------------------------------------------------


def _wilson(p: float, n_eff: float, z: float) -> tuple[float, float]:
    if n_eff <= 0:
        return 0.0, 1.0
    denom = 1 + z * z / n_eff
    centre = (p + z * z / (2 * n_eff)) / denom
    half = z * np.sqrt(p * (1 - p) / n_eff + z * z / (4 * n_eff * n_eff)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


def wilson(passed: float, n: float, level: float) -> tuple[float, float]:
    """Wilson score interval of a pass rate at confidence ``level`` (``n`` may be an
    effective sample size): the one Wilson interval every view shows."""
    if n <= 0:
        return 0.0, 1.0
    lo, hi = _wilson(passed / n, n, _NORMAL.inv_cdf(0.5 + level / 2))
    return float(lo), float(hi)


def pass_rate_ci(b: IntArray, n_b: IntArray, c: IntArray, n_c: IntArray,
                 level: float = 0.95) -> tuple[float, float, float]:
    """Δ = mean_i (c_i/n_i^C − b_i/n_i^B) and a stratified Newcombe (MOVER-Wilson) interval.

    Each arm's task-equal-weight pass rate gets a Wilson score interval with the stratified
    effective sample size n_eff = 1 / Σ_i (w_i² / n_i) (w_i = 1/N; Yan & Su 2010); the two are
    combined by Newcombe's method of variance estimates recovery. Unlike a Wald interval it
    stays sensible at 0 % and 100 % and with few runs; treating the arms' rates as a common p
    makes it a little conservative when tasks differ in difficulty.
    """
    z = _NORMAL.inv_cdf(0.5 + level / 2)
    n = len(b)
    w2 = 1.0 / (n * n)
    pb = float(np.mean(b / n_b))
    pc = float(np.mean(c / n_c))
    lb, ub = _wilson(pb, 1.0 / float(np.sum(w2 / n_b)), z)
    lc, uc = _wilson(pc, 1.0 / float(np.sum(w2 / n_c)), z)
    d = pc - pb
    low = d - float(np.sqrt((pc - lc) ** 2 + (ub - pb) ** 2))
    high = d + float(np.sqrt((uc - pc) ** 2 + (pb - lb) ** 2))
    return d, max(-1.0, low), min(1.0, high)


# --------------------------------------------------------------------------------------------
# Power: the smallest uniform drop the gate catches 80 % of the time
# --------------------------------------------------------------------------------------------


@lru_cache(maxsize=256)
def _detectable_drop_cached(b: tuple[int, ...], n_b: tuple[int, ...], n_c: tuple[int, ...],
                            alpha: float, target: float, sims: int,
                            seed: int) -> float | None:
    bb, nb, nc = (np.asarray(x, dtype=np.int64) for x in (b, n_b, n_c))
    rates = bb / nb
    deep = is_deep(nb)
    rng = np.random.default_rng(seed)
    u = rng.random((sims, len(bb), int(nc.max())))  # common random numbers: power ↑ in the drop
    valid = np.arange(int(nc.max()))[None, None, :] < nc[None, :, None]

    def power(drop_points: int) -> float:
        p = np.clip(rates - drop_points / 100, 0.0, 1.0)
        c = ((u < p[None, :, None]) & valid).sum(axis=2).astype(np.int64)
        return float(pass_rate_decide(bb, nb, c, nc, alpha, deep).mean())

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
                    target: float = 0.8, sims: int = 200, seed: int = 0) -> float | None:
    """Smallest uniform per-task drop (in rate, 0.01 steps) caught with ``target`` power.

    Simulated with the baseline held as observed and each task's true rate taken to be its
    baseline rate, the candidate drawn at that rate minus the drop (floored at 0), through the
    same decision rule as the verdict. ``None``: even breaking every task is not reliably seen.
    Cached: the answer depends only on the baseline counts and the candidate's depth.
    """
    if len(b) == 0 or sims <= 0:
        return None
    return _detectable_drop_cached(tuple(int(x) for x in b), tuple(int(x) for x in n_b),
                                   tuple(int(x) for x in n_c), alpha, target, sims, seed)


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
    (gate/metrics.py): a mean one column, a ratio two (numerator, denominator)."""

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


def _chunk_means(vals: FloatArray, nb: int, nc: int, permutations: int,
                 seed: tuple[int, ...]) -> tuple[list[FloatArray], list[FloatArray]]:
    """Per-task arm means of ``vals`` (G tasks, M = nb + nc runs, any number of columns) for
    the observed labels (row 0) and ``permutations`` relabellings drawn from their own seeded
    stream: per column, the baseline's and the candidate's means shaped (G, R + 1).

    A relabelling picks which runs are "candidate" (or, when fewer, which are "baseline") as a
    uniformly random subset, and sums the picked runs in ascending index order. The observed
    row takes the same path, so a relabelling identical to the observed one gives bit-identical
    statistics (it must count as "as extreme"). Works column by column on arrays shaped
    (G, R + 1), gathering from the flattened column, which keeps every gather contiguous."""
    g, m = vals.shape[0], nb + nc
    rng = np.random.default_rng(seed)
    pick_candidates = nc <= nb
    k = nc if pick_candidates else nb
    _, ordered = _subsets(rng, (g, permutations), m, k)
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
                seed: tuple[int, ...], delta: FloatArray, lay: Layout) -> _Sums:
    """The statistics of :func:`permutation_tests` summed over the G tasks of ``vals``, for
    the observed labels and the relabellings of :func:`_chunk_means`."""
    base, cand = _chunk_means(vals, nb, nc, permutations, seed)
    log_ratio, hit_diff, hit_n = _per_task(base, cand, delta, lay, axis=0)
    return _Sums(base=np.stack([b.sum(axis=0) for b in base], axis=1),
                 cand=np.stack([c.sum(axis=0) for c in cand], axis=1),
                 log_ratio=log_ratio, hit_diff=hit_diff, hit_n=hit_n)


def _chunk_arm_sums(vals: FloatArray, nb: int, nc: int, permutations: int,
                    seed: tuple[int, ...]) -> tuple[FloatArray, FloatArray]:
    """Σ over the chunk's tasks of each arm's per-task means, shaped (R + 1, cols)."""
    base, cand = _chunk_means(vals, nb, nc, permutations, seed)
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
    """``fn(values, n_b, n_c, permutations, chunk seed, *extra)`` over the tasks, chunk by chunk.

    Tasks with the same (n_b, n_c) are shuffled together; a chunk holds ≈ 4M random numbers,
    so memory stays flat however large the suite. Each chunk draws from its own stream, seeded
    by (seed, shape, first task), so chunks run on every core and the result does not depend
    on how many there are; they are yielded in order, so the sums are reproducible bit for bit.
    """
    by_shape: dict[tuple[int, int], list[int]] = {}
    for i, t in enumerate(tasks):
        by_shape.setdefault((len(t.baseline), len(t.candidate)), []).append(i)
    jobs: list[tuple[Any, ...]] = []
    for (nb, nc), idx in by_shape.items():
        m = nb + nc
        values = np.stack([np.concatenate([tasks[i].baseline, tasks[i].candidate]) for i in idx])
        chunk = max(1, 4_000_000 // max(1, m * permutations))
        for start in range(0, len(idx), chunk):
            jobs.append((values[start:start + chunk], nb, nc, permutations,
                         (seed, nb, nc, start), *extra))
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
    """The tests of ``lay``'s metrics (gate/metrics.py) on the same relabellings (one seeded
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
    exact = labellings([(len(t.baseline), len(t.candidate)) for t in tasks]) <= permutations + 1
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


def labellings(shapes: Sequence[tuple[int, int]], cap: int = 10**12) -> int:
    """How many distinct within-task relabellings a design has: Π_i C(n_i^B + n_i^C, n_i^C)
    over its (n_i^B, n_i^C), capped at ``cap`` (only "more than so many" matters)."""
    total = 1
    for nb, nc in shapes:
        total *= math.comb(nb + nc, nc)
        if total > cap:
            return cap + 1
    return total


def min_permutation_p(shapes: Sequence[tuple[int, int]], permutations: int) -> float:
    """The smallest p-value the permutation test can give on this design, whatever the data.

    Enumerated exactly (at most ``permutations + 1`` labellings): 1/L, the observed labelling
    being the single most extreme one. Sampled: (1 + R/L) / (R + 1), the expected count of the
    observed labelling among R random ones, counted with it: never below 1/(R + 1)."""
    total = labellings(shapes)
    if total <= permutations + 1:
        return 1.0 / total
    return (1.0 + permutations / total) / (permutations + 1)


def exact_relabelled_sums(tasks: Sequence[TaskSamples], delta: FloatArray,
                          lay: Layout) -> _Sums:
    """:class:`_Sums` of the observed labels (row 0) and then of *every* relabelling within
    each task (L rows, the observed one among them), for :func:`permutation_tests` on a design
    small enough to enumerate (:func:`labellings`)."""
    per_task: list[tuple[FloatArray, FloatArray]] = []
    observed: list[int] = []
    for t in tasks:
        nb, nc = len(t.baseline), len(t.candidate)
        vals = np.concatenate([t.baseline, t.candidate])
        combos = np.array(list(itertools.combinations(range(nb + nc), nc)), dtype=np.int64)
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


def collapse_p(b: IntArray, n_b: IntArray, n_c: IntArray, deep: bool) -> float:
    """The deciding pass-rate p-value if every candidate run of every task failed: the
    smallest the test can reach against this baseline with these runs (0 passes is the most
    extreme outcome for both the sum and the max test)."""
    zero = np.zeros((1, len(b)), dtype=np.int64)
    p_sum = float(sum_test(b, n_b, zero, n_c)[0])
    p_max = float(max_test(b, n_b, zero, n_c)[0][0]) if deep else 1.0
    return decisive_p(p_sum, p_max, deep)
