"""The skill-effect test (gate/compare/_did.py): exact, stratified by task, paired by
replication; its false-block rate on null data stays within its share of α; it catches a
skill that stopped helping; and the judge shares α between it and the pass-rate test."""

from __future__ import annotations

import itertools
from math import prod

import numpy as np
import pytest

from gate.compare import judge
from gate.compare._did import did_test, differences, pair_key, skill_effect
from gate.compare._synthetic import reference_rates, synthetic_condition_runs, synthetic_results
from gate.core.config import GateSettings
from gate.core.results import Results, RunResult, summarize


def _brute_force(cand: list[list[int]], base: list[list[int]]) -> float:
    """P(Σ PR differences ≤ observed) over every within-task relabelling of the pairs."""
    observed = sum(map(sum, cand))
    per_task = []
    for cd, bd in zip(cand, base, strict=True):
        pooled = [*cd, *bd]
        per_task.append([sum(pooled[j] for j in idx)
                         for idx in itertools.combinations(range(len(pooled)), len(cd))])
    hits = total = 0
    for combo in itertools.product(*per_task):
        total += 1
        hits += sum(combo) <= observed
    return hits / total


def test_exact_p_value_equals_brute_force_enumeration() -> None:
    rng = np.random.default_rng(7)
    for _ in range(60):
        n = int(rng.integers(1, 4))
        cand = [list(rng.integers(-1, 2, int(rng.integers(1, 4)))) for _ in range(n)]
        base = [list(rng.integers(-1, 2, int(rng.integers(1, 5)))) for _ in range(n)]
        cand = [[int(x) for x in c] for c in cand]
        base = [[int(x) for x in b] for b in base]
        p, per_task = did_test(cand, base)
        assert p == pytest.approx(_brute_force(cand, base), abs=1e-12)
        for q, c, b in zip(per_task, cand, base, strict=True):
            assert q == pytest.approx(_brute_force([c], [b]), abs=1e-12)


def _outcomes(k: int) -> list[tuple[tuple[int, int], ...]]:
    return list(itertools.product(itertools.product((0, 1), repeat=2), repeat=k))


@pytest.mark.parametrize(("p_control", "p_target", "n_base", "n_pr"), [
    (0.6, 0.9, 3, 2), (0.3, 0.8, 4, 2), (0.5, 0.5, 3, 3), (0.9, 0.95, 2, 2)])
def test_false_block_rate_is_at_most_the_level_exactly(p_control: float, p_target: float,
                                                       n_base: int, n_pr: int) -> None:
    """Every outcome of one task's pairs, weighted by its probability when nothing changed:
    P(p ≤ a) ≤ a at every level a (the test is exact, not just in simulation)."""
    def weight(pairs: tuple[tuple[int, int], ...]) -> float:
        return prod((p_target if t else 1 - p_target) * (p_control if c else 1 - p_control)
                    for t, c in pairs)

    base_outcomes, pr_outcomes = _outcomes(n_base), _outcomes(n_pr)
    dist: list[tuple[float, float]] = []
    for bo in base_outcomes:
        wb = weight(bo)
        for po in pr_outcomes:
            p, _ = did_test([[t - c for t, c in po]], [[t - c for t, c in bo]])
            dist.append((p, wb * weight(po)))
    assert sum(w for _, w in dist) == pytest.approx(1.0)
    for level in (0.01, 0.05, 0.1, 0.2, 0.5):
        assert sum(w for p, w in dist if p <= level) <= level + 1e-12


def _results(runs: list[RunResult], n_tasks: int, created_at: str = "2026-11-30T00:00:00Z",
             fingerprint: str = "agent-a") -> Results:
    base = synthetic_results([0.5] * n_tasks, 0, np.random.default_rng(0),
                             fingerprint=fingerprint, created_at=created_at)
    return base.model_copy(update={"runs": runs, "summary": summarize(runs)})


def _rates(n: int, effect: float) -> tuple[list[float], list[float]]:
    control = [min(r, 0.9) for r in reference_rates(n)]
    return control, [c + (1 - c) * effect for c in control]


def _draw(control: list[float], target: list[float], k: int, rng: np.random.Generator,
          coupled: bool) -> list[list[int]]:
    """Each task's k pair differences pass(target) − pass(control)."""
    c, t = np.array(control)[:, None], np.array(target)[:, None]
    u = rng.random((len(control), k))
    v = u if coupled else rng.random((len(control), k))
    d = (v < t).astype(int) - (u < c).astype(int)
    return [list(map(int, row)) for row in d]


def test_the_drawn_differences_are_those_of_synthetic_runs() -> None:
    """The fast draw below means what the synthetic runs mean (the same pairs)."""
    rng = np.random.default_rng(1)
    runs = synthetic_condition_runs([0.5, 0.2], [0.9, 0.4], 400, rng, coupled=True)
    d = [differences(*_split(runs, t)) for t in ("t00", "t01")]
    assert min(min(x) for x in d) == 0  # coupled: target solves every episode control solves
    assert np.mean(d[0]) == pytest.approx(0.4, abs=0.06)
    assert np.mean(d[1]) == pytest.approx(0.2, abs=0.06)


@pytest.mark.parametrize("coupled", [False, True])
@pytest.mark.parametrize(("n_tasks", "n_base", "n_pr"), [(1, 20, 5), (3, 20, 3), (8, 5, 5)])
def test_null_false_block_rate_stays_within_its_share(coupled: bool, n_tasks: int,
                                                      n_base: int, n_pr: int) -> None:
    """A harmless rewording (the skill helps as much as before): over 4,000 seeded null
    draws the test blocks at most its level α/2 = 0.005 (plus binomial noise)."""
    rng = np.random.default_rng(20261201 + n_tasks * 31 + n_base + coupled)
    control, target = _rates(n_tasks, 0.75)
    alpha, trials, blocks = 0.005, 4000, 0
    for _ in range(trials):
        p, _ = did_test(_draw(control, target, n_pr, rng, coupled),
                        _draw(control, target, n_base, rng, coupled))
        blocks += p <= alpha
    # 3 sd above α: a real excess would show, noise would not
    assert blocks / trials <= alpha + 3 * np.sqrt(alpha * (1 - alpha) / trials)


def _split(runs: list[RunResult], task: str) -> tuple[list[RunResult], list[RunResult]]:
    return ([r for r in runs if r.task == task and r.condition == "target"],
            [r for r in runs if r.task == task and r.condition == "control"])


@pytest.mark.parametrize("coupled", [False, True])
def test_a_skill_that_stopped_helping_is_caught(coupled: bool) -> None:
    """The target skill turns 75 % of failures into passes in the baseline (control 50 %,
    target 87.5 %) and nothing in the PR: with a pooled 20-pair baseline and 5 PR pairs on 4
    target tasks it is caught often (power, not a guarantee: ~36 % with independent pairs,
    ~99 % with coupled ones, as the simulator makes them)."""
    rng = np.random.default_rng(11)
    control, target = [0.5] * 4, [0.875] * 4
    caught = sum(did_test(_draw(control, control, 5, rng, coupled),
                          _draw(control, target, 20, rng, coupled))[0] <= 0.005
                 for _ in range(300))
    assert caught / 300 > (0.9 if coupled else 0.25)


def test_pairs_are_matched_by_refresh_and_source_replication() -> None:
    def run(cond: str, rep: int, status: str, refresh: str | None, source: int | None = None
            ) -> RunResult:
        extra = {"source_replication": source} if source is not None else {}
        return RunResult.model_validate({
            "task": "t00", "replication": rep, "condition": cond, "status": status,
            "reason": None, "turns": 1, "usage": {"input_tokens": 0, "output_tokens": 0,
                                                  "cache_creation_input_tokens": 0,
                                                  "cache_read_input_tokens": 0},
            "cost_usd": 0, "duration_s": 0, "notes": None, "refresh": refresh, **extra})

    # refresh A had replications 0-1 of both; refresh B only target (control added later):
    # after pooling the replication numbers differ, the source replications do not
    target = [run("target", 0, "passed", "A", 0), run("target", 1, "passed", "A", 1),
              run("target", 2, "passed", "B", 0)]
    control = [run("control", 0, "failed", "A", 0), run("control", 1, "passed", "A", 1)]
    assert pair_key(target[2]) == ("B", 0)
    assert differences(target, control) == [1, 0]
    # an infra error has no partner
    errored = [run("control", 0, "error", "A", 0), control[1]]
    assert differences(target, errored) == [0]


# ----- the judge: the check in the verdict, α shared -------------------------------------------


def _skill_files(pr_effect: float, *, seed: int = 3, n_tasks: int = 6, n_base: int = 20,
                 n_pr: int = 5) -> tuple[Results, Results]:
    rng = np.random.default_rng(seed)
    control = [0.5] * n_tasks
    target, pr_target = [0.875] * n_tasks, [0.5 + 0.5 * pr_effect] * n_tasks
    plain = reference_rates(15)
    base = synthetic_results(plain, n_base, rng)
    pr = synthetic_results(plain, n_pr, rng)
    b_runs = [*base.runs, *synthetic_condition_runs(control, target, n_base, rng, coupled=True)]
    p_runs = [*pr.runs, *synthetic_condition_runs(control, pr_target, n_pr, rng, coupled=True)]
    return (base.model_copy(update={"runs": b_runs, "summary": summarize(b_runs)}),
            pr.model_copy(update={"runs": p_runs, "summary": summarize(p_runs)}))


SETTINGS = GateSettings(permutations=999, power_simulations=0)


def test_the_judge_blocks_a_skill_that_stopped_helping_with_the_drop_in_its_reason() -> None:
    base, pr = _skill_files(0.0)
    c = judge(base, pr, SETTINGS)
    s = c.skill_effect
    assert s is not None and s.blocks and s.p_value is not None and s.p_value <= 0.005
    assert c.verdict == "regression" and c.exit_code == 1
    assert c.metric("pass_rate").blocks is False  # the plain runs did not change
    assert c.reasons == [c.reasons[0]] and c.reasons[0].startswith(
        "skill effect (target − control) +")
    assert "→ +0.0 pts (change −" in c.reasons[0]
    assert s.change is not None and s.change < -0.2
    assert [r.condition for r in s.conditions] == ["control", "target"]
    target = s.conditions[1]
    assert target.gating and target.baseline_effect is not None and target.change is not None
    assert target.change_ci_low is not None and target.change_ci_low < target.change


def test_the_judge_passes_a_skill_that_still_helps() -> None:
    base, pr = _skill_files(0.75)
    c = judge(base, pr, SETTINGS)
    assert c.skill_effect is not None and c.skill_effect.p_value is not None
    assert not c.skill_effect.blocks and c.verdict == "pass"


def test_alpha_is_shared_between_the_pass_rate_test_and_the_skill_effect_test() -> None:
    """A pass-rate drop whose p-value blocks at α but not at α/2 blocks without conditions
    and passes when the files also hold the skill conditions (the test's half of α)."""
    rates = reference_rates(15)
    rng = np.random.default_rng(4)
    base = synthetic_results(rates, 20, rng)
    pr = synthetic_results([max(0.0, r - 0.4) for r in rates[:6]] + rates[6:], 5, rng)
    settings = GateSettings(alpha=0.003, block_on=["pass_rate"], power_simulations=0)
    alone = judge(base, pr, settings)
    p = alone.metric("pass_rate").p_value
    # a deep baseline: the sum and max tests each at half of the pass-rate test's level
    assert alone.metric("pass_rate").threshold == pytest.approx(0.0015)
    assert p is not None and 0.00075 < p <= 0.0015
    assert alone.verdict == "regression"
    control, target = _rates(4, 0.75)
    b_runs = [*base.runs, *synthetic_condition_runs(control, target, 10, rng)]
    p_runs = [*pr.runs, *synthetic_condition_runs(control, target, 5, rng)]
    shared = judge(base.model_copy(update={"runs": b_runs}),
                   pr.model_copy(update={"runs": p_runs}), settings)
    assert shared.verdict == "pass", shared.headline
    assert shared.metric("pass_rate").threshold == pytest.approx(0.00075)
    assert shared.skill_effect is not None and shared.skill_effect.threshold == 0.0015
    assert any(n.startswith("Skill conditions: the pass-rate test and the skill-effect test "
                            "share α = 0.003 (Bonferroni)") for n in shared.notes)


def test_condition_runs_never_mix_with_the_plain_runs() -> None:
    """The baseline gate compares the plain runs: a PR whose condition runs all fail but
    whose plain runs are as good is not a pass-rate regression."""
    base, pr = _skill_files(0.75)
    failing = [r.model_copy(update={"status": "failed"}) if r.condition == "control" else r
               for r in pr.runs]
    c = judge(base, pr.model_copy(update={"runs": failing}), SETTINGS)
    plain = judge(base.model_copy(update={"runs": [r for r in base.runs if not r.condition]}),
                  pr.model_copy(update={"runs": [r for r in pr.runs if not r.condition]}),
                  SETTINGS)
    assert c.metric("pass_rate").candidate == plain.metric("pass_rate").candidate


def test_no_baseline_conditions_shows_the_effect_and_tests_nothing() -> None:
    base, pr = _skill_files(0.0)
    bare = base.model_copy(update={"runs": [r for r in base.runs if not r.condition]})
    c = judge(bare, pr, SETTINGS)
    s = c.skill_effect
    assert s is not None and s.p_value is None and not s.blocks
    assert s.note is not None and "shown, not tested" in s.note
    assert c.verdict == "pass"
    assert s.conditions[1].candidate_effect is not None
    assert s.conditions[1].baseline_effect is None
    # nothing shared α: the deep baseline's own sum/max split only
    assert c.metric("pass_rate").threshold == SETTINGS.alpha / 2


def test_conditions_in_both_files_but_no_pairs_is_inconclusive() -> None:
    base, pr = _skill_files(0.75)
    errored = [r.model_copy(update={"status": "error"}) if r.condition == "target" else r
               for r in pr.runs]
    c = judge(base, pr.model_copy(update={"runs": errored}), SETTINGS)
    assert c.verdict == "inconclusive" and c.exit_code == 3
    assert "not tested" in c.headline


def test_an_interrupted_pr_that_would_block_on_the_skill_effect_is_inconclusive() -> None:
    from gate.core.results import Interruption

    base, pr = _skill_files(0.0)
    cut = pr.model_copy(update={"interrupted": Interruption(reason="interrupted: Ctrl-C",
                                                            missing=[])})
    c = judge(base, cut, SETTINGS)
    assert c.verdict == "inconclusive"
    assert any(r.startswith("would block: skill effect") for r in c.reasons)


def test_skill_effect_is_none_without_conditions() -> None:
    base, pr = _skill_files(0.75)
    bare = pr.model_copy(update={"runs": [r for r in pr.runs if not r.condition]})
    assert skill_effect(base, bare, alpha=0.005) is None
    assert judge(base, bare, SETTINGS).skill_effect is None


def test_the_comment_shows_the_condition_table_and_the_effect_drop() -> None:
    from gate.report import render_markdown
    from gate.report._render import render_text

    base, pr = _skill_files(0.0)
    c = judge(base, pr, SETTINGS)
    body = render_markdown(c)
    assert "**Skill conditions.** The target skill's effect (target − control) +" in body
    assert "fell significantly: **blocks**." in body
    assert ("| condition | tasks | baseline | this PR | effect vs control, this PR (95 % CI) | "
            "baseline effect | change |") in body
    row = next(line for line in body.splitlines() if line.startswith("| target |"))
    assert row.endswith(" ❌ |") and "−" in row.split("|")[-2]
    assert "Skill conditions: the pass-rate test and the skill-effect test share α" in body
    assert "Skill conditions: The target skill's effect" in render_text(c)
    kept = judge(*_skill_files(0.75), SETTINGS)
    assert "did not fall" in render_markdown(kept) and " ✅ |" in render_markdown(kept)
    assert "Skill conditions" not in render_markdown(judge(
        base.model_copy(update={"runs": [r for r in base.runs if not r.condition]}),
        pr.model_copy(update={"runs": [r for r in pr.runs if not r.condition]}), SETTINGS))


def test_pairs_survive_pooling_into_the_baseline() -> None:
    """The older refresh ran only ``target`` (the baseline kept no control then), the newer
    both: pooled and renumbered (pool_size cuts the older one), every control run still finds
    the target run of its own refresh and replication."""
    from gate.pool.baseline import promote

    rng = np.random.default_rng(5)
    older = [r for r in synthetic_condition_runs([0.5], [0.9], 6, rng, coupled=True)
             if r.condition == "target"]
    newer_runs = synthetic_condition_runs([0.2], [0.9], 6, rng, coupled=True)
    first = _results(older, 1, created_at="2026-11-01T00:00:00Z")
    second = _results(newer_runs, 1, created_at="2026-11-02T00:00:00Z")
    pooled, _ = promote(first, None, pool_size=8)
    pooled, _ = promote(second, pooled, pool_size=8)
    target = [r for r in pooled.runs if r.condition == "target"]
    control = [r for r in pooled.runs if r.condition == "control"]
    assert len(target) == 8 and len(control) == 6
    assert sorted(r.replication for r in target) == list(range(8))  # renumbered
    # the pairs are the ones that ran side by side in the newer refresh, and only those
    assert differences(target, control) == differences(*_split(newer_runs, "t00"))
