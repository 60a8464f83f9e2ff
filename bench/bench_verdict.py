"""How good is the verdict? False blocks on unchanged PRs and power against real drops.

Synthetic results with a known truth go through the very code path users get
(``gate.compare.compare``): a pair of results files drawn from the same pass probabilities
(A/A) must almost never block; a drop must block often. Printed as a Markdown table
(recorded in docs/statistics.md).

    python bench/bench_verdict.py [--trials N] [--jobs J] [--tasks N ...]

``--trials`` is the number of A/A pairs per row; each power column uses half as many.
Power here is the pass-rate test's (does the pass-rate metric block); the A/A columns give
both the pass-rate test alone and the whole verdict (all four metrics gating).
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

from gate.compare import _stats, compare
from gate.compare._synthetic import reference_rates, synthetic_results
from gate.core.config import GateSettings

REPO = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Job:
    n_tasks: int
    depth: int  # baseline runs per task
    k: int  # candidate runs per task
    scenario: str  # aa | drop10 | drop20 | broken3 | cost50
    trials: int
    seed: int
    permutations: int


def _candidate_rates(rates: list[float], scenario: str) -> list[float]:
    if scenario == "drop10":
        return [max(r - 0.10, 0.0) for r in rates]
    if scenario == "drop20":
        return [max(r - 0.20, 0.0) for r in rates]
    if scenario == "broken3":  # one easy, one medium, one hard task broken
        n = len(rates)
        broken = {0, n * 6 // 15, n * 12 // 15}
        return [0.0 if i in broken else r for i, r in enumerate(rates)]
    return list(rates)


def run_job(job: Job) -> tuple[Job, dict[str, int]]:
    """Count outcomes over ``job.trials`` seeded pairs."""
    rng = np.random.default_rng(job.seed)
    settings = GateSettings(permutations=job.permutations, power_simulations=0)
    rates = reference_rates(job.n_tasks)
    cand_rates = _candidate_rates(rates, job.scenario)
    cost = 1.5 if job.scenario == "cost50" else 1.0
    counts = {"pass_rate": 0, "verdict": 0, "naive": 0, "cost": 0}
    for _ in range(job.trials):
        base = synthetic_results(rates, job.depth, rng)
        cand = synthetic_results(cand_rates, job.k, rng, cost_scale=cost)
        c = compare(base, cand, settings)
        counts["pass_rate"] += c.metric("pass_rate").blocks
        counts["cost"] += c.metric("cost").blocks
        counts["verdict"] += c.verdict == "regression"
        counts["naive"] += cand.summary.passed * job.depth < base.summary.passed * job.k
    return job, counts


def exact_aa_rate(n_tasks: int, depth: int, k: int, pairs: int, seed: int) -> float:
    """The pass-rate test's A/A false-block rate over many pairs, precisely.

    Calls the same decision functions ``compare`` uses (``_stats.sum_test``/``max_test`` and
    ``pass_rate_blocks``) on drawn pass counts, skipping the results files and the metric tests,
    so tens of thousands of pairs cost seconds and the rate is known to ±0.1 %.
    """
    rng = np.random.default_rng(seed)
    rates = np.array(reference_rates(n_tasks))
    nb, nc = np.full(n_tasks, depth), np.full(n_tasks, k)
    deep = _stats.is_deep(nb)
    b = rng.binomial(depth, rates, (pairs, n_tasks))
    c = rng.binomial(k, rates, (pairs, n_tasks))
    blocks = 0
    for i in range(pairs):
        p_sum = _stats.sum_test(b[i], nb, c[i:i + 1], nc)
        p_max = _stats.max_test(b[i], nb, c[i:i + 1], nc)[0] if deep else p_sum
        blocks += bool(_stats.pass_rate_blocks(p_sum, p_max, 0.01, deep)[0])
    return blocks / pairs


def bundled_suite_size() -> int | None:
    tasks = REPO / "tasks"
    if not tasks.is_dir():
        return None
    n = sum(1 for d in tasks.iterdir() if (d / "task.md").is_file())
    return n or None


def _pct(hits: int, n: int) -> str:
    return f"{100 * hits / n:.1f} %"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trials", type=int, default=400, help="A/A pairs per row (default 400)")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--tasks", type=int, nargs="*", default=None,
                    help="suite sizes (default: 15 and the bundled suite's size)")
    ap.add_argument("--permutations", type=int, default=999,
                    help="relabellings per metric test (default 999; gate's default is 9999)")
    ap.add_argument("--exact-pairs", type=int, default=20000,
                    help="pairs for the precise A/A rate of the pass-rate test (default 20000)")
    ap.add_argument("--seed", type=int, default=20261130)
    args = ap.parse_args(argv)
    sizes = args.tasks or sorted({15, bundled_suite_size() or 15})
    designs = [(k, k) for k in (1, 3, 5)] + [(20, k) for k in (1, 3, 5)]
    jobs: list[Job] = []
    seed = args.seed
    for n in sizes:
        for depth, k in designs:
            for scenario, trials in (("aa", args.trials), ("drop10", args.trials // 2),
                                     ("drop20", args.trials // 2),
                                     ("broken3", args.trials // 2)):
                seed += 1
                jobs.append(Job(n, depth, k, scenario, trials, seed, args.permutations))
        for depth, k in ((3, 3), (20, 5)):
            seed += 1
            jobs.append(Job(n, depth, k, "cost50", args.trials // 4, seed, args.permutations))
    start = time.perf_counter()
    exact_keys = [(n, depth, k) for n in sizes for depth, k in designs]
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        exact_futures = [pool.submit(exact_aa_rate, n, depth, k, args.exact_pairs,
                                     args.seed + 7 * i) for i, (n, depth, k) in
                         enumerate(exact_keys)]
        results = {(j.n_tasks, j.depth, j.k, j.scenario): (j, c)
                   for j, c in pool.map(run_job, jobs)}
        exact = {key: f.result() for key, f in zip(exact_keys, exact_futures, strict=True)}
    elapsed = time.perf_counter() - start

    print(f"Verdict benchmark: {args.trials} A/A pairs per row, {args.trials // 2} per power "
          f"column; alpha = 0.01; {args.permutations} permutations; seed {args.seed}; "
          f"{elapsed:.0f} s on {args.jobs} process(es).\n")
    print("| tasks | baseline runs/task | candidate k | A/A blocks: pass-rate test | "
          f"A/A: pass-rate test, {args.exact_pairs} pairs | "
          "A/A blocks: whole verdict | A/A blocks: naive rule | power −10 pts | "
          "power −20 pts | power 3 tasks → 0 |")
    print("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for n in sizes:
        for depth, k in designs:
            aa_job, aa = results[(n, depth, k, "aa")]
            row = [str(n), f"{depth}" + (" (pooled)" if depth == 20 else " (same depth)"),
                   str(k), _pct(aa["pass_rate"], aa_job.trials),
                   f"{100 * exact[(n, depth, k)]:.2f} %",
                   _pct(aa["verdict"], aa_job.trials), _pct(aa["naive"], aa_job.trials)]
            for scenario in ("drop10", "drop20", "broken3"):
                job, c = results[(n, depth, k, scenario)]
                row.append(_pct(c["pass_rate"], job.trials))
            print("| " + " | ".join(row) + " |")
    print()
    print("| tasks | baseline runs/task | candidate k | cost +50 %: blocked | "
          "cost unchanged (A/A): blocked on cost |")
    print("|---:|---:|---:|---:|---:|")
    for n in sizes:
        for depth, k in ((3, 3), (20, 5)):
            job, c = results[(n, depth, k, "cost50")]
            aa_job, aa = results[(n, depth, k, "aa")]
            print(f"| {n} | {depth} | {k} | {_pct(c['cost'], job.trials)} | "
                  f"{_pct(aa['cost'], aa_job.trials)} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
