"""The skill-effect test (gate/compare/_did.py) given the plain runs' plan (docs/statistics.md
§2a, §9).

The plan reads the baseline's *plain* runs; the skill-effect test uses its *condition* runs
(target − control pairs), whose count the plan does not choose (every condition the suite's
replications). The test is exact over baselines. Given the plan it stays exact when a
replication's plain run and its condition runs are independent — separate runs of a model —
and is not when they share one draw, as the simulator's do (its outcome is a function of the
task and the replication): a plan that read a low plain pass count then says the condition
runs of those replications drew low too.

Each draw: ``TASKS`` target tasks, a baseline of 20 replications (a plain run, a control and a
target run each), a PR of 5 pairs, nothing changed (plain 0.5, control 0.5, target 0.875, the
rates of bench/bench_skill_effect.py). The plan's band per task: the baseline's plain runs
passed ≥ 10 of 20 or not. Block rates of the test at 0.05 and 0.005 (its level in the verdict),
overall and by how many tasks landed in the top band.

Run: python3 -m bench.bench_skill_given_plan [--draws 20000] [--seed 1]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from gate.compare._did import did_test

TASKS, NB, NC = 4, 20, 5
PLAIN, CONTROL, TARGET = 0.5, 0.5, 0.875


def _draw(rng: np.random.Generator, coupled: bool) -> tuple[int, float]:
    """(tasks in the top band, the test's p) of one null draw."""
    u = rng.random((TASKS, NB))
    uc, ut = (u, u) if coupled else (rng.random((TASKS, NB)), rng.random((TASKS, NB)))
    top = int(((u < PLAIN).sum(axis=1) >= NB // 2).sum())
    base = (ut < TARGET).astype(int) - (uc < CONTROL).astype(int)
    v = rng.random((TASKS, NC))
    vc, vt = (v, v) if coupled else (rng.random((TASKS, NC)), rng.random((TASKS, NC)))
    pr = (vt < TARGET).astype(int) - (vc < CONTROL).astype(int)
    p, _ = did_test(pr.tolist(), base.tolist())
    return top, p


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--draws", type=int, default=20_000)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    start = time.time()
    print("| runs of a replication | tasks in the top band | draws | block at 0.05 | "
          "block at 0.005 |")
    print("|---|---:|---:|---:|---:|")
    for coupled in (True, False):
        rng = np.random.default_rng(args.seed)
        rows: dict[int, list[int]] = {}
        for _ in range(args.draws):
            top, p = _draw(rng, coupled)
            r = rows.setdefault(top, [0, 0, 0])
            r[0] += 1
            r[1] += p <= 0.05
            r[2] += p <= 0.005
        rows[-1] = [sum(x) for x in zip(*rows.values(), strict=True)]
        name = "one draw (simulator)" if coupled else "independent"
        for top in sorted(rows):
            n, a, b = rows[top]
            shown = "any (over baselines)" if top < 0 else str(top)
            print(f"| {name} | {shown} | {n} | {a / n * 100:.1f} % | {b / n * 100:.2f} % |")
    print(f"\n({time.time() - start:.0f} s)")


if __name__ == "__main__":
    main()
