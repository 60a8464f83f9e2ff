"""The confidence interval of the pass-rate difference, and the one Wilson interval every
view shows (moved out of gate/compare/_stats.py verbatim; that module re-exports both)."""

from __future__ import annotations

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
