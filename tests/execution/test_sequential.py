"""Sequential PR runs: stop early when clear, run more only when the first look is unsure."""

from __future__ import annotations

import dataclasses
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from gate.compare import PlanSettings, compare, plan_runs
from gate.compare._model import PassRateTest
from gate.compare._synthetic import reference_rates, synthetic_results
from gate.core.config import GateSettings, load_config
from gate.core.results import RunResult, load_results
from gate.execution.run import ConditionArms, RunRequest, run_suite
from gate.execution.sequential import decisive_p, first_look, run_sequential

REPO = Path(__file__).resolve().parents[2]
EASY = ["fix-slugify-whitespace", "fix-low-stock-report", "fix-version-compare"]


@pytest.fixture(scope="module")
def baseline(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    tmp = tmp_path_factory.mktemp("seq")
    cfg = load_config(REPO / "gate.toml")
    return run_suite(RunRequest(config=cfg, output=tmp / "b.json", task_ids=EASY,
                                replications=4, jobs=2, sim=True, seed=11, transcripts=False))


def _request(tmp_path: Path, **agent: object) -> RunRequest:
    cfg = load_config(REPO / "gate.toml")
    if agent:
        cfg = cfg.model_copy(update={"agent": cfg.agent.model_copy(update=agent)})
    return RunRequest(config=cfg, output=tmp_path / "r.json", task_ids=EASY, jobs=2, sim=True,
                      seed=12, transcripts=False)


def test_first_look_rules() -> None:
    baseline = synthetic_results(reference_rates(), 4, np.random.default_rng(0))
    c = compare(baseline, baseline, GateSettings())
    assert c.verdict == "pass"

    def with_p(p_sum: float, p_max: float = 1.0, deep: bool = False):  # type: ignore[no-untyped-def]
        return c.model_copy(update={"pass_rate_test": PassRateTest(
            p_sum=p_sum, p_max=p_max, deep_baseline=deep, rule="")})

    assert first_look(with_p(0.6), 0.25) == "pass"
    assert first_look(with_p(0.1), 0.25) == "continue"
    assert first_look(with_p(0.6, p_max=0.1, deep=True), 0.25) == "continue"
    assert decisive_p(with_p(0.6, p_max=0.1, deep=True)) == 0.1
    assert first_look(c.model_copy(update={"verdict": "regression"}), 0.25) == "block"
    assert first_look(c.model_copy(update={"verdict": "inconclusive"}), 0.25) == "pass"


@pytest.mark.slow
def test_a_clear_regression_stops_after_the_first_look(baseline, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    out = run_sequential(_request(tmp_path, max_turns=1), baseline, GateSettings())
    assert out.looks == 1 and out.comparison.verdict == "regression"
    assert Counter(r.task for r in out.results.runs) == {t: 2 for t in EASY}
    assert "2 runs per task in 1 of 3 looks were enough" in out.note
    assert out.comparison.settings["alpha"] == pytest.approx(0.0025)  # α/4 at the first look
    schedule = out.results.schedule
    assert schedule is not None and schedule.sequential == [2] and schedule.replications == 2


@pytest.mark.slow
def test_an_unsure_first_look_runs_more_and_decides_on_all(baseline, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    settings = GateSettings(sequential_pass_p=0.999)  # nothing is "clearly fine": every look
    out = run_sequential(_request(tmp_path), baseline, settings)
    assert out.looks == 3
    reps = sorted((r.task, r.replication) for r in out.results.runs)
    assert reps == sorted((t, i) for t in EASY for i in range(5))
    on_disk = (tmp_path / "r.json").read_text()
    assert on_disk.count('"replication": 4') == 3  # the last look appended, not overwrote
    assert out.comparison.settings["alpha"] == pytest.approx(0.005)  # α/2 at the last look
    # a 4-run baseline plans nothing: the uniform 2 + 1 + 2
    assert "the first 3 runs per task were not conclusive, so 2 more ran in the last" in out.note
    # the schedule says how the runs were taken (three looks, 2, 1 and 2), on disk too
    assert load_results(tmp_path / "r.json").schedule == out.results.schedule
    schedule = out.results.schedule
    assert schedule is not None and schedule.sequential == [2, 1, 2]
    assert schedule.replications == 5 and schedule.jobs == 2


@pytest.mark.slow
def test_a_middle_look_stops_at_its_own_stop(baseline, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """Each look but the last stops at its own ``sequential_pass_p``: never after the first
    (0.999), always after the second (a p-value above 1e-9) — at the second look's level."""
    settings = GateSettings(sequential_pass_p=[0.999, 1e-9])
    out = run_sequential(_request(tmp_path), baseline, settings)
    assert out.looks == 2 and out.comparison.verdict == "pass"
    assert Counter(r.task for r in out.results.runs) == {t: 3 for t in EASY}
    assert out.comparison.settings["alpha"] == pytest.approx(0.0025)  # α/4 at the second look
    assert "3 runs per task in 2 of 3 looks were enough" in out.note
    assert out.results.plan is not None and out.results.plan.looks_run == 2


@pytest.mark.slow
def test_the_looks_are_the_plans_made_from_the_baseline_before_the_first(
        tmp_path: Path) -> None:
    """One task against a 6-run baseline: the plan (the task's band of its baseline pass
    rate) sizes both looks before the first runs, and the file holds exactly the planned runs
    of the looks it ran. No second look grows past the plan: its size may not read the
    baseline's pass counts outside what the plan records."""
    cfg = load_config(REPO / "gate.toml")
    one = EASY[:1]
    base = run_suite(RunRequest(config=cfg, output=tmp_path / "b.json", task_ids=one,
                                replications=6, jobs=2, sim=True, seed=11, transcripts=False))
    settings = GateSettings(sequential_pass_p=0.999)  # every look unless one blocks
    req = _request(tmp_path, max_turns=1)
    out = run_sequential(dataclasses.replace(req, task_ids=one), base, settings)
    digests = [(t, i.digest) for t, i in base.suite.tasks.items()]
    plan = plan_runs(base, digests, PlanSettings.of(settings, replications=3, sequential=True))
    rec = out.results.plan
    assert rec is not None and rec.looks_run == out.looks
    assert rec.model_copy(update={"looks_run": 3}) == plan.record(3)
    assert rec.tasks[one[0]].allowed is not None  # read the baseline: the tests condition on it
    assert Counter(r.task for r in out.results.runs) == plan.through(out.looks)
    schedule = out.results.schedule
    assert schedule is not None
    assert schedule.sequential == list(plan.tasks[one[0]].looks[:out.looks])
    assert schedule.replications == plan.tasks[one[0]].through(out.looks)


@pytest.mark.slow
def test_skill_conditions_beside_run_with_the_first_look_and_the_later_looks_keep_them(
        baseline, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """``gate ci``'s skill conditions are arms of the suite's session: a sequential run's
    first look runs them whole, the later looks keep them and run none again, and the looks
    decide on the plain runs as they would without them."""
    settings = GateSettings(sequential_pass_p=0.999)  # every look
    # the suite's replications, as gate ci asks (the plan gives every condition those)
    reps = load_config(REPO / "gate.toml").suite.replications
    beside = ConditionArms(("control", "full"), (EASY[0],), reps)
    landed: list[RunResult] = []
    out = run_sequential(dataclasses.replace(_request(tmp_path), beside=beside), baseline,
                         settings, on_result=landed.append)
    assert out.looks == 3 and "2 more ran in the last look" in out.note
    keys = [r.key for r in landed]
    assert len(keys) == len(set(keys)), Counter(keys).most_common(3)  # none ran twice
    assert sorted(k for k in keys if k.condition is not None) == sorted(
        (EASY[0], c, i) for c in ("control", "full") for i in range(reps))
    assert sorted((r.task, r.replication) for r in out.results.runs
                  if r.condition is None) == sorted((t, i) for t in EASY for i in range(5))
    on_disk = load_results(tmp_path / "r.json")  # one file, every run of both looks
    assert sorted(r.key.order for r in on_disk.runs) == sorted(k.order for k in keys)
    assert on_disk.interrupted is None
    assert on_disk.schedule is not None and on_disk.schedule.conditions == ["control", "full"]
    assert on_disk.schedule.sequential == [2, 1, 2]
    assert set((on_disk.model_extra or {})["conditions"]) == {"control", "full"}
    assert on_disk.plan is not None and on_disk.plan.conditions is not None
    assert on_disk.plan.conditions.runs == reps and on_disk.plan.looks_run == 3
