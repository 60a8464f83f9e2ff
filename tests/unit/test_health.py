"""Suite health (gate/compare/_health.py): the baseline's tasks that always fail, or disagree
with their own history, named with why; a middling task never."""

from __future__ import annotations

from collections.abc import Sequence
from math import comb

import numpy as np
import pytest
from scipy.stats import fisher_exact

from gate.compare import (
    ALWAYS_FAILS_MIN_RUNS,
    TaskHealth,
    compare,
    fisher_two_sided,
    suite_health,
)
from gate.compare._synthetic import synthetic_results
from gate.core.config import GateSettings
from gate.core.results import Results
from gate.pool.baseline import promote


def _pool(refreshes: Sequence[Sequence[float]], k: int = 5, seed: int = 0) -> Results:
    """A baseline pooled from one refresh per entry: task ``t0i`` passes with rate ``[i]``."""
    baseline = None
    for i, rates in enumerate(refreshes):
        results = synthetic_results(rates, k, np.random.default_rng(seed + i),
                                    commit=f"{i + 1:x}" * 40,
                                    created_at=f"2026-11-{10 + i:02d}T00:00:00Z")
        baseline, _ = promote(results, baseline, pool_size=20)
    assert baseline is not None
    return baseline


def test_always_failing_task_is_named_with_why() -> None:
    health = suite_health(_pool([[1.0, 0.0, 0.9]] * 3))  # 15 runs each
    assert [(h.task, h.kind) for h in health] == [("t01", "always_fails")]
    assert health[0].line == ("t01: failed all 15 valid baseline runs: it carries no signal on "
                              "pass rate (what never passes cannot fall), only on turns and cost")


def test_too_few_runs_are_not_judged() -> None:
    few = _pool([[1.0, 0.0]] * 1, k=ALWAYS_FAILS_MIN_RUNS - 1)
    assert suite_health(few) == []
    enough = _pool([[1.0, 0.0]] * 1, k=ALWAYS_FAILS_MIN_RUNS)
    assert [h.task for h in suite_health(enough)] == ["t01"]


def test_infra_errors_are_not_failures() -> None:
    """A task whose runs were infra errors is unmeasured, not failing: not named."""
    results = synthetic_results([0.0], 12, np.random.default_rng(3), error_rate=1.0)
    baseline, _ = promote(results, None)
    assert suite_health(baseline) == []


def test_fisher_two_sided_is_exact() -> None:
    # 0 of 5 in the latest refresh against 14 of 15 before: by hand, the hypergeometric of
    # 14 passes among 20 runs, 5 drawn; tables no likelier than k=0 are k=0 (and none else)
    n = comb(20, 5)
    p0 = comb(14, 0) * comb(6, 5) / n
    probs = [comb(14, k) * comb(6, 5 - k) / n for k in range(0, 6)]
    expected = sum(p for p in probs if p <= p0 * (1 + 1e-7))
    assert fisher_two_sided(0, 5, 14, 15) == pytest.approx(expected, rel=1e-12)
    assert expected == pytest.approx(6 / 15504, rel=1e-12)  # only k=0 is as unlikely
    for a, na, b, nb in [(0, 5, 14, 15), (3, 5, 7, 15), (5, 5, 2, 15), (1, 4, 4, 4),
                         (0, 10, 10, 10), (2, 7, 9, 13)]:
        want = fisher_exact([[a, na - a], [b, nb - b]], alternative="two-sided").pvalue
        assert fisher_two_sided(a, na, b, nb) == pytest.approx(want, rel=1e-9)


def test_task_disagreeing_with_its_history_is_named_with_the_exact_p() -> None:
    # t00 passed every run of three refreshes, then none of the latest five
    baseline = _pool([[1.0, 0.5, 0.9]] * 3 + [[0.0, 0.5, 0.9]])
    health = suite_health(baseline)
    flagged = [h for h in health if h.kind == "disagrees"]
    assert [h.task for h in flagged] == ["t00"]
    p = flagged[0].p_value
    assert p == pytest.approx(fisher_two_sided(0, 5, 15, 15), rel=1e-12)
    assert p == pytest.approx(1 / comb(20, 5), rel=1e-12)  # the one table as extreme
    assert ("passed 0 of 5 in the latest refresh (2026-11-13) against 15 of 15 in the 3 "
            "earlier refreshes") in flagged[0].reason
    assert "Fisher's exact p = 6.4e-05" in flagged[0].reason


def _latest_passes(baseline: Results, task: str, passes: int) -> Results:
    """``baseline`` with ``task``'s runs of its latest refresh set to ``passes`` passed."""
    latest = max(r.refresh or "" for r in baseline.runs)
    runs, seen = [], 0
    for r in baseline.runs:
        if r.task == task and r.refresh == latest:
            status = "passed" if seen < passes else "failed"
            r = r.model_copy(update={"status": status})
            seen += 1
        runs.append(r)
    return baseline.model_copy(update={"runs": runs})


@pytest.mark.parametrize(("tasks", "named"), [(3, True), (10, False)])
def test_the_level_is_one_percent_over_the_tasks_tested(tasks: int, named: bool) -> None:
    """1 of 5 against 15 of 15: p = 16 / C(20, 5) ≈ 0.00103, under 0.01 / 3 and over
    0.01 / 10 (Bonferroni over the tasks tested)."""
    baseline = _latest_passes(_pool([[1.0] * tasks] * 4), "t00", 1)
    assert fisher_two_sided(1, 5, 15, 15) == pytest.approx(16 / comb(20, 5), rel=1e-12)
    assert [h.task for h in suite_health(baseline)] == (["t00"] if named else [])


def test_steady_history_is_not_named() -> None:
    steady = _pool([[1.0, 0.5, 0.9]] * 4)
    assert [h for h in suite_health(steady) if h.kind == "disagrees"] == []


def test_a_sudden_pass_disagrees_too() -> None:
    """Two-sided: a task that never passed and now passes every run is as suspect."""
    baseline = _latest_passes(_pool([[0.0, 1.0, 1.0]] * 4), "t00", 5)
    [health] = suite_health(baseline)
    assert health.kind == "disagrees" and health.task == "t00"


@pytest.mark.parametrize("seed", range(20))
def test_middling_task_is_never_named_nor_advised_away(seed: int) -> None:
    baseline = _pool([[0.5]] * 4, seed=seed * 10)
    health = suite_health(baseline)
    assert all(h.kind != "always_fails" for h in health)
    assert all("drop" not in h.reason and "remove" not in h.reason for h in health)
    # a half-rate task steady over its refreshes: named in none of 20 pools
    assert health == []


def test_health_goes_with_the_comparison() -> None:
    baseline = _pool([[1.0, 0.0, 0.9]] * 3)
    candidate = synthetic_results([1.0, 0.0, 0.9], 5, np.random.default_rng(99),
                                  created_at="2026-12-01T00:00:00Z")
    c = compare(baseline, candidate, GateSettings())
    assert c.health == [TaskHealth(task="t01", kind="always_fails",
                                   reason=suite_health(baseline)[0].reason)]
    assert "health" in c.to_json()
