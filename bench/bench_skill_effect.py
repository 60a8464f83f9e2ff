"""How good is the skill-effect check? False blocks on harmless skill edits, power against a
skill that stopped helping (docs/statistics.md §9).

Synthetic results with a known truth: 15 plain tasks (the statistics design's suite) and T
tasks with ``control`` / ``target`` runs, the target skill turning 75 % of the control's
failures into passes (control 50 %, target 87.5 %). The whole verdict goes through
``gate.compare.judge`` — the function ``gate compare`` and ``gate ci`` call — so the false-block
rate measured is the verdict's with α shared; the skill-effect test alone is also run on many
more draws of pass counts only.

Scenarios: ``aa`` (a harmless rewording: nothing changed), ``shift`` (both conditions 10
points worse in the PR, the effect in points unchanged: a composite null the exact test does
not cover by construction), ``broken`` (the skill has no effect in the PR). Pairs are
``independent`` (two runs of a real model) or ``coupled`` (one draw per replication, as the
simulator makes them).

    python bench/bench_skill_effect.py [--trials N] [--draws N]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from gate.compare import judge
from gate.compare._did import did_test
from gate.compare._synthetic import reference_rates, synthetic_condition_runs, synthetic_results
from gate.core.config import GateSettings
from gate.core.results import summarize

CONTROL, TARGET = 0.5, 0.875


def _rates(scenario: str, pr: bool) -> tuple[float, float]:
    if not pr or scenario == "aa":
        return CONTROL, TARGET
    if scenario == "shift":
        return CONTROL - 0.1, TARGET - 0.1
    return CONTROL, CONTROL  # broken


def _draw(pc: float, pt: float, tasks: int, k: int, rng: np.random.Generator,
          coupled: bool) -> list[list[int]]:
    u = rng.random((tasks, k))
    v = u if coupled else rng.random((tasks, k))
    return [list(map(int, row)) for row in (v < pt).astype(int) - (u < pc).astype(int)]


def did_only(scenario: str, tasks: int, n_base: int, n_pr: int, coupled: bool, draws: int,
             seed: int, alpha: float) -> float:
    rng = np.random.default_rng(seed)
    blocks = 0
    for _ in range(draws):
        cd = _draw(*_rates(scenario, True), tasks, n_pr, rng, coupled)
        bd = _draw(*_rates(scenario, False), tasks, n_base, rng, coupled)
        blocks += did_test(cd, bd)[0] <= alpha
    return blocks / draws


def whole_verdict(scenario: str, tasks: int, n_base: int, n_pr: int, coupled: bool,
                  trials: int, seed: int) -> tuple[float, float]:
    """(share of regressions, share blocked by the skill-effect test) through judge()."""
    rng = np.random.default_rng(seed)
    settings = GateSettings(permutations=999, power_simulations=0)
    plain = reference_rates(15)
    regressions = skill = 0
    for _ in range(trials):
        base = synthetic_results(plain, n_base, rng)
        pr = synthetic_results(plain, n_pr, rng)
        bc, bt = _rates(scenario, False)
        pc, pt = _rates(scenario, True)
        b_runs = [*base.runs, *synthetic_condition_runs([bc] * tasks, [bt] * tasks, n_base,
                                                        rng, coupled=coupled)]
        p_runs = [*pr.runs, *synthetic_condition_runs([pc] * tasks, [pt] * tasks, n_pr, rng,
                                                      coupled=coupled)]
        c = judge(base.model_copy(update={"runs": b_runs, "summary": summarize(b_runs)}),
                  pr.model_copy(update={"runs": p_runs, "summary": summarize(p_runs)}),
                  settings)
        regressions += c.verdict == "regression"
        skill += bool(c.skill_effect and c.skill_effect.blocks)
    return regressions / trials, skill / trials


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=300, help="judge() pairs per cell")
    ap.add_argument("--draws", type=int, default=20000, help="test-only draws per cell")
    ap.add_argument("--seed", type=int, default=20261201)
    args = ap.parse_args()
    start = time.time()
    alpha = 0.005  # the test's half of α = 0.01
    print(f"Skill-effect benchmark: {args.draws} draws per test-only cell, {args.trials} "
          f"judge() pairs per verdict cell; α = 0.01 (the test at α/2 = {alpha}); "
          f"seed {args.seed}.\n")
    print("| target tasks | baseline pairs | PR pairs | pairs | A/A: test alone | A/A: whole "
          "verdict | shift −10 pts both: test alone | broken skill: test alone |")
    print("|---:|---:|---:|---|---:|---:|---:|---:|")
    for tasks, n_base, n_pr in ((1, 20, 5), (1, 20, 20), (4, 20, 5), (8, 20, 5), (8, 5, 5)):
        for coupled in (False, True):
            seed = args.seed + tasks * 1000 + n_base * 10 + n_pr + coupled
            aa = did_only("aa", tasks, n_base, n_pr, coupled, args.draws, seed, alpha)
            shift = did_only("shift", tasks, n_base, n_pr, coupled, args.draws, seed + 1,
                             alpha)
            broken = did_only("broken", tasks, n_base, n_pr, coupled, args.draws // 10,
                              seed + 2, alpha)
            verdict, _ = whole_verdict("aa", tasks, n_base, n_pr, coupled, args.trials,
                                       seed + 3)
            print(f"| {tasks} | {n_base} | {n_pr} | {'coupled' if coupled else 'independent'}"
                  f" | {aa:.2%} | {verdict:.1%} | {shift:.2%} | {broken:.1%} |", flush=True)
    print(f"\n{time.time() - start:.0f} s")


if __name__ == "__main__":
    main()
