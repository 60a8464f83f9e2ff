"""A gate that cannot say no never says yes (gate/compare/_resolution.py).

Every comparison knows the smallest p-value each gating test can reach with its runs; one that
could not have blocked even a collapse is inconclusive (exit 3), saying what would fix it.
Small designs are enumerated exactly, so they can say no with the runs they have; the exact
permutation test is checked by brute force over every labelling. The sequential looks size
their second look so a small suite can decide, and share every level between the looks.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from gate.compare import _stats, compare, judge, resolution_with_runs
from gate.compare._synthetic import reference_rates, synthetic_results
from gate.core.config import GateSettings
from gate.core.metrics import metric
from gate.core.results import Results, Schedule
from gate.execution.sequential import first_look, second_look_runs

SETTINGS = GateSettings(power_simulations=0)

#: the three usage metrics' columns (gate/core/metrics.py): turns, cost, cache read / prompt
LAY = _stats.layout([metric("turns"), metric("cost"), metric("cache_hit_rate")])


def _one_task(passed: int, runs: int, *, cost: float = 1.0, hit: float = 0.95,
              seed: int = 0, model: str = "claude-sonnet-5-5 (simulator)") -> Results:
    """One task, ``runs`` runs of which the first ``passed`` pass, with tight cost spread."""
    rng = np.random.default_rng(seed)
    r = synthetic_results([1.0], runs, rng, cost_scale=cost, cache_hit=[hit], model=model)
    runs_ = [x.model_copy(update={"status": "passed" if i < passed else "failed"})
             for i, x in enumerate(r.runs)]
    return r.model_copy(update={"runs": runs_})


# ----- the floors ---------------------------------------------------------------------------

def test_the_floors_of_a_three_by_three_design() -> None:
    one = np.array([3]), np.array([3]), np.array([3])
    assert _stats.collapse_p(*one, deep=False) == pytest.approx(1 / 20)
    assert _stats.min_permutation_p([(3, 3)], 9999) == pytest.approx(1 / 20)
    assert _stats.min_permutation_p([(6, 6)], 9999) == pytest.approx(1 / 924)
    # sampled (too many labellings to enumerate): never below 1/(R + 1)
    assert _stats.min_permutation_p([(20, 5)] * 15, 9999) == pytest.approx(1 / 10000, rel=1e-3)
    assert _stats.labellings([(3, 3), (2, 1)]) == 60


def test_a_collapse_at_three_runs_is_never_headlined_no_regression() -> None:
    """The issue's case: 3/3 → 0/3 on the scaffold's one task."""
    c = compare(_one_task(3, 3), _one_task(0, 3, seed=1), SETTINGS)
    assert c.verdict == "inconclusive" and c.exit_code == 3
    assert not c.headline.startswith("No regression")
    assert "could not have detected a regression" in c.headline
    assert c.resolution is not None and not c.resolution.detectable
    assert set(c.resolution.blind) == {"pass_rate", "turns", "cost", "cache_hit_rate"}
    assert c.resolution.runs_per_task == 6  # the fix, named
    assert "≥ 6 runs per task" in c.headline
    pr = next(t for t in c.resolution.tests if t.metric == "pass_rate")
    assert pr.min_p == pytest.approx(0.05) and pr.threshold == pytest.approx(0.01)


def test_a_timestamp_at_three_runs_is_not_a_pass_either() -> None:
    c = compare(_one_task(3, 3), _one_task(3, 3, cost=7.0, hit=0.2, seed=1), SETTINGS)
    assert c.verdict == "inconclusive" and c.exit_code == 3
    assert c.metric("cost").delta is not None and c.metric("cost").delta > 5


def test_six_runs_block_a_collapse_and_a_broken_cache_and_pass_an_unchanged_agent() -> None:
    base = _one_task(6, 6)
    collapse = compare(base, _one_task(0, 6, seed=1), SETTINGS)
    assert collapse.verdict == "regression" and collapse.exit_code == 1
    assert collapse.metric("pass_rate").p_value == pytest.approx(1 / 924)
    cache = compare(base, _one_task(6, 6, cost=7.0, hit=0.2, seed=1), SETTINGS)
    assert cache.verdict == "regression"
    assert cache.metric("cost").blocks and cache.metric("cache_hit_rate").blocks
    assert cache.metric("cost").p_value == pytest.approx(1 / 924)  # exact, not sampled
    same = compare(base, _one_task(6, 6, seed=2), SETTINGS)
    # this draw's turns and cost moved past their margins by noise alone (+66 %, +44 %, one
    # task): "unclear", exit 0 (gate/compare/_unclear.py), never a block
    assert same.exit_code == 0 and same.resolution is not None
    assert same.resolution.detectable
    assert same.resolution.statement.startswith("Resolution: with 6 runs per task")


def test_a_regression_that_blocks_stands_even_when_another_test_is_blind() -> None:
    # the pass-rate test reaches its threshold (6 v 6), the metric tests are made blind by a
    # small permutation budget: a blocking pass rate is evidence, the verdict a regression
    settings = SETTINGS.model_copy(update={"permutations": 99, "metric_alpha": 0.001})
    c = compare(_one_task(6, 6), _one_task(0, 6, seed=1), settings)
    assert c.verdict == "regression"
    assert c.resolution is not None and "cost" in c.resolution.blind


def test_a_metric_outside_block_on_is_not_asked_to_detect_anything() -> None:
    settings = SETTINGS.model_copy(update={"block_on": ["pass_rate"]})
    c = compare(_one_task(6, 6), _one_task(6, 6, seed=1), settings)
    assert c.resolution is not None and c.resolution.detectable
    assert [t.metric for t in c.resolution.tests] == ["pass_rate"]


def test_nothing_cached_in_the_baseline_is_said_not_blind() -> None:
    c = compare(_one_task(6, 6, hit=0.0), _one_task(6, 6, hit=0.0, seed=1), SETTINGS)
    assert c.exit_code == 0  # its turns +47 % by noise on one task read "unclear" (exit 0)
    assert c.resolution is not None
    cache = next(t for t in c.resolution.tests if t.metric == "cache_hit_rate")
    assert cache.min_p is None and cache.note is not None and "minimum cacheable" in cache.note
    # said next to the figures, in the line every report shows
    assert "Cache-hit rate: the baseline's cache-hit rate is" in c.resolution.statement
    assert "minimum cacheable length" in c.resolution.statement


def test_a_real_suite_is_detectable_and_its_json_says_so() -> None:
    rng = np.random.default_rng(3)
    rates = reference_rates(15)
    c = compare(synthetic_results(rates, 20, rng), synthetic_results(rates, 3, rng), SETTINGS)
    assert c.resolution is not None and c.resolution.detectable
    assert '"detectable": true' in c.to_json()


# ----- the exact permutation test, by brute force -------------------------------------------

def _pvalues_over_every_labelling(pooled: list[np.ndarray], nc: list[int]) -> list[float]:
    """The cost p-value with each of the design's labellings taken as the observed one."""
    per_task = [list(itertools.combinations(range(len(v)), k)) for v, k in zip(pooled, nc,
                                                                              strict=True)]
    out = []
    for choice in itertools.product(*per_task):
        tasks = []
        for v, cand in zip(pooled, choice, strict=True):
            mask = np.zeros(len(v), dtype=bool)
            mask[list(cand)] = True
            tasks.append(_stats.TaskSamples(v[~mask], v[mask]))
        res = _stats.permutation_tests(tasks, permutations=9999, seed=0, lay=LAY)["cost"]
        assert res is not None
        out.append(res.p_aggregate)
    return out


def test_the_exact_permutation_test_is_valid_over_every_labelling() -> None:
    """Under exchangeability every labelling is equally likely: P(p ≤ a) ≤ a for every a."""
    rng = np.random.default_rng(7)
    pooled = []
    for m in (5, 4):  # two tasks: 5 runs (2 candidate), 4 runs (2 candidate): 60 labellings
        v = np.column_stack([rng.integers(2, 9, m), rng.gamma(2.0, 0.01, m),
                             rng.integers(0, 500, m), np.full(m, 1000.0)])
        pooled.append(v)
    ps = np.array(_pvalues_over_every_labelling(pooled, [2, 2]))
    assert len(ps) == 60
    for a in sorted(set(ps.tolist())):
        assert np.mean(ps <= a + 1e-12) <= a + 1e-9
    assert ps.min() == pytest.approx(1 / 60)  # the floor is reached: it can say no


def test_exact_and_sampled_p_values_agree_where_both_exist() -> None:
    rng = np.random.default_rng(11)
    r = synthetic_results([0.9, 0.8], [4, 3], rng)
    c = synthetic_results([0.9, 0.8], [3, 3], rng, cost_scale=1.5)
    exact = compare(r, c, SETTINGS)  # C(7,3)·C(6,3) = 700 labellings ≤ 10,000: exact
    sampled = compare(r, c, SETTINGS.model_copy(update={"permutations": 499}))
    pe, ps = exact.metric("cost").p_value, sampled.metric("cost").p_value
    assert pe is not None and ps is not None and abs(pe - ps) < 0.05


# ----- sequential looks on small suites -----------------------------------------------------

def _seq(results: Results, looks: list[int]) -> Results:
    return results.model_copy(update={"schedule": Schedule(replications=sum(looks),
                                                           sequential=looks)})


def test_a_blind_first_look_runs_more_and_sizes_the_second_look_to_decide() -> None:
    base = _one_task(6, 6)
    look = judge(base, _seq(_one_task(2, 2, seed=1), [2]), SETTINGS)
    assert look.verdict == "inconclusive"  # 2 v 6 runs cannot block anything
    assert first_look(look, SETTINGS.stop_p(0)) == "continue"
    extra = second_look_runs(look, SETTINGS)
    assert extra == 5  # 7 v 6: C(13, 7) = 1,716 labellings reach metric_alpha/4 = 0.00075
    reach = resolution_with_runs(look, 2 + extra)
    assert reach is not None and reach.detectable
    final = judge(base, _seq(_one_task(0, 7, seed=2), [2, extra]), SETTINGS)
    assert final.verdict == "regression"


def test_a_deep_suite_keeps_the_planned_second_look() -> None:
    rng = np.random.default_rng(5)
    rates = reference_rates(15)
    base = synthetic_results(rates, 20, rng)
    look = judge(base, _seq(synthetic_results(rates, 2, rng), [2]), SETTINGS)
    assert second_look_runs(look, SETTINGS) == SETTINGS.sequential_more


def test_the_looks_share_metric_alpha_too() -> None:
    rng = np.random.default_rng(6)
    rates = reference_rates(15)
    base = synthetic_results(rates, 20, rng)
    c = judge(base, _seq(synthetic_results(rates, 2, rng), [2]), SETTINGS)
    assert c.metric("cost").threshold == pytest.approx(SETTINGS.metric_alpha / 4)
    assert c.settings["metric_alpha"] == pytest.approx(SETTINGS.metric_alpha / 2)


def test_an_unclear_metric_earns_a_second_look() -> None:
    rng = np.random.default_rng(8)
    rates = reference_rates(15)
    base = synthetic_results(rates, 20, rng)
    c = judge(base, _seq(synthetic_results(rates, 2, rng), [2]), SETTINGS)
    assert c.verdict == "pass"
    cost = c.metric("cost")
    unclear = cost.model_copy(update={"exceeds_margin": True, "p_value": 0.05})
    metrics = [unclear if m.name == "cost" else m for m in c.metrics]
    forced = c.model_copy(update={"metrics": metrics, "pass_rate_test": c.pass_rate_test and
                                  c.pass_rate_test.model_copy(update={"p_sum": 0.9,
                                                                      "p_max": 0.9})})
    assert first_look(forced, 0.25) == "continue"


def test_sequential_is_the_default() -> None:
    assert GateSettings().sequential is True


# ----- the yardstick ------------------------------------------------------------------------

def test_a_simulated_baseline_never_judges_a_real_run() -> None:
    base = _one_task(6, 6)
    real = _one_task(0, 6, seed=1, model="claude-sonnet-5-5")
    c = judge(base, real, SETTINGS)
    assert c.verdict == "inconclusive" and c.exit_code == 3
    assert "a simulated yardstick never judges a real run" in c.headline
    assert "`gate baseline results.json`" in c.headline  # the fix, named
    assert any(r.startswith("would block: pass rate") for r in c.reasons)
    back = judge(_one_task(6, 6, model="claude-sonnet-5-5"), _one_task(6, 6, seed=1), SETTINGS)
    assert back.verdict == "inconclusive" and "simulator" in back.headline
    same = judge(base, _one_task(6, 6, seed=1), SETTINGS)
    # judged (its turns' +47 % by noise on one task reads "unclear", exit 0), never refused
    assert same.exit_code == 0 and "yardstick" not in same.headline


def test_a_baseline_from_uncommitted_changes_is_shown_as_such() -> None:
    base = _one_task(6, 6)
    marked = Results.model_validate({**base.model_dump(mode="json"), "uncommitted": [
        {"commit": None, "created_at": base.created_at, "why": "no commit"}]})
    c = judge(marked, _one_task(6, 6, seed=1), SETTINGS)
    assert any("uncommitted changes" in n for n in c.notes)
    assert not any("uncommitted" in n for n in judge(base, _one_task(6, 6, seed=1),
                                                      SETTINGS).notes)


def test_the_comment_says_what_the_comparison_could_have_detected() -> None:
    from gate.report import render_markdown

    base = _one_task(6, 6)
    passed = render_markdown(compare(base, _one_task(6, 6, seed=1), SETTINGS))
    assert "Resolution: with 6 runs per task against a 6-run baseline on 1 task" in passed
    blind = render_markdown(compare(_one_task(3, 3), _one_task(0, 3, seed=1), SETTINGS))
    assert "agent-gate: inconclusive" in blind
    assert "could not have detected a regression" in blind.split("\n\n")[0]  # the headline
    assert "Resolution: with" not in blind  # said once, in the headline
