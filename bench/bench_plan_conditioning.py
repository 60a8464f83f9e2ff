"""What keeping the pass-rate test exact costs when the PR's runs are planned from the
baseline's outcomes (gate/compare/_restricted.py), beside the other ways to keep it exact.

A 15-task suite, a pooled baseline of 20 runs a task, true pass rates spread 0.35..1.0, and a
band rule: 4 PR runs if the baseline's rate is ≥ 0.9, 3 if ≥ 0.5, else 1. Each draw draws a
fresh baseline, plans from it, draws the PR and decides with the verdict's pass-rate rule
(``pass_rate_decide``, α = 0.01, the deep-baseline split). Methods:

* ``uniform 3``: 3 runs on every task, the plain test (today's design at about the same runs);
* ``band, plain``: planned from the baseline the test uses, the plain test (not exact);
* ``band, given plan``: the same, every p-value given the plan (exact);
* ``band, independent``: planned from another 20-run baseline (an older pool), tested
  against this one with the plain test (exact: the test does not use the runs planned from);
* ``band, split 10/10``: planned from 10 of the 20 runs, tested against the other 10 (exact).

Run: python3 -m bench.bench_plan_conditioning [--draws 2000] [--seed 0]
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import numpy as np

from gate.compare import _stats

N, NB, ALPHA = 15, 20, 0.01
RATES = np.linspace(0.35, 1.0, N)


def band_runs(b: np.ndarray, n: np.ndarray) -> np.ndarray:
    rate = b / n
    return np.where(rate >= 0.9, 4, np.where(rate >= 0.5, 3, 1)).astype(np.int64)


def band_allowed(b: np.ndarray, n: np.ndarray) -> np.ndarray:
    """The baseline pass counts (of n) under which :func:`band_runs` gives the same runs."""
    top, mid = np.ceil(0.9 * n).astype(np.int64), np.ceil(0.5 * n).astype(np.int64)
    lo = np.where(b >= top, top, np.where(b >= mid, mid, 0))
    hi = np.where(b >= top, n, np.where(b >= mid, top - 1, mid - 1))
    return np.stack([lo, hi], axis=1)


def scenarios(rng: np.random.Generator) -> dict[str, Callable[[], np.ndarray]]:
    def collapse(k: int) -> np.ndarray:
        r = RATES.copy()
        r[rng.choice(N, k, replace=False)] = 0.0
        return r

    mid = int(np.argmin(np.abs(RATES - 0.6)))
    return {
        "A/A": lambda: RATES.copy(),
        "3 of 15 collapse": lambda: collapse(3),
        "1 of 15 collapse": lambda: collapse(1),
        "uniform -20 pts": lambda: np.clip(RATES - 0.2, 0, 1),
        f"mid task ({RATES[mid]:.2f}) to 0": lambda: np.where(np.arange(N) == mid, 0.0, RATES),
    }


def one_draw(rng: np.random.Generator, pr: np.ndarray) -> dict[str, tuple[bool, float]]:
    """(blocked, runs per task) of each method on one draw."""
    nb = np.full(N, NB)
    base = rng.random((N, NB)) < RATES[:, None]
    b = base.sum(axis=1)
    deep = _stats.is_deep(nb)
    out = {}

    def decide(bb: np.ndarray, nbb: np.ndarray, nc: np.ndarray,
               allowed: np.ndarray | None = None) -> tuple[bool, float]:
        c = rng.binomial(nc, pr)[None, :]
        blocked = bool(_stats.pass_rate_decide(bb, nbb, c, nc, ALPHA, _stats.is_deep(nbb),
                                               allowed)[0])
        return blocked, float(nc.mean())

    out["uniform 3"] = decide(b, nb, np.full(N, 3))
    nc = band_runs(b, nb)
    c = rng.binomial(nc, pr)[None, :]
    out["band, plain"] = (bool(_stats.pass_rate_decide(b, nb, c, nc, ALPHA, deep)[0]),
                          float(nc.mean()))
    out["band, given plan"] = (bool(_stats.pass_rate_decide(b, nb, c, nc, ALPHA, deep,
                                                            band_allowed(b, nb))[0]),
                               float(nc.mean()))
    older = rng.binomial(NB, RATES)
    out["band, independent"] = decide(b, nb, band_runs(older, nb))
    half = np.full(N, NB // 2)
    first, second = base[:, :NB // 2].sum(axis=1), base[:, NB // 2:].sum(axis=1)
    out["band, split 10/10"] = decide(second, half, band_runs(first, half))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--draws", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    start = time.monotonic()
    rows: dict[str, dict[str, tuple[float, float]]] = {}
    for name, truth in scenarios(rng).items():
        hits: dict[str, list[tuple[bool, float]]] = {}
        for _ in range(args.draws):
            for method, res in one_draw(rng, truth()).items():
                hits.setdefault(method, []).append(res)
        rows[name] = {m: (float(np.mean([x for x, _ in v])), float(np.mean([r for _, r in v])))
                      for m, v in hits.items()}
    methods = list(next(iter(rows.values())))
    print(f"{args.draws} draws per scenario; blocked share (runs per task), α = {ALPHA}")
    print(f"{'scenario':<24}" + "".join(f"{m:>20}" for m in methods))
    for name, res in rows.items():
        print(f"{name:<24}" + "".join(f"{res[m][0] * 100:>12.1f} % ({res[m][1]:.2f})"
                                      for m in methods))
    print(f"({time.monotonic() - start:.0f} s)")


if __name__ == "__main__":
    main()
