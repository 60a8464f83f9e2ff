"""Would a plan read from part of the baseline spend runs better? (docs/statistics.md §5a)

The shipped plan (``by-pass-rate``) reads every baseline run of a task, so the tests condition
on the band of its whole pass count, and a band's floor costs power to the tasks just above
it: the bands must stay few and wide (one floor at half). A plan read from only the older
half of the baseline (the first ``of`` runs) conditions the tests on that half's count alone
(gate/compare/_restricted.py: each relabelling weighted by how many ways its baseline part
puts a count in the band on those runs), which would allow narrow bands — easy tasks apart
from mid-rate ones — and a larger second look for the mid-rate tasks. This benchmark puts both
through the same draws, on the pass-rate tests alone (the sum and max tests given the plan,
α/2 a look, the first look stopping when both p > ``sequential_pass_p``):

    python bench/bench_plan_subset.py [--trials 2000] [--seed 20261206] [--alpha-first 0.5]
                                      [--max-share 0.5]

``--alpha-first`` moves α between the looks, ``--max-share`` between the sum and max tests
within a look (the product: half each; a look's level ℓ blocks at p_sum ≤ (1 − share) ℓ or
p_max ≤ share ℓ, exact for any share by the union bound, as the halves are).

Rows are bench/bench_plan.py's scenarios and suite (15 tasks, a baseline of 20 runs a task);
columns are rules, each cell "blocked · runs per task". Turns, cost and cache hits are left
out, so the runs are below bench/bench_plan.py's (its harmless PRs also look again when a
metric is unclear at the first look); the rules are compared on equal terms.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from gate.compare import PlanSettings, _stats
from gate.compare._plan import task_looks
from gate.core.config import GateSettings

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_plan  # the scenarios, the suite and the draws are that benchmark's

Looks = tuple[int, int]


@dataclass(frozen=True)
class SubsetRule:
    """Bands on the first ``of`` baseline runs' pass rate: ≥ ``easy`` (``e`` looks), ≥ 0.5
    (``m``), above 0 (``low``), never (1, 1)."""

    name: str
    of: int
    easy: float
    e: Looks
    m: Looks
    low: Looks

    def task(self, flags: np.ndarray) -> tuple[Looks, tuple[int, int, int]]:
        k, of = int(flags[:self.of].sum()), self.of
        top, half = math.ceil(self.easy * of - 1e-9), math.ceil(0.5 * of - 1e-9)
        if k >= top:
            return self.e, (top, of, of)
        if k >= half:
            return self.m, (half, top - 1, of)
        if k > 0:
            return self.low, (1, half - 1, of)
        return (1, 1), (0, 0, of)


RULES: tuple[SubsetRule, ...] = (
    SubsetRule("older half, the shipped looks", 10, 0.9, (2, 5), (2, 5), (1, 2)),
    SubsetRule("older half, mid-rate 2 + 7", 10, 0.9, (2, 5), (2, 7), (1, 1)),
    SubsetRule("older half, mid-rate 3 + 6", 10, 0.9, (2, 5), (3, 6), (1, 1)),
    SubsetRule("older half, easy 2 + 3, mid-rate 2 + 6", 10, 0.9, (2, 3), (2, 6), (1, 2)),
    SubsetRule("older 5 all passed: 2 + 4, else mid-rate 2 + 6", 5, 1.0, (2, 4), (2, 6), (1, 1)),
    SubsetRule("older 5 all passed: 2 + 5, else mid-rate 2 + 7", 5, 1.0, (2, 5), (2, 7), (1, 1)),
)


def shipped(flags: np.ndarray, s: PlanSettings) -> tuple[Looks, tuple[int, int, int] | None]:
    """The shipped rule (gate.compare.plan_runs' per-task rule) on the whole baseline."""
    plan = task_looks(int(flags.sum()), len(flags), s)
    looks = (plan.looks[0], plan.looks[1])
    if plan.allowed is None:
        return looks, None
    return looks, (plan.allowed[0], plan.allowed[1], len(flags))


def judged(b: np.ndarray, c: np.ndarray, n_c: np.ndarray, allowed: np.ndarray | None,
           level: float, max_share: float = 0.5) -> tuple[bool, float, float]:
    n_b = np.full(len(b), bench_plan.DEPTH, dtype=np.int64)
    p_sum = float(_stats.sum_test(b, n_b, c[None], n_c, allowed=allowed)[0])
    p_max = float(_stats.max_test(b, n_b, c[None], n_c, allowed)[0][0])
    if max_share == 0.5:  # the product's rule, from its one place
        block = bool(_stats.pass_rate_blocks(np.array(p_sum), np.array(p_max), level, True))
    else:
        block = p_sum <= (1 - max_share) * level or p_max <= max_share * level
    return block, p_sum, p_max


def two_looks(base: np.ndarray, pool: np.ndarray, plans: Sequence[tuple[Looks, object]],
              settings: GateSettings, first_share: float,
              max_share: float = 0.5) -> tuple[bool, int]:
    """(blocked, runs) of one PR through a rule's looks, the first judged at ``first_share``
    of alpha and the second at the rest (the product: half each)."""
    b = base.sum(axis=1).astype(np.int64)
    given = [a for _, a in plans]
    allowed = None if any(a is None for a in given) else np.array(given, dtype=np.int64)
    first = np.array([lk[0] for lk, _ in plans], dtype=np.int64)
    both = first + np.array([lk[1] for lk, _ in plans], dtype=np.int64)
    levels = (settings.alpha * first_share, settings.alpha * (1 - first_share))
    for n_c, last, level in ((first, False, levels[0]), (both, True, levels[1])):
        c = np.array([pool[i, :n].sum() for i, n in enumerate(n_c.tolist())], dtype=np.int64)
        block, p_sum, p_max = judged(b, c, n_c, allowed, level, max_share)
        stop = p_sum > settings.stop_p(0) and p_max > settings.stop_p(0)
        if block or last or stop:
            return block, int(n_c.sum())
    raise AssertionError("unreachable")


def draws(scenario: str, trials: int, seed: int) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """Each PR of a row: the baseline's outcomes (tasks × its depth) and the PR's pool of
    runs (tasks × 12), drawn alike by every plan benchmark of the pass-rate tests."""
    rates = np.array(bench_plan.RATES)
    rng = np.random.default_rng(seed)
    for _ in range(trials):
        base = rng.random((len(rates), bench_plan.DEPTH)) < rates[:, None]
        truth = np.array(bench_plan.truth(scenario, rng))
        yield base, rng.random((len(rates), 12)) < truth[:, None]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trials", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=20261206)
    ap.add_argument("--alpha-first", type=float, default=0.5,
                    help="the share of alpha the first look spends (the product: 0.5)")
    ap.add_argument("--max-share", type=float, default=0.5,
                    help="the share of a look's level the max test gets (the product: 0.5)")
    args = ap.parse_args()
    settings = bench_plan.TWO_LOOKS
    ps = PlanSettings.of(settings, replications=3, sequential=True)
    names = ["shipped (whole baseline)"] + [r.name for r in RULES]
    rates = np.array(bench_plan.RATES)
    started = time.monotonic()
    table: dict[str, list[tuple[float, float]]] = {}
    for scenario in bench_plan.SCENARIOS:
        hits, runs = np.zeros(len(names)), np.zeros(len(names))
        for base, pool in draws(scenario, args.trials, args.seed):
            rules = [[shipped(row, ps) for row in base]]
            rules += [[r.task(row) for row in base] for r in RULES]
            for j, plans in enumerate(rules):
                block, n = two_looks(base, pool, plans, settings, args.alpha_first,
                                     args.max_share)
                hits[j] += block
                runs[j] += n / len(rates)
        table[scenario] = [(h / args.trials, r / args.trials) for h, r in zip(hits, runs,
                                                                             strict=True)]
    print(f"15 tasks (true pass rates {', '.join(f'{r:g}' for r in bench_plan.RATES)}), "
          f"baseline {bench_plan.DEPTH} runs a task; {args.trials} PRs per row, every rule on "
          f"the same draws; pass-rate tests only (alpha {settings.alpha:g}, "
          f"{args.alpha_first:g} of it in the first look, {args.max_share:g} of a look's "
          f"to the max test); "
          f"stop at p > {settings.stop_p(0):g}; seed {args.seed}; "
          f"{time.monotonic() - started:.0f} s. Each cell: blocked · runs per task.\n")
    print_table(names, table)
    return 0


def print_table(names: Sequence[str], table: dict[str, list[tuple[float, float]]]) -> None:
    """A row per scenario, a column per rule: "blocked · runs per task"."""
    print("| PR | " + " | ".join(names) + " |")
    print("|---|" + "--:|" * len(names))
    for scenario, cells in table.items():
        print(f"| {scenario} | " + " | ".join(f"{h * 100:.1f} % · {r:.2f}" for h, r in cells)
              + " |")


if __name__ == "__main__":
    sys.exit(main())
