"""How often "⚠️ unclear" fires: for unchanged agents (A/A), and against a change of the margin's
size (the rule's power), through the code `gate ci` runs.

Synthetic results with a known truth (gate/compare/_synthetic.py) go through
``gate.compare.judge`` (the whole verdict, the unclear rule of gate/compare/_unclear.py
included) and, sequentially, ``gate.execution.sequential.first_look`` / ``second_look_runs``:
default settings (``GateSettings()``: 9,999 permutations) except no power statement. Each PR counts
once as blocked (exit 1), unclear (a gating metric read "unclear"), inconclusive for another
reason, or a pass.

    python bench/bench_unclear.py [--trials N] [--seed S]
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass

import numpy as np

from gate.compare import Comparison, judge
from gate.compare._synthetic import reference_rates, synthetic_results
from gate.core.config import GateSettings
from gate.core.results import Results, Schedule
from gate.execution.sequential import MAX_MORE, first_look, second_look_runs


@dataclass(frozen=True)
class Case:
    design: str
    rates: list[float]
    depth: int  # baseline runs per task
    schedule: str  # "k=N" or "sequential"
    scenario: str
    cost_scale: float = 1.0
    hit_drop: float = 0.0  # cache-hit rate points lost on every task


def _looks(results: Results, k: int, looks: list[int] | None) -> Results:
    runs = [r for r in results.runs if r.replication < k]
    return results.model_copy(update={"runs": runs, "schedule": Schedule(
        replications=k, sequential=looks) if looks else None})


def trial(case: Case, rng: np.random.Generator, settings: GateSettings) -> tuple[Comparison, int]:
    hits = [0.8] * len(case.rates)
    baseline = synthetic_results(case.rates, case.depth, rng, cache_hit=hits)
    most = settings.sequential_first + max(settings.sequential_more, MAX_MORE)
    pool = synthetic_results(case.rates, most, rng, cost_scale=case.cost_scale,
                             cache_hit=[h - case.hit_drop for h in hits])
    if case.schedule != "sequential":
        k = int(case.schedule.removeprefix("k="))
        return judge(baseline, _looks(pool, k, None), settings), k
    first = settings.sequential_first
    c = judge(baseline, _looks(pool, first, [first]), settings)
    if first_look(c, settings.stop_p(0)) != "continue":
        return c, first
    extra = second_look_runs(c, settings)
    return judge(baseline, _looks(pool, first + extra, [first, extra]), settings), first + extra


def row(case: Case, trials: int, seed: int, settings: GateSettings) -> dict[str, str]:
    rng = np.random.default_rng(seed)
    blocked = unclear = other = 0
    runs: list[int] = []
    for _ in range(trials):
        c, k = trial(case, rng, settings)
        runs.append(k)
        if c.verdict == "regression":
            blocked += 1
        elif c.resolution is not None and c.resolution.unclear:
            unclear += 1
        elif c.verdict == "inconclusive":
            other += 1
    return {"design": case.design, "schedule": case.schedule, "scenario": case.scenario,
            "blocked": f"{100 * blocked / trials:.1f} %",
            "unclear": f"{100 * unclear / trials:.1f} %",
            "blocked or unclear": f"{100 * (blocked + unclear) / trials:.1f} %",
            "other inconclusive": f"{100 * other / trials:.1f} %",
            "runs/task": f"{np.mean(runs):.2f}"}


def cases() -> list[Case]:
    big, small = reference_rates(15), [0.95, 0.7, 0.7, 0.35]
    out: list[Case] = []
    for design, rates, depth, scheds in (
            ("15 tasks, 20-run baseline", big, 20, ("sequential", "k=3")),
            ("4 tasks, 6-run baseline", small, 6, ("k=6", "sequential"))):
        for sched in scheds:
            out += [Case(design, rates, depth, sched, "A/A (unchanged)"),
                    Case(design, rates, depth, sched, "cost +10 % (the margin)", cost_scale=1.1),
                    Case(design, rates, depth, sched, "cost +50 %", cost_scale=1.5),
                    Case(design, rates, depth, sched, "cache-hit −5 pts (the margin)",
                         hit_drop=0.05)]
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=20261206)
    ap.add_argument("--only", default="", help="run only the cases whose scenario has this")
    ap.add_argument("--schedule", default="", help="run only this schedule (k=6, sequential)")
    ap.add_argument("--design", default="", help="run only the designs that contain this")
    args = ap.parse_args()
    settings = GateSettings(power_simulations=0, sequential_looks=2)
    t0 = time.monotonic()
    rows = []
    for i, case in enumerate(cases()):
        if ((args.only and args.only not in case.scenario)
                or (args.schedule and args.schedule != case.schedule)
                or (args.design and args.design not in case.design)):
            continue
        rows.append(row(case, args.trials, args.seed + i, settings))
        print(f"{rows[-1]}", file=sys.stderr, flush=True)
    print(f"Default settings (alpha 0.01, metric_alpha 0.003, 9,999 permutations); "
          f"{args.trials} PRs per row; seed {args.seed}; {time.monotonic() - t0:.0f} s.\n")
    cols = ["design", "schedule", "scenario", "blocked", "unclear", "blocked or unclear",
            "other inconclusive", "runs/task"]
    print("| " + " | ".join(cols) + " |")
    print("|" + "|".join("---" if c in cols[:3] else "--:" for c in cols) + "|")
    for r in rows:
        print("| " + " | ".join(r[c] for c in cols) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
