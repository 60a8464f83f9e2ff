"""The confidence interval of the pass-rate difference, and the one Wilson interval every
view shows (moved out of gate/compare/_stats.py verbatim; that module re-exports both)."""

from __future__ import annotations

from collections.abc import Callable
from statistics import NormalDist

import numpy as np
from numpy.typing import NDArray

IntArray = NDArray[np.int64]

_NORMAL = NormalDist()  # not scipy.stats: importing scipy costs ~1 s of CPU per `gate compare`


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


def _log_comb(n: int, ks: IntArray) -> NDArray[np.float64]:
    from math import lgamma

    head = lgamma(n + 1)
    return np.array([head - lgamma(k + 1) - lgamma(n - k + 1) for k in ks.tolist()])


def _tail(x: int, n: int, ks: IntArray, log_comb: NDArray[np.float64], p: float, *,
          upper: bool) -> float:
    """P(b ≥ x) (``upper``) or P(b ≤ x) for b ~ Binomial(n, p) given b in ``ks`` (the
    plan's range; ``log_comb``: log C(n, k) for each)."""
    w = log_comb + ks * np.log(p) + (n - ks) * np.log1p(-p)
    w = np.exp(w - w.max())
    keep = ks >= x if upper else ks <= x
    return float(w[keep].sum() / w.sum())


def _solve(f: Callable[[float], float], target: float, increasing: bool) -> float:
    """The p in (0, 1) where the monotone ``f`` crosses ``target`` (bisection)."""
    a, b = 1e-12, 1 - 1e-12
    for _ in range(60):
        mid = (a + b) / 2
        if (f(mid) < target) == increasing:
            a = mid
        else:
            b = mid
    return (a + b) / 2


def given_plan_limits(x: int, n: int, lo: int, hi: int, level: float) -> tuple[float, float]:
    """An exact (Clopper–Pearson) interval for a task's baseline pass rate given that its
    pass count lies in [lo, hi] (the plan's range): the rates p under which neither tail
    of the truncated binomial at x is below (1 − level)/2. The truncated family is monotone
    likelihood ratio in p, so each tail is monotone and one bisection finds each limit."""
    a = (1 - level) / 2
    ks = np.arange(lo, hi + 1, dtype=np.int64)
    lc = _log_comb(n, ks)
    low = 0.0 if x <= lo else _solve(lambda p: _tail(x, n, ks, lc, p, upper=True), a, True)
    high = 1.0 if x >= hi else _solve(lambda p: _tail(x, n, ks, lc, p, upper=False), a, False)
    return low, high


def arm_limits_given(b: IntArray, n_b: IntArray, allowed: IntArray, level: float = 0.95
                     ) -> tuple[float, float] | None:
    """The baseline arm's task-equal-weight pass rate interval given the plan (docs/statistics.md
    §2a): the MOVER sum (Zou) of per-task intervals — :func:`given_plan_limits` for a task its
    range [lo, hi] cuts, Wilson at the task's runs for one it does not. None when the range cuts
    no task (the plain stratified Wilson interval stands)."""
    lo_r, hi_r = allowed[:, 0], allowed[:, 1]
    cut = (lo_r > 0) | (hi_r < n_b)
    if not cut.any():
        return None
    z = _NORMAL.inv_cdf(0.5 + level / 2)
    w = 1.0 / len(b)
    rates = b / n_b
    pb = float(np.mean(rates))
    below = above = 0.0
    for i in range(len(b)):
        x, m, r = int(b[i]), int(n_b[i]), float(rates[i])
        lo, hi = (given_plan_limits(x, m, int(lo_r[i]), int(hi_r[i]), level) if cut[i]
                  else _wilson(r, m, z))
        below += (w * max(0.0, r - lo)) ** 2
        above += (w * max(0.0, hi - r)) ** 2
    return max(0.0, pb - float(np.sqrt(below))), min(1.0, pb + float(np.sqrt(above)))


def pass_rate_ci_given(b: IntArray, n_b: IntArray, c: IntArray, n_c: IntArray,
                       allowed: IntArray, level: float = 0.95) -> tuple[float, float, float]:
    """:func:`pass_rate_ci` given the plan (docs/statistics.md §2a): when the PR's runs were
    planned from the baseline's outcomes, a task's baseline pass count is only known to lie in
    its plan's range [lo, hi], so given the plan it is a truncated binomial and the plain
    baseline arm's Wilson interval is not a 95 % interval any more. The candidate's runs are
    fresh draws whatever their number, so that arm keeps its stratified Wilson interval; the
    baseline arm's is :func:`arm_limits_given`, and the two are combined by Newcombe's method
    as in :func:`pass_rate_ci`. A range that cuts no task gives :func:`pass_rate_ci` exactly."""
    arm = arm_limits_given(b, n_b, allowed, level)
    if arm is None:
        return pass_rate_ci(b, n_b, c, n_c, level)
    z = _NORMAL.inv_cdf(0.5 + level / 2)
    w = 1.0 / len(b)
    pb, pc = float(np.mean(b / n_b)), float(np.mean(c / n_c))
    lb, ub = arm
    lc, uc = _wilson(pc, 1.0 / float(np.sum((w * w) / n_c)), z)
    d = pc - pb
    low = d - float(np.sqrt((pc - lc) ** 2 + (ub - pb) ** 2))
    high = d + float(np.sqrt((uc - pc) ** 2 + (pb - lb) ** 2))
    return d, max(-1.0, low), min(1.0, high)
