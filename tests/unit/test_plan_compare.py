"""compare() given a plan made from the baseline's outcomes (``allowed``): every test, floor,
resolution statement and power figure uses it, and unequal runs per task read as such."""

from __future__ import annotations

import numpy as np
import pytest

from gate.compare import _stats, compare
from gate.compare._synthetic import synthetic_results
from gate.core.config import GateSettings
from gate.core.results import Results
from gate.errors import BadInput

SETTINGS = GateSettings(power_simulations=0)


def _arm(passed: list[int], runs: list[int], *, seed: int, cost: float = 1.0) -> Results:
    """Task t0i with ``runs[i]`` runs, the first ``passed[i]`` of them passing."""
    r = synthetic_results([1.0] * len(runs), runs, np.random.default_rng(seed), cost_scale=cost)
    first: dict[str, int] = {}
    out = []
    for x in r.runs:
        i = int(x.task[1:])
        k = first.setdefault(x.task, 0)
        first[x.task] = k + 1
        out.append(x.model_copy(update={"status": "passed" if k < passed[i] else "failed"}))
    return r.model_copy(update={"runs": out})


def test_the_worked_case_through_compare() -> None:
    """19 of 20 in the baseline, so the plan gave 4 PR runs (the band 18..20); all fail."""
    base, pr = _arm([19], [20], seed=0), _arm([0], [4], seed=1)
    plain = compare(base, pr, SETTINGS)
    given = compare(base, pr, SETTINGS, allowed={"t00": (18, 20)})
    assert plain.pass_rate_test is not None and given.pass_rate_test is not None
    assert plain.pass_rate_test.p_sum == pytest.approx(5 / 10626)
    assert given.pass_rate_test.p_sum == pytest.approx(5 / 195)
    assert given.tasks[0].p_value == pytest.approx(5 / 195)
    # a range restricting nothing is the plain comparison
    full = compare(base, pr, SETTINGS, allowed={"t00": (0, 20)})
    assert full.model_dump() == plain.model_dump()


def test_a_task_at_its_bands_floor_cannot_show_a_drop_and_the_resolution_says_so() -> None:
    """18 of 20 is the band's floor: any relabelling moving a pass into the PR would have
    given another plan, so a collapse there is no evidence at all."""
    base, pr = _arm([18], [20], seed=0), _arm([0], [4], seed=1)
    plain = compare(base, pr, SETTINGS)
    given = compare(base, pr, SETTINGS, allowed={"t00": (18, 20)})
    assert plain.resolution is not None and given.resolution is not None
    reach = {t.metric: t for t in given.resolution.tests}
    assert reach["pass_rate"].min_p == 1.0 and not reach["pass_rate"].reachable
    assert "pass_rate" in given.resolution.blind
    assert "pass_rate" not in plain.resolution.blind


def test_the_permutation_tests_count_only_the_relabellings_the_plan_allows() -> None:
    base = _arm([5, 2], [6, 6], seed=0)
    pr = _arm([1, 1], [3, 1], seed=1, cost=1.6)
    plain = compare(base, pr, SETTINGS)
    given = compare(base, pr, SETTINGS, allowed={"t00": (4, 5), "t01": (0, 3)})
    assert plain.metric("cost").p_value != given.metric("cost").p_value
    # the floor: t00's C(9, 3) = 84 labellings cut to those leaving the baseline part 4 or 5
    # passes, for the PR outcome that leaves the most (2 of 3 passing: 77); all of t01's 7
    assert given.resolution is not None
    floor = _stats.min_permutation_p([(6, 3), (6, 1)], SETTINGS.permutations,
                                     [(5, 4, 5), (2, 0, 3)])
    assert floor == pytest.approx(1 / (77 * 7))
    assert floor > _stats.min_permutation_p([(6, 3), (6, 1)], SETTINGS.permutations)
    cost = next(t for t in given.resolution.tests if t.metric == "cost")
    assert cost.min_p == pytest.approx(floor)


def test_a_range_the_baseline_does_not_fit_is_refused() -> None:
    base, pr = _arm([3], [6], seed=0), _arm([1], [1], seed=1)
    with pytest.raises(BadInput, match=r"plan\.tasks\.t00\.allowed: the baseline passed 3 of 6"):
        compare(base, pr, SETTINGS, allowed={"t00": (4, 6)})


def test_unequal_runs_per_task_are_said_as_a_range_and_a_mean() -> None:
    rates = [1.0, 0.9, 0.6, 0.4, 1.0]
    base = synthetic_results(rates, 20, np.random.default_rng(0))
    pr = synthetic_results(rates, [4, 4, 3, 1, 4], np.random.default_rng(1))
    c = compare(base, pr, GateSettings(power_simulations=50))
    assert c.resolution is not None and c.power is not None
    assert "1–4 runs per task (mean 3.2) against a 20-run baseline on 5 tasks" in (
        c.resolution.statement)
    assert c.power.statement.startswith("With 1–4 runs per task (mean 3.2) against a 20-run")


def test_the_public_plans_ranges_condition_compare() -> None:
    """plan_runs (the public rule) planned the PR from this baseline; its ``allowed()`` is
    what compare conditions on: the pass-rate test is the one given the plan."""
    from gate.compare import PlanSettings, plan_runs

    rates = list(np.linspace(0.35, 1.0, 15))
    base = synthetic_results(rates, 20, np.random.default_rng(3))
    plan = plan_runs(base, [(t, i.digest) for t, i in base.suite.tasks.items()],
                     PlanSettings(rule="by-pass-rate", sequential=False, first=2, more=3,
                                  replications=3))
    runs = plan.look(0)
    assert len(set(runs.values())) > 1  # spread unevenly
    broken = [0.0 if i < 3 else r for i, r in enumerate(rates)]
    pr = synthetic_results(broken, [runs[t] for t in sorted(runs)], np.random.default_rng(4))
    c = compare(base, pr, SETTINGS, allowed=plan.allowed())
    tasks = {t.task: t for t in c.tasks}
    order = sorted(runs)
    b = np.array([tasks[t].baseline_passed for t in order])
    nb = np.array([tasks[t].baseline_runs for t in order])
    cc = np.array([tasks[t].candidate_passed for t in order])
    nc = np.array([tasks[t].candidate_runs for t in order])
    bounds = np.array([plan.allowed()[t] for t in order])
    assert c.pass_rate_test is not None
    assert c.pass_rate_test.p_sum == _stats.sum_test(b, nb, cc, nc, allowed=bounds)[0]
    assert c.pass_rate_test.p_sum != _stats.sum_test(b, nb, cc, nc)[0]
