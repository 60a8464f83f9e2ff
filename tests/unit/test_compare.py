"""The verdict end to end on synthetic results with a known truth, through ``compare()``."""

from __future__ import annotations

import numpy as np
import pytest

from gate.compare import Comparison, compare
from gate.compare._synthetic import reference_rates, synthetic_results
from gate.core.config import GateSettings
from gate.core.results import AgentInfo, Results, TaskInfo, summarize
from gate.errors import BadInput, Unmeasurable
from gate.pool.baseline import promote

RATES = reference_rates(15)
FAST = GateSettings(permutations=999, power_simulations=0)
PASS_ONLY = GateSettings(permutations=999, power_simulations=0, block_on=["pass_rate"])
PASS_ONLY_CHEAP = GateSettings(permutations=99, power_simulations=0, block_on=["pass_rate"])


def _broken(rates: list[float], tasks: tuple[int, ...] = (0, 6, 12)) -> list[float]:
    return [0.0 if i in tasks else r for i, r in enumerate(rates)]


def _retask(results: Results, digests: dict[str, str]) -> Results:
    tasks = {t: TaskInfo(digest=digests.get(t, info.digest))
             for t, info in results.suite.tasks.items()}
    suite = results.suite.model_copy(update={"tasks": tasks})
    return results.model_copy(update={"suite": suite})


@pytest.mark.slow
@pytest.mark.parametrize(("k", "depth"), [(1, 1), (3, 3), (5, 20)])
def test_aa_false_blocks_at_most_one_percent_and_naive_rule_far_more(k: int, depth: int) -> None:
    # the exact rate is 0.07–0.6 % here (docs/statistics.md); 400 seeded pairs allow ≤ 5 blocks
    rng = np.random.default_rng(1000 + k)
    trials, blocks, naive = 400, 0, 0
    for _ in range(trials):
        base = synthetic_results(RATES, depth, rng)
        cand = synthetic_results(RATES, k, rng)
        blocks += compare(base, cand, PASS_ONLY_CHEAP).verdict == "regression"
        naive += cand.summary.passed / k < base.summary.passed / depth
    assert blocks / trials <= 0.0125
    assert naive / trials >= 0.30


@pytest.mark.slow
def test_aa_whole_verdict_with_every_metric_gating_stays_small() -> None:
    """Four gating metrics at their own α each: the family stays within a few per cent."""
    rng = np.random.default_rng(7)
    trials = 200
    blocks = sum(compare(synthetic_results(RATES, 3, rng), synthetic_results(RATES, 3, rng),
                         FAST).verdict == "regression" for _ in range(trials))
    assert blocks / trials <= 0.04


@pytest.mark.slow
def test_pooled_baseline_catches_three_broken_tasks() -> None:
    rng = np.random.default_rng(2)
    trials = 100
    caught = sum(
        compare(synthetic_results(RATES, 20, rng), synthetic_results(_broken(RATES), 5, rng),
                PASS_ONLY_CHEAP).verdict == "regression"
        for _ in range(trials))
    assert caught / trials >= 0.8


@pytest.mark.slow
def test_uniform_twenty_point_drop_is_caught_with_a_deep_baseline() -> None:
    rng = np.random.default_rng(3)
    dropped = [max(r - 0.2, 0) for r in RATES]
    caught = sum(compare(synthetic_results(RATES, 20, rng), synthetic_results(dropped, 5, rng),
                         PASS_ONLY_CHEAP).verdict == "regression" for _ in range(60))
    assert caught / 60 >= 0.7


def test_cost_up_fifty_percent_blocks_and_unchanged_cost_does_not() -> None:
    rng = np.random.default_rng(4)
    settings = GateSettings(power_simulations=0)
    base = synthetic_results(RATES, 20, rng)
    same = compare(base, synthetic_results(RATES, 5, rng), settings)
    dear = compare(base, synthetic_results(RATES, 5, rng, cost_scale=1.5), settings)
    assert not same.metric("cost").blocks
    assert same.verdict == "pass"
    cost = dear.metric("cost")
    assert cost.blocks and cost.verdict == "regression" and cost.delta is not None
    assert 0.3 < cost.delta < 0.7
    assert dear.verdict == "regression" and dear.exit_code == 1
    assert "cost" in dear.headline


def test_a_small_significant_change_within_the_margin_does_not_block() -> None:
    rng = np.random.default_rng(5)
    base = synthetic_results(RATES, 20, rng)
    cand = synthetic_results(RATES, 20, rng, cost_scale=1.06)
    res = compare(base, cand, GateSettings(power_simulations=0)).metric("cost")
    assert not res.exceeds_margin and not res.blocks


def test_cache_hit_drop_blocks() -> None:
    rng = np.random.default_rng(6)
    base = synthetic_results(RATES, 10, rng, cache_hit=[0.8] * 15)
    cand = synthetic_results(RATES, 5, rng, cache_hit=[0.6] * 15)
    m = compare(base, cand, FAST).metric("cache_hit_rate")
    assert m.blocks and m.delta is not None and m.delta < -0.15


def test_metrics_outside_block_on_are_reported_not_gated() -> None:
    rng = np.random.default_rng(8)
    base = synthetic_results(RATES, 20, rng)
    cand = synthetic_results(RATES, 5, rng, cost_scale=2.0)
    c = compare(base, cand, PASS_ONLY)
    cost = c.metric("cost")
    assert cost.verdict == "regression" and not cost.blocks and not cost.gating
    assert c.verdict == "pass"


def test_too_few_comparable_tasks_is_inconclusive() -> None:
    rng = np.random.default_rng(9)
    base = synthetic_results(RATES, 3, rng)
    cand = _retask(synthetic_results(RATES, 3, rng), {f"t{i:02d}": "new" for i in range(4)})
    c = compare(base, cand, FAST)
    assert c.verdict == "inconclusive" and c.exit_code == 3
    assert "11 of 15" in c.reasons[0]
    assert c.suite.changed == ["t00", "t01", "t02", "t03"]


def test_nothing_comparable_is_inconclusive_not_a_pass() -> None:
    rng = np.random.default_rng(10)
    base = synthetic_results(RATES, 3, rng)
    cand = _retask(synthetic_results(RATES, 3, rng), {f"t{i:02d}": "x" for i in range(15)})
    c = compare(base, cand, FAST)
    assert c.verdict == "inconclusive" and c.exit_code == 3
    assert c.metric("pass_rate").verdict == "n/a" and c.pass_rate_test is None


@pytest.mark.parametrize("arm", ["baseline", "candidate"])
def test_too_many_infra_errors_is_inconclusive(arm: str) -> None:
    rng = np.random.default_rng(11)
    base = synthetic_results(RATES, 5, rng, error_rate=0.35 if arm == "baseline" else 0)
    cand = synthetic_results(RATES, 5, rng, error_rate=0.35 if arm == "candidate" else 0)
    c = compare(base, cand, FAST)
    assert c.verdict == "inconclusive"
    assert any(f"{arm} runs" in r for r in c.reasons)


def test_candidate_erroring_significantly_more_is_inconclusive() -> None:
    rng = np.random.default_rng(12)
    base = synthetic_results(RATES, 20, rng)
    cand = synthetic_results(RATES, 5, rng, error_rate=0.12)
    assert 0 < cand.summary.errors / len(cand.runs) <= 0.2
    c = compare(base, cand, FAST)
    assert c.verdict == "inconclusive"
    assert c.infra.p_value <= 0.01
    assert "significantly" in " ".join(c.reasons)


def test_infra_errors_are_not_counted_as_failures() -> None:
    rng = np.random.default_rng(13)
    base = synthetic_results([1.0] * 15, 5, rng)
    cand = synthetic_results([1.0] * 15, 5, rng, error_rate=0.1)
    c = compare(base, cand, GateSettings(power_simulations=0, max_infra_rate=1.0,
                                         infra_alpha=1e-9))
    assert c.metric("pass_rate").candidate == 1.0
    assert c.verdict == "pass"


def _errors_on_t00(results: Results, errors: int) -> Results:
    """``results`` with ``errors`` of task t00's runs turned into infra errors."""
    runs = [r.model_copy(update={"status": "error", "reason": "infra: the service is down"})
            if r.task == "t00" and r.replication < errors else r for r in results.runs]
    return results.model_copy(update={"runs": runs, "summary": summarize(runs)})


@pytest.mark.parametrize(("errors", "max_rate", "verdict"), [
    (5, 0.2, "inconclusive"), (3, 0.2, "pass"), (4, 0.6, "inconclusive"), (5, 1.0, "pass")])
def test_a_task_gone_mostly_to_infra_errors_is_named_never_a_pass(
        errors: int, max_rate: float, verdict: str) -> None:
    """6/6 → 1 passed + 5 errors on one task of ten: 5 of 60 runs (under the arm's limit,
    Fisher's p = 0.03) no longer pass unseen; half its runs do not count as mostly."""
    rng = np.random.default_rng(21)
    base = synthetic_results([1.0] * 10, 6, rng)
    cand = _errors_on_t00(synthetic_results([1.0] * 10, 6, rng), errors)
    c = compare(base, cand, FAST.model_copy(update={"max_infra_rate": max_rate}))
    assert c.verdict == verdict, c.headline
    named = f"t00 ({errors} infra errors, {6 - errors} valid run"
    assert (named in c.headline) == (verdict == "inconclusive"), c.headline


def test_regression_outranks_inconclusive() -> None:
    rng = np.random.default_rng(14)
    base = synthetic_results(RATES, 20, rng)
    cand = synthetic_results([0.0] * 15, 5, rng, error_rate=0.3)
    c = compare(base, cand, FAST)
    assert c.verdict == "regression" and c.exit_code == 1


def test_unrelated_suites_are_bad_input() -> None:
    rng = np.random.default_rng(15)
    base = synthetic_results(RATES, 3, rng)
    other = synthetic_results(RATES, 3, rng)
    tasks = {f"other-{t}": info for t, info in other.suite.tasks.items()}
    runs = [r.model_copy(update={"task": f"other-{r.task}"}) for r in other.runs]
    other = other.model_copy(update={"suite": other.suite.model_copy(update={"tasks": tasks}),
                                     "runs": runs})
    with pytest.raises(BadInput, match="unrelated suites"):
        compare(base, other, FAST)


def test_results_without_tasks_are_unmeasurable() -> None:
    rng = np.random.default_rng(24)
    base = synthetic_results(RATES, 3, rng)
    empty = base.model_copy(update={"suite": base.suite.model_copy(update={"tasks": {}}),
                                    "runs": [], "summary": summarize([])})
    with pytest.raises(Unmeasurable):
        compare(base, empty, FAST)
    with pytest.raises(BadInput, match="baseline has no tasks"):
        compare(empty, base, FAST)


def test_added_and_removed_tasks_are_reported_not_gated() -> None:
    rng = np.random.default_rng(16)
    base = synthetic_results(RATES, 3, rng)
    cand = synthetic_results(RATES, 3, rng)
    tasks = dict(cand.suite.tasks)
    del tasks["t14"]
    tasks["new-task"] = TaskInfo(digest="n")
    runs = [r for r in cand.runs if r.task != "t14"]
    cand = cand.model_copy(update={"suite": cand.suite.model_copy(update={"tasks": tasks}),
                                   "runs": runs, "summary": summarize(runs)})
    c = compare(base, cand, FAST)
    assert c.suite.added == ["new-task"] and c.suite.removed == ["t14"]
    assert c.suite.compared == 14
    statuses = {t.task: t.status for t in c.tasks}
    assert statuses["new-task"] == "added" and statuses["t14"] == "removed"


def test_agent_changes_come_from_the_fingerprint_parts() -> None:
    rng = np.random.default_rng(17)
    base = synthetic_results(RATES, 3, rng, model="claude-a")
    cand = synthetic_results(RATES, 3, rng, model="claude-b", fingerprint="agent-b")
    base = base.model_copy(update={"agent": AgentInfo(
        kind="builtin", fingerprint="f1",
        parts={"model": "claude-a", "prompt": "sha256:" + "a" * 16, "tools": "sha256:1"})})
    cand = cand.model_copy(update={"agent": AgentInfo(
        kind="builtin", fingerprint="f2",
        parts={"model": "claude-b", "prompt": "sha256:" + "b" * 16, "tools": "sha256:1",
               "skills": "sha256:" + "c" * 16})})
    c = compare(base, cand, FAST)
    changed = {a.part: (a.baseline, a.candidate) for a in c.agent_changes}
    assert changed["model"] == ("claude-a", "claude-b")
    assert changed["prompt"] == ("a" * 12, "b" * 12)
    assert changed["skills"] == (None, "c" * 12)
    assert "tools" not in changed
    assert "model name" not in changed  # the model part already says it


def test_model_label_change_without_parts_is_reported() -> None:
    rng = np.random.default_rng(23)
    base = synthetic_results(RATES, 3, rng, model="claude-a")
    cand = synthetic_results(RATES, 3, rng, model="claude-a (simulator)")
    c = compare(base, cand, FAST)
    assert [(a.part, a.baseline, a.candidate) for a in c.agent_changes] == [
        ("model name", "claude-a", "claude-a (simulator)")]


def test_pooled_baseline_uses_all_its_runs() -> None:
    rng = np.random.default_rng(18)
    baseline = None
    for i in range(4):
        run = synthetic_results(RATES, 5, rng, commit=f"{i}" * 40,
                                created_at=f"2026-11-2{i}T00:00:00Z")
        baseline, _ = promote(run, baseline, pool_size=20)
    assert baseline is not None
    c = compare(baseline, synthetic_results(RATES, 5, rng), FAST)
    assert c.baseline.runs_per_task == 20 and c.baseline.runs == 300
    assert all(t.baseline_runs == 20 for t in c.tasks)
    assert c.pass_rate_test is not None and c.pass_rate_test.deep_baseline


def test_per_task_changes_are_classified() -> None:
    rng = np.random.default_rng(19)
    rates = [1.0] * 5 + [0.0] * 5 + [0.5] * 5
    cand_rates = [0.0] + [1.0] * 4 + [1.0] + [0.0] * 4 + [0.5] * 5
    c = compare(synthetic_results(rates, 5, rng), synthetic_results(cand_rates, 5, rng), FAST)
    by = {t.task: t for t in c.tasks}
    assert by["t00"].change == "newly_failing" and by["t00"].p_value is not None
    assert by["t05"].change == "newly_passing"
    assert by["t01"].change == "same" and not by["t01"].flaky


def test_power_statement_and_json_round_trip() -> None:
    rng = np.random.default_rng(20)
    c = compare(synthetic_results(RATES, 20, rng), synthetic_results(RATES, 5, rng),
                GateSettings(permutations=999))
    assert c.power is not None and c.power.detectable_drop is not None
    assert "80 % power" in c.power.statement
    again = Comparison.model_validate_json(c.to_json())
    assert again == c
    assert c.model_dump()["verdict"] == c.verdict


def test_compare_is_deterministic() -> None:
    rng = np.random.default_rng(22)
    base, cand = synthetic_results(RATES, 5, rng), synthetic_results(RATES, 5, rng)
    assert compare(base, cand, FAST) == compare(base, cand, FAST)
