"""The plan's rule (gate/compare/_plan.py): per task, from its own baseline only, monotone in
bands, its ``allowed`` range exactly the pass counts that give the same looks, and the record
round-trips."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from gate.compare import BANDS, PlanSettings, RunPlan, plan_runs, task_looks
from gate.core.results import Results
from tests.helpers.report import _results, _run

SEQ = PlanSettings(rule="by-pass-rate", sequential=True, first=2, more=3, replications=3)
FIXED = PlanSettings(rule="by-pass-rate", sequential=False, first=2, more=3, replications=3)
THREE = dataclasses.replace(SEQ, looks=3)


def test_allowed_is_exactly_the_counts_that_give_the_same_looks() -> None:
    for runs in (5, 6, 12, 20):
        for s in (SEQ, THREE, FIXED):
            for passed in range(runs + 1):
                plan = task_looks(passed, runs, s)
                assert plan.allowed is not None
                lo, hi = plan.allowed
                same = [b for b in range(runs + 1) if task_looks(b, runs, s).looks == plan.looks]
                assert same == list(range(lo, hi + 1)), (runs, passed, same, plan.allowed)


def test_more_runs_where_the_task_passed_at_least_half_the_time() -> None:
    for s in (SEQ, FIXED):
        high, mid, low, never = (task_looks(b, 20, s).looks for b in (20, 12, 4, 0))
        assert high == mid  # one wide band above half: a narrow top band costs the tests power
        assert sum(mid) > sum(low) > sum(never) >= len(never)
        assert min(never) >= 1 and never == tuple(1 for _ in never)  # turns and cost still tell
    assert task_looks(20, 20, SEQ).looks == (2, 5)
    assert task_looks(4, 20, SEQ).looks == (1, 2)
    assert [b.name for b in BANDS] == ["passes at least half the time",
                                       "passes less than half the time", "never passed"]


def test_three_looks_split_the_second_and_keep_the_first_and_the_total() -> None:
    """The shipped design (``sequential_looks = 3``): each band's first look as with two, its
    later runs spread over two looks (the rest to the last; a never-passed task runs none in
    the middle one), the same runs in all; the uniform schedule 2 + 1 + 2; each look's share
    of α ¼, ¼, ½ (and ½, ½ for two looks, all of it for one): one α whatever the looks."""
    from gate.compare import look_share
    from gate.compare._plan import later_looks
    from gate.core.config import GateSettings

    for passed, looks in ((20, (2, 2, 3)), (12, (2, 2, 3)), (4, (1, 1, 1)), (0, (1, 0, 1))):
        three, two = task_looks(passed, 20, THREE).looks, task_looks(passed, 20, SEQ).looks
        assert three == looks and three[0] == two[0] and sum(three) == sum(two)
    assert THREE.uniform() == (2, 1, 2) and task_looks(None, 0, THREE).looks == (2, 1, 2)
    assert later_looks(5, 2) == (2, 3) and later_looks(1, 2) == (0, 1)
    assert later_looks(7, 3) == (2, 2, 3) and later_looks(4, 1) == (4,)
    for n in (1, 2, 3):
        assert sum(look_share(n, k) for k in range(1, n + 1)) == 1.0
    assert [look_share(3, k) for k in (1, 2, 3)] == [0.25, 0.25, 0.5]
    settings = GateSettings()
    assert PlanSettings.of(settings, replications=3, sequential=True) == THREE
    assert (settings.sequential_looks, settings.stop_p(0), settings.stop_p(1)) == (3, 0.2, 0.08)
    assert GateSettings(sequential_looks=2).stop_p(0) == 0.13
    assert GateSettings(sequential_pass_p=0.3).stop_p(1) == 0.3


def test_a_stop_for_each_look_before_the_last_or_one_for_all(tmp_path: Path) -> None:
    from gate.core.config import load_config
    from gate.errors import BadInput

    for toml, said in (("sequential_pass_p = [0.1]", "1 stop for 3 looks: give one for each "
                        "look before the last (2), or one number"),
                       ("sequential_looks = 2\nsequential_pass_p = [0.1, 0.2]",
                        "2 stops for 2 looks"),
                       ("sequential_pass_p = [0.2, 1.0]", "a stop is a p-value between 0 and "
                        "1, not 1"),
                       ("sequential_looks = 4", "sequential_looks: Input should be 2 or 3")):
        (tmp_path / "gate.toml").write_text(f"[gate]\n{toml}\n")
        with pytest.raises(BadInput) as exc:
            load_config(tmp_path / "gate.toml")
        assert said in str(exc.value) and "gate.toml" in str(exc.value), str(exc.value)
    (tmp_path / "gate.toml").write_text("[gate]\nsequential_pass_p = [0.3, 0.05]\n")
    assert load_config(tmp_path / "gate.toml").gate.stop_p(1) == 0.05


def test_a_task_without_baseline_runs_gets_the_uniform_schedule_and_conditions_nothing() -> None:
    assert task_looks(None, 0, SEQ).looks == (2, 3)
    assert task_looks(None, 0, SEQ).allowed is None
    assert task_looks(2, 3, SEQ).allowed is None  # too few runs to plan by
    assert task_looks(0, 20, dataclasses.replace(SEQ, rule="uniform")).looks == (2, 3)


def _baseline() -> Results:
    runs = [_run("easy", i, "passed") for i in range(20)]
    runs += [_run("hard", i, "passed" if i < 4 else "failed") for i in range(20)]
    runs += [_run("hard", 20 + i, "error") for i in range(3)]  # infra errors: not counted
    return _results(runs)


def test_plan_runs_reads_each_task_with_its_digest_and_round_trips() -> None:
    base = _baseline()
    plan = plan_runs(base, [("easy", "d-easy"), ("hard", "d-hard"), ("new", "d3")], SEQ)
    assert plan.look(0)["easy"] > plan.look(0)["hard"]
    assert plan.tasks["hard"].basis.startswith("passed 4 of 20")
    assert plan.tasks["new"].basis == "new to the baseline"
    changed = plan_runs(base, [("easy", "other")], SEQ)
    assert changed.tasks["easy"].allowed is None  # its old runs say nothing of the new task
    assert RunPlan.from_record(plan.record(looks_run=1)) == plan
    assert plan.allowed()["easy"] == plan.tasks["easy"].allowed
    assert plan_runs(None, [("easy", "d-easy")], SEQ).source == "none"


def test_judge_conditions_a_file_planned_from_its_baseline_on_the_plan() -> None:
    """A task that passed 10 of 20 (the floor of its band) and then failed both planned runs:
    given the plan its baseline part cannot have passed fewer than 10, so the only relabelling
    left is the one observed (p = 1); the plain test, blind to the plan, gives 2/7."""
    from gate.compare import compare, judge
    from gate.core.config import GateSettings
    from gate.core.results import Schedule

    base = _results([_run("mid", i, "passed" if i < 10 else "failed") for i in range(20)]
                    + [_run("easy", i, "passed") for i in range(20)])
    plan = plan_runs(base, [("mid", "d-mid"), ("easy", "d-easy")], SEQ)
    assert plan.tasks["mid"].allowed == (10, 20)
    pr = _results([_run("mid", i, "failed") for i in range(2)]
                  + [_run("easy", i, "passed") for i in range(2)])
    pr = pr.model_copy(update={"schedule": Schedule(replications=2, sequential=[2]),
                               "plan": plan.record(looks_run=1)})
    settings = GateSettings(power_simulations=0)
    judged = judge(base, pr, settings).pass_rate_test
    half = settings.model_copy(update={"alpha": 0.005, "metric_alpha": 0.0015})
    given = compare(base, pr, half, allowed=plan.allowed()).pass_rate_test
    plain = compare(base, pr, half).pass_rate_test
    assert judged is not None and given is not None and plain is not None
    assert judged.p_sum == given.p_sum
    assert judged.p_sum > plain.p_sum


def test_judge_refuses_a_plan_whose_settings_are_not_the_rules() -> None:
    import pytest

    from gate.compare import judge
    from gate.core.config import GateSettings
    from gate.errors import BadInput

    base = _baseline()
    plan = plan_runs(base, [("easy", "d-easy"), ("hard", "d-hard")], SEQ)
    rec = plan.record(looks_run=1)
    rec = rec.model_copy(update={"settings": {**rec.settings, "bogus": 1}})
    pr = _results([_run("easy", 0, "passed"), _run("hard", 0, "failed")])
    pr = pr.model_copy(update={"plan": rec})
    with pytest.raises(BadInput, match=r"plan\.settings"):
        judge(base, pr, GateSettings(power_simulations=0))
