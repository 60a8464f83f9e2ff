"""Issue 40, execution: every mode runs the plan (gate/compare/_plan.py) — each task its planned
runs, made from the baseline before any run and recorded in the results file. The bundled
suite's committed baseline.json spreads its tasks over the bands; three of its tasks, one per
band of today's rule, are run here under the simulator."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from gate.compare import PlanSettings, RunPlan, plan_runs
from gate.core.config import load_config
from gate.core.results import Results, load_results, runs_by_task
from gate.core.tasks import load_suite
from gate.errors import BadInput
from gate.execution.ab import run_ab
from gate.execution.run import PlanFrom, RunRequest, run_suite
from gate.execution.session import spend
from gate.execution.shards import merge
from tests.helpers import ROOT
from tests.helpers.process import gate

BASELINE = ROOT / "baseline.json"
#: passed 9, 5 and 4 of 9 in the committed baseline: one task per band of the rule
TASKS = ("add-dry-run-flag", "export-percentile", "robust-env-parser")
K = 3  # [suite] replications: the uniform count the bands scale


def expected_plan(k: int = K, *, sequential: bool = False, source: str = "baseline") -> RunPlan:
    """The plan the public rule makes for TASKS from the committed baseline."""
    cfg = load_config(ROOT / "gate.toml")
    suite = load_suite(ROOT / "tasks", list(TASKS))
    return plan_runs(load_results(BASELINE, "baseline"), [(t.id, t.digest) for t in suite.tasks],
                     PlanSettings.of(cfg.gate, replications=k, sequential=sequential),
                     source=source)  # type: ignore[arg-type]


def runs_per_task(res: Results) -> dict[str, int]:
    return dict(Counter(r.task for r in res.runs))


def planned_keys(plan: RunPlan) -> set[tuple[str, int]]:
    return {(t, r) for t, n in plan.through(1).items() for r in range(n)}


def _cli_args(out: Path, *extra: str | Path) -> list[str | Path]:
    picked = [a for t in TASKS for a in ("--task", t)]
    return ["run", "--config", ROOT / "gate.toml", "--sim", *picked, "-k", str(K), "-j", "3",
            "--seed", "5", "--no-transcripts", *extra, "-o", out]


def test_the_bundled_baseline_spreads_the_three_tasks() -> None:
    """What the tests below rely on: the plan gives the three tasks different runs."""
    plan = expected_plan()
    assert len(set(plan.through(1).values())) > 1, plan.through(1)


@pytest.mark.slow
def test_gate_run_with_a_baseline_runs_and_records_each_tasks_planned_runs(
        tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    p = gate(*_cli_args(out, "--baseline", BASELINE), cwd=tmp_path)
    assert p.returncode in (0, 1), p.stderr
    res = load_results(out)
    plan = expected_plan()
    assert runs_per_task(res) == plan.through(1)
    assert {(r.task, r.replication) for r in res.runs} == planned_keys(plan)
    assert res.plan == plan.record(1) and res.plan.source == "baseline"
    assert res.schedule is not None and res.schedule.sequential is None
    assert res.schedule.replications == max(plan.through(1).values())
    # with --condition a run is not planned: said in one line, exit 2
    p = gate(*_cli_args(tmp_path / "c.json", "--baseline", BASELINE, "--condition",
                        "control"), cwd=tmp_path)
    assert p.returncode == 2 and "--baseline: not with --condition" in p.stderr
    assert "Traceback" not in p.stderr


def _planned_forecast(plan: RunPlan) -> float:
    per_task = runs_by_task(load_results(BASELINE, "baseline").runs)
    return sum(n * sum(spend(r) for r in per_task[t]) / len(per_task[t])
               for t, n in plan.through(1).items())


@pytest.mark.slow
def test_the_budget_forecasts_and_stops_on_the_planned_runs(tmp_path: Path) -> None:
    plan = expected_plan()
    forecast = _planned_forecast(plan)
    out = tmp_path / "r.json"
    p = gate(*_cli_args(out, "--baseline", BASELINE, "--max-cost", f"{forecast / 2}", "-j",
                        "1"), cwd=tmp_path)
    assert p.returncode == 3, p.stderr
    res = load_results(out)
    budget = (res.model_extra or {})["budget"]
    assert budget["forecast_usd"] == pytest.approx(forecast, rel=1e-4)
    landed = {(r.task, r.replication) for r in res.runs}
    assert res.interrupted is not None and res.interrupted.reason.startswith("budget: ")
    missing = {(m.task, m.replication) for m in res.interrupted.missing}
    assert landed and missing and landed | missing == planned_keys(plan)
    assert not landed & missing
    assert res.plan == plan.record(1)


@pytest.mark.slow
def test_resume_continues_the_same_plan_and_refuses_a_journal_of_another(
        tmp_path: Path) -> None:
    plan = expected_plan()
    out = tmp_path / "r.json"
    p = gate(*_cli_args(out, "--baseline", BASELINE, "--max-cost",
                        f"{_planned_forecast(plan) / 3}", "-j", "1"), cwd=tmp_path)
    assert p.returncode == 3, p.stderr
    kept = {(r.task, r.replication) for r in load_results(out).runs}
    assert kept
    # the journal is of the plan made from the baseline: a run without it is another plan
    p = gate(*_cli_args(out, "-j", "1", "--resume"), cwd=tmp_path)
    assert p.returncode == 2, p.stderr
    assert "cannot resume: not the same plan" in p.stderr and "Traceback" not in p.stderr
    p = gate(*_cli_args(out, "--baseline", BASELINE, "-j", "1", "--resume"), cwd=tmp_path)
    assert p.returncode in (0, 1), p.stderr
    res = load_results(out)
    assert res.interrupted is None and res.plan == plan.record(1)
    assert {(r.task, r.replication) for r in res.runs} == planned_keys(plan)
    assert kept <= {(r.task, r.replication) for r in res.runs}


def _request(tmp_path: Path, name: str, **more: object) -> RunRequest:
    return RunRequest(config=load_config(ROOT / "gate.toml"), output=tmp_path / name,
                      task_ids=list(TASKS), replications=K, jobs=3, sim=True, seed=3,
                      transcripts=False, **more)  # type: ignore[arg-type]


@pytest.mark.slow
def test_each_shard_runs_its_tasks_planned_runs_and_the_merge_keeps_the_plan(
        tmp_path: Path) -> None:
    baseline = load_results(BASELINE, "baseline")
    parts = [(tmp_path / f"s{i}.json",
              run_suite(_request(tmp_path, f"s{i}.json", shard=(i, 2),
                                 plan_from=PlanFrom(baseline, "baseline"))))
             for i in (1, 2)]
    plan = expected_plan()
    for _, res in parts:  # each shard: the whole suite's plan, its own tasks' runs
        assert res.plan == plan.record(1)
        mine = (res.model_extra or {})["shard"]["tasks"]
        assert runs_per_task(res) == {t: plan.through(1)[t] for t in mine}
    merged = merge(parts)
    assert merged.plan == plan.record(1)
    assert runs_per_task(merged) == plan.through(1)
    # a shard of another plan is another run: refused, naming it
    (path, second), rec = parts[1], parts[1][1].plan
    assert rec is not None
    other = second.model_copy(update={"plan": rec.model_copy(update={"source": "none"})})
    with pytest.raises(BadInput, match="a shard of another run: its plan differs"):
        merge([parts[0], (path, other)])


@pytest.mark.slow
def test_a_same_job_ab_runs_the_same_plan_in_both_arms(tmp_path: Path) -> None:
    """Both arms planned from the committed baseline, which neither arm is judged against
    ("independent": the tests condition on nothing)."""
    req = _request(tmp_path, "r.json", plan_from=PlanFrom(load_results(BASELINE, "baseline"),
                                                          "independent"))
    pair = run_ab(req, req.config, base_commit=None)
    plan = expected_plan(source="independent")
    for res in (pair.base, pair.pr):
        assert res.plan == plan.record(1) and res.plan.source == "independent"
        assert runs_per_task(res) == plan.through(1)
    on_disk = load_results(pair.base_path)
    assert on_disk.plan == plan.record(1)
