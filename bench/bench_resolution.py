"""The default verdict under every schedule: false blocks, power, runs spent, and "blind" calls.

Synthetic results with a known truth go through the code `gate ci` runs: ``gate.compare.judge``
(the whole verdict: pass rate, turns, cost, cache-hit rate, the resolution rule) and, for the
sequential design, ``gate.execution.sequential.first_look`` and ``second_look_runs`` (a first
look at 2 runs per task, a second only when unsure or blind). Default settings (``GateSettings()``:
9,999 permutations, sequential on) except no power statement (it never changes a verdict).

Two designs:

* **15 tasks, pooled 20-run baseline** (the statistics design's suite: 6 easy, 6 medium, 3 hard):
  an unchanged agent (A/A), three tasks broken (one easy, one medium, one hard → 0 %), and
  cost ×2 on every run; at a fixed k = 1, 2, 3, 5 and sequentially.
* **1 task** (`gate init`'s scaffold: pass rate 0.93, a 6-run baseline): A/A, the task
  collapsing (→ 0 %), and cost ×7 with the cache broken; at a fixed k = 3 and 6, and
  sequentially.

Prints a Markdown table: blocks (exit 1), inconclusive (exit 3), and runs per task.

    python bench/bench_resolution.py [--trials N] [--seed S]
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from gate.compare import judge
from gate.compare._synthetic import reference_rates, synthetic_results
from gate.core.config import GateSettings
from gate.core.results import Results, Schedule
from gate.execution.sequential import MAX_MORE, first_look, second_look_runs


@dataclass(frozen=True)
class Scenario:
    name: str
    rates: list[float]  # the candidate's true pass rates
    cost_scale: float = 1.0
    cache_hit: list[float] | None = None


def _looks(results: Results, k: int, looks: list[int] | None) -> Results:
    runs = [r for r in results.runs if r.replication < k]
    schedule = Schedule(replications=k, sequential=looks) if looks else None
    return results.model_copy(update={"runs": runs, "schedule": schedule})


def trial(base_rates: list[float], depth: int, sc: Scenario, schedule: str,
          rng: np.random.Generator, settings: GateSettings,
          base_hit: list[float] | None) -> tuple[str, int]:
    """(verdict, runs per task spent) of one PR under ``schedule`` ("k=3" or "sequential")."""
    baseline = synthetic_results(base_rates, depth, rng, cache_hit=base_hit)
    most = settings.sequential_first + max(settings.sequential_more, MAX_MORE)
    pool = synthetic_results(sc.rates, most, rng, cost_scale=sc.cost_scale,
                             cache_hit=sc.cache_hit if sc.cache_hit is not None else base_hit)
    if schedule != "sequential":
        k = int(schedule.removeprefix("k="))
        return judge(baseline, _looks(pool, k, None), settings).verdict, k
    first = settings.sequential_first
    c = judge(baseline, _looks(pool, first, [first]), settings)
    step = first_look(c, settings.stop_p(0))
    if step != "continue":
        return c.verdict, first
    extra = second_look_runs(c, settings)
    final = judge(baseline, _looks(pool, first + extra, [first, extra]), settings)
    return final.verdict, first + extra


def row(label: str, base_rates: list[float], depth: int, sc: Scenario, schedule: str,
        trials: int, seed: int, settings: GateSettings,
        base_hit: list[float] | None = None) -> dict[str, str]:
    rng = np.random.default_rng(seed)
    verdicts, runs = [], []
    for _ in range(trials):
        v, k = trial(base_rates, depth, sc, schedule, rng, settings, base_hit)
        verdicts.append(v)
        runs.append(k)
    n = len(verdicts)
    return {"design": label, "scenario": sc.name, "schedule": schedule,
            "blocks": f"{100 * verdicts.count('regression') / n:.1f} %",
            "inconclusive": f"{100 * verdicts.count('inconclusive') / n:.1f} %",
            "runs/task": f"{np.mean(runs):.2f}"}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=400)
    ap.add_argument("--seed", type=int, default=20261202)
    args = ap.parse_args()
    settings = GateSettings(power_simulations=0, sequential_looks=2)
    t0 = time.monotonic()
    rates = reference_rates(15)
    broken = [0.0 if i in {0, 6, 12} else r for i, r in enumerate(rates)]
    big: list[Scenario] = [Scenario("A/A (unchanged)", rates),
                           Scenario("3 of 15 tasks → 0", broken),
                           Scenario("cost ×2", rates, cost_scale=2.0)]
    one = [0.93]
    small: list[Scenario] = [Scenario("A/A (unchanged)", one),
                             Scenario("the task → 0", [0.0]),
                             Scenario("cost ×7, cache broken", one, cost_scale=7.0,
                                      cache_hit=[0.2])]
    rows: list[dict[str, str]] = []
    jobs: list[Callable[[], dict[str, str]]] = []
    for i, sc in enumerate(big):
        for sched in ("k=1", "k=2", "k=3", "k=5", "sequential"):
            jobs.append(lambda sc=sc, sched=sched, i=i: row(
                "15 tasks, 20-run baseline", rates, 20, sc, sched, args.trials,
                args.seed + i, settings))
    for i, sc in enumerate(small):
        for sched in ("k=3", "k=6", "sequential"):
            jobs.append(lambda sc=sc, sched=sched, i=i: row(
                "1 task, 6-run baseline", one, 6, sc, sched, args.trials, args.seed + 10 + i,
                settings, base_hit=[0.95]))
    for job in jobs:
        rows.append(job())
        print(".", end="", file=sys.stderr, flush=True)
    print(file=sys.stderr)
    print(f"Default settings (alpha 0.01, metric_alpha 0.003, 9,999 permutations, sequential "
          f"2 then ≥ 3); {args.trials} PRs per row; seed {args.seed}; "
          f"{time.monotonic() - t0:.0f} s.\n")
    cols = ["design", "scenario", "schedule", "blocks", "inconclusive", "runs/task"]
    print("| " + " | ".join(cols) + " |")
    print("|" + "|".join("---" if c in cols[:3] else "--:" for c in cols) + "|")
    for r in rows:
        print("| " + " | ".join(r[c] for c in cols) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
