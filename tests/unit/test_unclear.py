"""A metric past its margin is not "ok" because its test fell short (gate/compare/_unclear.py).

The rule: a gating metric whose change is past its margin, whose test did not block, reads
"unclear" when the test's power against a change of the margin's size at this design is below
80 %; the headline says so with the runs per task that would settle it, never "No regression".
The power figure is checked in closed form on a one-task design and against the real
permutation test, drawn 400 times, on a small one.
"""

from __future__ import annotations

import math
from statistics import NormalDist

import numpy as np
import pytest

from gate.compare import _stats, compare
from gate.compare._model import MetricResult
from gate.compare._synthetic import reference_rates, synthetic_results
from gate.compare._unclear import (
    EXIT,
    RELIABLE,
    margin_power,
    runs_to_settle,
    unclear_metrics,
)
from gate.core.config import GateSettings
from gate.core.metrics import metric
from gate.core.results import Results
from gate.execution.sequential import first_look
from gate.report import metric_verdict

SETTINGS = GateSettings(power_simulations=0)


def _four_tasks(seed: int, cost: float, k: int = 3) -> tuple[Results, Results]:
    rng = np.random.default_rng(seed)
    rates = [0.95, 0.7, 0.7, 0.35]
    base = synthetic_results(rates, 3, rng)
    pr = synthetic_results(rates, k, rng, cost_scale=cost)
    return base, pr


# ----- the power figure ---------------------------------------------------------------------

def test_the_power_figure_in_closed_form_on_one_task() -> None:
    base = np.array([[1.0], [2.0], [3.0]])
    cand = np.array([[2.0], [3.0], [4.0]])
    # within-arm variance 1 (both arms), se² = 1 · (1/3 + 1/3); shift = 0.5 · mean(base) = 1
    want = NormalDist().cdf(1.0 / math.sqrt(2 / 3) - NormalDist().inv_cdf(1 - 0.05))
    got = margin_power([(base, cand)], "mean", 0.5, 0.05, 9999)
    assert got == pytest.approx(want)
    # the design's floor: 3 v 3 has 20 labellings, p ≥ 0.05 > 0.01: it cannot block at all
    assert margin_power([(base, cand)], "mean", 0.5, 0.01, 9999) == 0.0
    # a task whose runs all measured the same adds no labelling: the floor is the others'
    flat = (np.ones((3, 1)), np.ones((3, 1)))
    assert margin_power([(base, cand), flat], "mean", 0.5, 0.01, 9999) == 0.0
    assert _stats.min_permutation_p([(3, 3), (3, 3)], 9999) <= 0.01  # all tasks would pass


@pytest.mark.parametrize(("sigma", "runs"), [(0.10, 6), (0.14, 8)])
def test_the_power_figure_matches_the_real_permutation_test(sigma: float, runs: int) -> None:
    """Brute force: draw the small design 400 times with every PR run's cost up by exactly
    the margin, run the gate's own permutation test, count how often its aggregate p reaches
    the threshold; the figure (from a large sample's spread) must match within noise."""
    rng = np.random.default_rng(11)
    levels = np.array([1.0, 1.5, 2.0, 0.8])
    margin, thr = 0.10, 0.0015
    lay = _stats.layout([metric("cost")])
    reference = [(rng.normal(mu, sigma * mu, (400, 1)), rng.normal(mu, sigma * mu, (400, 1)))
                 for mu in levels]
    figure = margin_power(reference, "mean", margin, thr, 1999, [(runs, runs)] * len(levels))
    assert figure is not None and 0.15 < figure < 0.95  # a figure where the check has teeth
    blocks = 0
    draws = 400
    for i in range(draws):
        tasks = [_stats.TaskSamples(rng.normal(mu, sigma * mu, (runs, 1)),
                                    rng.normal(mu * (1 + margin), sigma * mu, (runs, 1)))
                 for mu in levels]
        res = _stats.permutation_tests(tasks, permutations=1999, seed=i, lay=lay)["cost"]
        assert res is not None
        blocks += res.p_aggregate <= thr
    assert abs(blocks / draws - figure) < 0.1, (blocks / draws, figure)


def test_runs_to_settle_are_the_fewest_that_reach_80_percent() -> None:
    rng = np.random.default_rng(5)
    tasks = [(rng.normal(1.0, 0.15, (3, 1)), rng.normal(1.1, 0.15, (3, 1))) for _ in range(4)]
    k = runs_to_settle(tasks, "mean", 0.10, 0.0015, 9999)
    assert k is not None and k > 3
    at = margin_power(tasks, "mean", 0.10, 0.0015, 9999, [(max(3, k), k)] * 4)
    before = margin_power(tasks, "mean", 0.10, 0.0015, 9999, [(max(3, k - 1), k - 1)] * 4)
    assert at is not None and at >= RELIABLE
    assert before is not None and before < RELIABLE


# ----- the rule, as a table -----------------------------------------------------------------

def _m(name: str, delta: float, p: float, *, verdict: str = "ok", gating: bool = True,
       margin: float = 0.10, blocks: bool = False) -> MetricResult:
    return MetricResult(name=name, label=name, baseline=1.0, candidate=1.0 + delta,
                        delta=delta, p_value=p, threshold=0.0015, margin=margin,
                        exceeds_margin=delta >= margin, gating=gating,
                        verdict=verdict, blocks=blocks, significant=p <= 0.0015)


@pytest.mark.parametrize(("m", "noise", "unclear"), [
    (_m("cost", 0.47, 0.19), 0.5, True),  # past the margin, a weak test: unclear
    (_m("cost", 0.47, 0.19), 0.01, False),  # past the margin, a test that could block it: ok
    (_m("cost", 0.05, 0.4), 0.5, False),  # within the margin: ok, however weak the test
    (_m("cost", 0.47, 0.0001, verdict="regression", blocks=True), 0.5, False),  # blocks
    (_m("cost", 0.47, 0.19, gating=False), 0.5, False),  # not in block_on: reported only
])
def test_the_rule(m: MetricResult, noise: float, unclear: bool) -> None:
    from gate.core.results import RunResult, RunUsage
    rng = np.random.default_rng(1)

    def runs(level: float) -> list[RunResult]:
        return [RunResult(task="t", replication=i, status="passed", reason=None, turns=3,
                          usage=RunUsage(input_tokens=1, output_tokens=1,
                                         cache_creation_input_tokens=0,
                                         cache_read_input_tokens=0),
                          cost_usd=float(level * np.exp(noise * rng.standard_normal())),
                          duration_s=1.0, notes=None) for i in range(8)]

    b = {f"t{i}": runs(1.0) for i in range(3)}
    c = {f"t{i}": runs(1.0 + m.delta) for i in range(3)}  # type: ignore[operator]
    found = unclear_metrics([m], [], b, c, permutations=9999)
    assert ("cost" in found) is unclear
    if unclear:
        power, settle = found["cost"]
        assert power < RELIABLE and settle is not None and settle > 8


# ----- through compare, the sequential looks and the renderers ------------------------------

def test_a_cost_past_its_margin_on_four_tasks_reads_unclear_never_no_regression() -> None:
    base, pr = _four_tasks(2, 1.25)  # cost +31 %, p = 0.018: past the margin, not blocking
    c = compare(base, pr, SETTINGS)
    cost = c.metric("cost")
    assert cost.exceeds_margin and not cost.blocks, cost
    assert cost.verdict == "unclear"
    assert c.verdict == "inconclusive" and c.exit_code == EXIT
    assert c.headline.startswith("Unclear: cost per run +")
    assert "past its +10 % margin" in c.headline
    assert c.resolution is not None and c.resolution.unclear == ["cost"]
    assert c.resolution.unclear_runs is not None
    assert f"≥ {c.resolution.unclear_runs} runs per task" in c.headline
    assert "No regression" not in c.headline
    assert metric_verdict(cost, c.resolution) == "⚠️ unclear"
    assert metric_verdict(cost, c.resolution, icon=False) == "unclear"
    assert '"unclear": [\n      "cost"\n    ]' in c.to_json()


def test_an_unclear_first_look_looks_again() -> None:
    base, pr = _four_tasks(2, 1.25)  # cost +31 %, p = 0.018: past the margin, not blocking
    c = compare(base, pr, SETTINGS)
    assert c.metric("cost").p_value is not None and c.metric("cost").p_value > 0.0015
    assert first_look(c, 0.001) == "continue"  # p above pass_p, and still it looks again


def test_a_deep_suite_with_a_clear_test_is_not_unclear() -> None:
    rng = np.random.default_rng(3)
    rates = reference_rates(15)
    c = compare(synthetic_results(rates, 20, rng), synthetic_results(rates, 5, rng),
                SETTINGS)
    assert c.verdict == "pass" and c.headline.startswith("No regression")
    assert c.resolution is not None and c.resolution.unclear == []


def test_an_unclear_comparison_is_titled_unclear_in_every_view() -> None:
    """An unclear comparison exits 0 and its verdict is "inconclusive": its title says
    "unclear", as its headline does, never a bare "inconclusive" a reviewer reads as a
    failed check, nor "no regression"."""
    from gate.report import render_html, render_markdown

    base, pr = _four_tasks(2, 1.25)  # cost +31 %, p = 0.018: past the margin, not blocking
    c = compare(base, pr, SETTINGS)
    assert c.exit_code == 0 and c.headline.startswith("Unclear: ")
    assert render_markdown(c).startswith("### ⚠️ agent-gate: unclear\n")
    page = render_html(pr, baseline=base, comparison=c)
    assert "agent-gate: Unclear" in page and "agent-gate: Inconclusive" not in page
