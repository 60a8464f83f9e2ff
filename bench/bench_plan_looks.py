"""Would a third look spend runs better? (docs/statistics.md §5a, issue 40; it did: the first
three-look design below is what ships, ``sequential_looks = 3``)

The sequential procedure before it had two looks (``sequential_looks = 2``, this benchmark's
"shipped" column): the plan's first (2 runs a task above half, 1
below) at α/2, and when that is unsure its second (5 more above half, 2 below) at α/2. A
harmless PR that looks again pays the whole second look; most collapses are plain after a few
of its runs. A design of three looks splits the second: a small one (2 more above half, 1
below, none on a task that never passed) at α/4 after a first look at α/4, and the rest at
α/2. False blocks stay within α by the same union bound (α/4 + α/4 + α/2), each look's test
exact given the plan on its own fixed design; the last look keeps α/2 and sees at least the
runs today's second look sees, so what today's design blocks at its end, this one can too.

    python bench/bench_plan_looks.py [--trials 2000] [--seed 20261206] [--stops 0.13,0.13]

``--stops``: the pass-rate p above which each look but the last stops as "no regression" (the
sum and the max test's both above it; the shipped first look: 0.13). Rows are
bench/bench_plan.py's scenarios and suite (15 tasks, a baseline of 20 runs a task, the shipped
bands and their plan-conditional tests); each cell "blocked · runs per task". The pass-rate
tests alone (as bench/bench_plan_subset.py): turns, cost and cache hits are left out, so the
runs sit below bench/bench_plan.py's, whose harmless PRs also look again when a metric is
unclear; the designs are compared on equal terms. The shipped column is two looks at the
shipped stop whatever ``--stops`` says, and "today" the procedure before the plan (2 then 3 on
every task, unconditioned, stopping at p > 0.25), as bench/bench_plan.py's "today".
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from gate.compare import PlanSettings

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_plan  # the scenarios, the suite and the draws are that benchmark's
from bench_plan_subset import draws, judged, print_table, shipped


@dataclass(frozen=True)
class Design:
    """Each band's runs per look (keyed by the shipped rule's two looks for the band) and each
    look's share of α."""

    name: str
    looks: dict[tuple[int, int], tuple[int, ...]]
    shares: tuple[float, ...]

    def increments(self, shipped_looks: Sequence[tuple[int, int]]) -> np.ndarray:
        """(looks, tasks): the runs each task adds in each look."""
        return np.array([self.looks[lk] for lk in shipped_looks], dtype=np.int64).T


SHIPPED = Design("shipped: two looks", {(2, 5): (2, 5), (1, 2): (1, 2), (1, 1): (1, 1)},
                 (0.5, 0.5))
DESIGNS = [
    Design("three looks: 2+2+3 / 1+1+1 / 1+0+1",
           {(2, 5): (2, 2, 3), (1, 2): (1, 1, 1), (1, 1): (1, 0, 1)}, (0.25, 0.25, 0.5)),
    Design("three looks: 2+2+4 / 1+1+2 / 1+0+1",
           {(2, 5): (2, 2, 4), (1, 2): (1, 1, 2), (1, 1): (1, 0, 1)}, (0.25, 0.25, 0.5)),
    Design("three looks: 2+2+5 / 1+1+2 / 1+0+1",
           {(2, 5): (2, 2, 5), (1, 2): (1, 1, 2), (1, 1): (1, 0, 1)}, (0.25, 0.25, 0.5)),
]


TODAY_STOP = 0.25  # the first look's stop before the plan


def looked(b: np.ndarray, pool: np.ndarray, allowed: np.ndarray | None, increments: np.ndarray,
           shares: Sequence[float], stops: Sequence[float], alpha: float) -> tuple[bool, int]:
    """(blocked, runs) of one PR through the looks: each judged on all its runs so far at its
    share of ``alpha``, each but the last stopping when both p-values are above its stop."""
    n_c = np.zeros(len(b), dtype=np.int64)
    for k, (inc, share) in enumerate(zip(increments, shares, strict=True)):
        n_c = n_c + inc
        c = np.array([pool[i, :n].sum() for i, n in enumerate(n_c.tolist())], dtype=np.int64)
        block, p_sum, p_max = judged(b, c, n_c, allowed, alpha * share)
        last = k == len(shares) - 1
        stop = stops[min(k, len(stops) - 1)]
        if block or last or (p_sum > stop and p_max > stop):
            return block, int(n_c.sum())
    raise AssertionError("unreachable")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trials", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=20261206)
    ap.add_argument("--stops", default="0.13,0.13",
                    help="each look's stop but the last's, comma-separated (shipped: 0.13)")
    args = ap.parse_args()
    stops = [float(x) for x in args.stops.split(",")]
    settings = bench_plan.TWO_LOOKS
    ps = PlanSettings.of(settings, replications=3, sequential=True)
    designs = [SHIPPED, *DESIGNS]
    names = ["today (2 + 3, unplanned)", *(d.name for d in designs)]
    rates = np.array(bench_plan.RATES)
    started = time.monotonic()
    table: dict[str, list[tuple[float, float]]] = {}
    for scenario in bench_plan.SCENARIOS:
        hits, runs = np.zeros(len(names)), np.zeros(len(names))
        for base, pool in draws(scenario, args.trials, args.seed):
            plans = [shipped(row, ps) for row in base]
            given = [a for _, a in plans]
            allowed = None if any(a is None for a in given) else np.array(given, dtype=np.int64)
            b = base.sum(axis=1).astype(np.int64)
            uniform = np.array([[2] * len(rates), [3] * len(rates)], dtype=np.int64)
            block, n = looked(b, pool, None, uniform, (0.5, 0.5), [TODAY_STOP], settings.alpha)
            hits[0] += block
            runs[0] += n / len(rates)
            for j, d in enumerate(designs, start=1):
                inc = d.increments([lk for lk, _ in plans])
                stop = [settings.stop_p(0)] if d is SHIPPED else stops
                block, n = looked(b, pool, allowed, inc, d.shares, stop, settings.alpha)
                hits[j] += block
                runs[j] += n / len(rates)
        table[scenario] = [(h / args.trials, r / args.trials)
                           for h, r in zip(hits, runs, strict=True)]
    print(f"15 tasks (true pass rates {', '.join(f'{r:g}' for r in bench_plan.RATES)}), "
          f"baseline {bench_plan.DEPTH} runs a task; {args.trials} PRs per row, every design "
          f"on the same draws; pass-rate tests only (alpha {settings.alpha:g}); three looks "
          f"stop at p > {', then '.join(f'{s:g}' for s in stops)}; seed {args.seed}; "
          f"{time.monotonic() - started:.0f} s. Each cell: blocked · runs per task.\n")
    print_table(names, table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
