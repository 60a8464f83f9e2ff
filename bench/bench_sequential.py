"""Sequential PR runs vs a fixed k = 5: false blocks, power, and runs spent.

Synthetic suites with a known truth go through the code path `gate ci` uses
(``gate.execution.sequential.first_look`` and ``gate.compare.compare`` at α/2): a first look at
2 runs per task, and 3 more only when that look is unsure. Printed as a Markdown table.

    python bench/bench_sequential.py [--trials N] [--depth 20]
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

from gate.compare import compare
from gate.compare._synthetic import reference_rates, synthetic_results
from gate.core.config import GateSettings
from gate.core.results import Results
from gate.execution.sequential import first_look


def _first(results: Results, k: int) -> Results:
    return results.model_copy(update={"runs": [r for r in results.runs if r.replication < k]})


def trial(rates: list[float], cand: list[float], depth: int, rng: np.random.Generator,
          settings: GateSettings) -> tuple[bool, bool, int]:
    """(sequential blocks, fixed-5 blocks, runs per task the sequential design spent)."""
    half = settings.model_copy(update={"alpha": settings.alpha / 2})
    baseline = synthetic_results(rates, depth, rng)
    candidate = synthetic_results(cand, 5, rng)
    fixed = compare(baseline, candidate, settings).verdict == "regression"
    look = compare(baseline, _first(candidate, settings.sequential_first), half)
    step = first_look(look, settings.stop_p(0))
    if step != "continue":
        return step == "block", fixed, settings.sequential_first
    final = compare(baseline, candidate, half)
    return final.verdict == "regression", fixed, 5


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=300)
    ap.add_argument("--depth", type=int, default=20, help="baseline runs per task")
    ap.add_argument("--seed", type=int, default=20261130)
    args = ap.parse_args()
    settings = GateSettings(permutations=999, power_simulations=0, sequential_looks=2)
    rates = reference_rates(15)
    n = len(rates)
    scenarios = {
        "A/A (unchanged)": rates,
        "−20 pts": [max(r - 0.2, 0.0) for r in rates],
        "3 tasks → 0": [0.0 if i in {0, n * 6 // 15, n * 12 // 15} else r
                        for i, r in enumerate(rates)],
    }
    t0 = time.monotonic()
    print(f"15 tasks, baseline {args.depth} runs/task, {args.trials} trials per row, "
          f"alpha {settings.alpha}")
    print("| scenario | sequential: blocks | fixed k = 5: blocks | sequential: runs/task |")
    print("|---|--:|--:|--:|")
    for name, cand in scenarios.items():
        rng = np.random.default_rng(args.seed)
        seq = fix = spent = 0
        for _ in range(args.trials):
            s, f, k = trial(rates, cand, args.depth, rng, settings)
            seq, fix, spent = seq + s, fix + f, spent + k
        print(f"| {name} | {seq / args.trials:.1%} | {fix / args.trials:.1%} | "
              f"{spent / args.trials:.2f} |")
    print(f"({time.monotonic() - t0:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
