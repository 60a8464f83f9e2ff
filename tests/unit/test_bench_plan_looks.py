"""The three-look benchmark (``bench/bench_plan_looks.py``) judges the shipped two looks as the
other plan benchmark does: on the same draws, the shipped design through its looks blocks the
same PRs with the same runs as ``bench/bench_plan_subset.py``'s ``two_looks``, so its columns
are comparable with that benchmark's; and a three-look design spends each look's share of α."""

from __future__ import annotations

import numpy as np
import pytest

from bench import bench_plan
from bench.bench_plan_looks import DESIGNS, SHIPPED, looked
from bench.bench_plan_subset import shipped, two_looks
from gate.compare import PlanSettings


@pytest.mark.parametrize("scenario", bench_plan.SCENARIOS)
def test_the_shipped_design_through_the_looks_is_the_other_benchmarks(scenario: str) -> None:
    settings = bench_plan.TWO_LOOKS
    ps = PlanSettings.of(settings, replications=3, sequential=True)
    rates = np.array(bench_plan.RATES)
    rng = np.random.default_rng(7)
    for _ in range(12):
        base = rng.random((len(rates), bench_plan.DEPTH)) < rates[:, None]
        pool = rng.random((len(rates), 12)) < np.array(bench_plan.truth(scenario, rng))[:, None]
        plans = [shipped(row, ps) for row in base]
        allowed = np.array([a for _, a in plans], dtype=np.int64)
        b = base.sum(axis=1).astype(np.int64)
        inc = SHIPPED.increments([lk for lk, _ in plans])
        assert looked(b, pool, allowed, inc, SHIPPED.shares, [settings.stop_p(0)],
                      settings.alpha) == two_looks(base, pool, plans, settings, 0.5)


def test_each_three_look_design_spends_alpha_once_and_runs_at_least_the_first_look() -> None:
    for d in DESIGNS:
        assert len(d.shares) == 3 and sum(d.shares) == pytest.approx(1.0)
        for two, three in d.looks.items():
            assert three[0] == two[0]  # the same first look as the shipped plan
            assert sum(three) >= sum(two)  # the last look sees at least today's runs


def test_the_whole_verdicts_three_looks_are_the_products_and_block_a_collapse_early() -> None:
    """``bench/bench_plan.py``'s "three looks" column is the product's plan (the shipped
    settings): the looks the third-look benchmark measured (:data:`DESIGNS`' first), the same
    first look and the same runs in all as the two looks before it, and a suite that fails
    every run is blocked before the last look."""
    from bench.bench_plan import PLANNED, RATES, TWO_LOOKS, planned, pool_runs
    from gate.compare import plan_runs
    from gate.compare._synthetic import synthetic_results

    rng = np.random.default_rng(3)
    base = synthetic_results(list(RATES), bench_plan.DEPTH, rng)
    tasks = [(t, i.digest) for t, i in base.suite.tasks.items()]
    settings = PLANNED.model_copy(update={"permutations": 2999})
    plan = plan_runs(base, tasks, PlanSettings.of(settings, replications=3, sequential=True))
    two = plan_runs(base, tasks, PlanSettings.of(TWO_LOOKS, replications=3, sequential=True))
    assert plan.looks == 3 and two.looks == 2
    for t, p in plan.tasks.items():
        assert p.looks == DESIGNS[0].looks[two.tasks[t].looks]  # type: ignore[index]
    total = plan.through(3)
    broken = synthetic_results([0.0] * len(RATES), pool_runs(total, bench_plan.TODAY), rng)
    out = planned(base, broken, settings, plan)
    assert out.verdict == "regression" and out.runs < sum(total.values())
