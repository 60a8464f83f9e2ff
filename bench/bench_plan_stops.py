"""Where the planned looks' stop rule can sit: harmless runs per task against power, per threshold.

The plan's first look stops a PR as "no regression" when its pass-rate p-value is above
``sequential_pass_p`` (0.13) and no gating metric is past its margin at p ≤ 0.13; otherwise the
second look runs. The issue-40 targets pull this threshold two ways: a harmless PR must spend
≤ 2.5 runs a task, and one task in 15 collapsing must be blocked in ≥ 50 % of PRs, while a
uniform −20-point drop and a mid-rate task collapsing stay no worse than before the plan.

This benchmark draws each scenario of bench/bench_plan.py once per PR (the same suite, the same
pooled 20-run baseline, the same plan of rule ``by-pass-rate``), judges BOTH looks of every PR
through the real ``judge``, and then reads, for each stop rule of a grid, what the PR would have
cost and decided: a rule only chooses between the first look's verdict and the second's, so
every rule is measured on the same runs. The rule's two thresholds are separate: one for the
sum test's p-value, one for the max test's (the deep baseline's per-task test; ``decisive_p``
takes the smaller of the two, so today both are ``sequential_pass_p``).

    python bench/bench_plan_stops.py [--trials N] [--jobs J] [--seed S] [--permutations P]

docs/statistics.md §5a has the table it printed.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from gate.compare import Comparison, PlanSettings, judge, plan_runs
from gate.compare._synthetic import synthetic_results
from gate.execution.sequential import first_look

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_plan  # the scenarios, the suite and the draws are that benchmark's

#: (sum test's threshold, max test's threshold): the shipped rule is (0.13, 0.13)
GRID: tuple[tuple[float, float], ...] = (
    (0.13, 0.13), (0.13, 0.05), (0.13, 0.03), (0.10, 0.05), (0.08, 0.03), (0.05, 0.13),
    (0.05, 0.16), (0.03, 0.16), (0.13, 0.16), (0.13, 0.20), (0.20, 0.20), (0.20, 0.25))


@dataclass(frozen=True)
class Draw:
    """One PR: both looks judged, and what a stop rule needs to choose between them."""

    first: str  # the first look's verdict
    second: str  # the second look's
    runs: tuple[int, int]  # PR runs through the first look, through both
    forced: bool | None  # True: the first look must continue whatever the rule (design-blind
    # or a gating metric past its margin with p ≤ 0.13); None: it stands (block, or a
    # verdict more runs would not change)
    p_sum: float | None
    p_max: float | None  # None without a deep baseline (the max test does not count)


def _draw(c1: Comparison, c2: Comparison, runs: tuple[int, int]) -> Draw:
    step = first_look(c1.model_copy(update={"pass_rate_test": None}), 0.13)
    t = c1.pass_rate_test
    if c1.verdict != "pass":
        forced: bool | None = True if step == "continue" else None
    else:
        forced = step == "continue"  # without the pass-rate test: only the metrics' reason
    return Draw(c1.verdict, c2.verdict, runs, forced,
                t.p_sum if t is not None else None,
                t.p_max if t is not None and t.deep_baseline else None)


def run_scenario(job: tuple[str, int, int, int]) -> tuple[str, list[Draw]]:
    scenario, draws, seed, permutations = job
    rng = np.random.default_rng(seed)
    settings = bench_plan.TWO_LOOKS.model_copy(update={"permutations": permutations})
    out = []
    for _ in range(draws):
        base = synthetic_results(list(bench_plan.RATES), bench_plan.DEPTH, rng)
        plan = plan_runs(base, [(t, i.digest) for t, i in base.suite.tasks.items()],
                         PlanSettings.of(settings, replications=3, sequential=True))
        pool = synthetic_results(bench_plan.truth(scenario, rng),
                                 bench_plan.pool_runs(plan.through(2), bench_plan.TODAY), rng)
        looks = list(plan.settings.uniform())
        f1 = bench_plan.take(pool, plan.through(1), looks[:1], plan, 1)
        f2 = bench_plan.take(pool, plan.through(2), looks, plan, 2)
        out.append(_draw(judge(base, f1, settings), judge(base, f2, settings),
                         (len(f1.runs), len(f2.runs))))
    return scenario, out


def decide(d: Draw, sum_p: float, max_p: float) -> tuple[str, int]:
    """The PR's verdict and runs under the stop rule (``sum_p``, ``max_p``)."""
    if d.forced is None:
        return d.first, d.runs[0]
    go = d.forced or (d.p_sum is not None and d.p_sum <= sum_p) or (
        d.p_max is not None and d.p_max <= max_p)
    return (d.second, d.runs[1]) if go else (d.first, d.runs[0])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trials", type=int, default=1000, help="PRs per scenario")
    ap.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1))
    ap.add_argument("--seed", type=int, default=20261206)
    ap.add_argument("--permutations", type=int, default=1999)
    args = ap.parse_args(argv)
    chunk = max(1, min(100, args.trials))
    jobs = [(s, min(chunk, args.trials - k), args.seed + 1000 * i + k, args.permutations)
            for i, s in enumerate(bench_plan.SCENARIOS) for k in range(0, args.trials, chunk)]
    start = time.perf_counter()
    draws: dict[str, list[Draw]] = {s: [] for s in bench_plan.SCENARIOS}
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        for scenario, got in pool.map(run_scenario, jobs):
            draws[scenario] += got
    tasks = len(bench_plan.RATES)
    print(f"{args.trials} PRs per scenario, both looks judged, plan by-pass-rate; seed "
          f"{args.seed}, {args.permutations} permutations; {time.perf_counter() - start:.0f} s "
          f"on {args.jobs} process(es). Each cell: blocked % · runs per task.\n")
    print("| stop at sum p > · max p > | " + " | ".join(bench_plan.SCENARIOS) + " |")
    print("|---|" + "--:|" * len(bench_plan.SCENARIOS))
    for sum_p, max_p in GRID:
        cells = []
        for s in bench_plan.SCENARIOS:
            outs = [decide(d, sum_p, max_p) for d in draws[s]]
            blocked = sum(v == "regression" for v, _ in outs) / len(outs)
            runs = sum(r for _, r in outs) / len(outs) / tasks
            cells.append(f"{100 * blocked:.1f} % · {runs:.2f}")
        print(f"| {sum_p:g} · {max_p:g} | " + " | ".join(cells) + " |")
    print("\n" + why_again(draws[bench_plan.SCENARIOS[0]], *GRID[0]))
    return 0


def why_again(draws: list[Draw], sum_p: float, max_p: float) -> str:
    """Why harmless PRs looked again under the stop rule (``sum_p``, ``max_p``): for the
    pass-rate p alone, only because the first look was forced on (blind, or a gating metric
    past its margin that it could not settle), or both."""
    rate = [d.forced is not None and ((d.p_sum is not None and d.p_sum <= sum_p)
                                      or (d.p_max is not None and d.p_max <= max_p))
            for d in draws]
    forced = [bool(d.forced) for d in draws]
    both = sum(r and f for r, f in zip(rate, forced, strict=True))
    again = sum(r or f for r, f in zip(rate, forced, strict=True))
    return (f"{bench_plan.SCENARIOS[0]} at {sum_p:g} · {max_p:g}: {again} of {len(draws)} looked "
            f"again: {sum(rate) - both} for the pass-rate p alone, {sum(forced) - both} only "
            f"because the first look was forced on (blind or unclear), {both} for both.")


if __name__ == "__main__":
    sys.exit(main())
