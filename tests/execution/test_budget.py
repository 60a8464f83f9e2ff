"""Issue 13, budget: `--max-cost` forecasts from the baseline and stops starting runs before
the budget is passed (exit 3, an honest partial result); the meter enforces each run's turn
cap and cost cap for every agent kind, and the run records why it stopped."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from gate.core.results import RunResult, load_results, new_results
from gate.core.tasks import load_suite
from gate.execution.run import Budget
from gate.sim import read_ledger
from tests.helpers.process import gate
from tests.helpers.suites import tiny_suite

STDLIB_AGENT = Path(__file__).parents[1] / "agents" / "stdlib_agent.py"


def _run(task: str, replication: int, spend: float) -> RunResult:
    return RunResult.model_validate({
        "task": task, "replication": replication, "status": "passed", "reason": None,
        "turns": 1, "usage": {"input_tokens": 1, "output_tokens": 1,
                              "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0},
        "cost_usd": spend * 0.75, "overhead_usd": spend * 0.25, "duration_s": 1.0,
        "notes": None})


def test_budget_admits_while_spent_plus_in_flight_fits_then_starts_nothing(
        tmp_path: Path) -> None:
    suite = load_suite(tiny_suite(tmp_path / "suite"))
    a, b, c = sorted(suite.tasks, key=lambda t: t.id)
    baseline = new_results(
        model="m", agent={"kind": "builtin", "fingerprint": "f"},
        suite={"digest": "d", "tasks": {t.id: {"digest": t.digest} for t in suite.tasks}},
        commit=None, runs=[_run(a.id, 0, 0.3), _run(a.id, 1, 0.5), _run(b.id, 0, 0.2),
                           _run(c.id, 0, 0.9)])
    work = [(a, 0), (b, 0), (c, 0), (b, 1)]
    budget = Budget(1.0, baseline, work, kept=[])
    assert budget.forecast == pytest.approx(0.4 + 0.2 + 0.9 + 0.2)  # per-task mean spend
    assert budget.admit(a, 0) and budget.admit(b, 0)  # 0.4 + 0.2 in flight
    assert not budget.admit(c, 0)  # 0.6 + 0.9 would pass 1.0
    assert "$0.0000 spent + $0.6000 in flight + $0.9000 forecast" in (budget.stopped or "")
    assert not budget.admit(b, 1)  # stopped: nothing starts after, even what would fit
    budget.landed(_run(a.id, 0, 0.35))
    assert budget.record() == {"max_cost_usd": 1.0, "forecast_usd": pytest.approx(1.7),
                               "forecast_basis": "baseline per-task mean spend",
                               "spent_usd": pytest.approx(0.35), "skipped_runs": 2,
                               "stopped": budget.stopped}
    # runs kept from a killed run count as spent
    assert not Budget(1.0, baseline, work, kept=[_run(a.id, 0, 0.95)]).admit(b, 0)


def _config(tmp_path: Path, agent: str = 'kind = "builtin"') -> Path:
    tasks = tiny_suite(tmp_path / "suite")
    cfg = tmp_path / "gate.toml"
    cfg.write_text(f'[agent]\n{agent}\n[suite]\ntasks = "{tasks}"\n')
    return cfg


@pytest.mark.slow
def test_a_budget_below_the_forecast_stops_early_with_exit_3_and_says_what_was_skipped(
        tmp_path: Path) -> None:
    cfg = _config(tmp_path)
    common = ["--config", cfg, "--sim", "-j", "1", "--no-transcripts"]
    first = tmp_path / "first.json"
    p = gate("run", *common, "-k", "1", "-o", first)
    assert p.returncode in (0, 1), p.stderr
    p = gate("baseline", first, "--baseline", tmp_path / "baseline.json")
    assert p.returncode == 0, p.stderr
    base = load_results(tmp_path / "baseline.json")
    forecast = 2 * sum(r.cost_usd + (r.overhead_usd or 0) for r in base.runs)

    out = tmp_path / "r.json"
    limit = forecast / 2
    p = gate("run", *common, "-k", "2", "--max-cost", f"{limit}", "-o", out)
    assert p.returncode == 3, p.stdout + p.stderr
    assert f"budget ${limit:.4f}: forecast ${forecast:.4f} (baseline per-task mean spend)" \
        in p.stderr
    assert "--max-cost" in p.stderr and "skipped" in p.stderr and "Traceback" not in p.stderr
    res = load_results(out)
    budget = (res.model_extra or {})["budget"]
    landed = {(r.task, r.replication) for r in res.runs}
    assert 0 < len(landed) < 6
    assert budget["forecast_usd"] == pytest.approx(forecast, rel=1e-4)
    assert budget["skipped_runs"] == 6 - len(landed)
    assert budget["spent_usd"] == pytest.approx(res.summary.spend_usd, rel=1e-4)
    # honest: the file says it stopped for the budget and lists every run it skipped
    assert res.interrupted is not None and res.interrupted.reason.startswith("budget: ")
    planned = {(t, r) for t in base.suite.tasks for r in range(2)}
    assert {(m.task, m.replication) for m in res.interrupted.missing} == planned - landed
    p = gate("baseline", out, "--baseline", tmp_path / "b2.json")
    assert p.returncode == 2 and "cannot become the baseline" in p.stderr
    # a larger budget resumes it to the end
    p = gate("run", *common, "-k", "2", "--max-cost", f"{forecast * 10}", "-o", out,
             "--resume")
    assert p.returncode in (0, 1), p.stderr
    assert load_results(out).interrupted is None and len(load_results(out).runs) == 6


@pytest.mark.slow
def test_without_a_baseline_the_budget_binds_on_spend_and_says_so(tmp_path: Path) -> None:
    cfg = _config(tmp_path)
    p = gate("run", "--config", cfg, "--sim", "-j", "1", "--no-transcripts", "-k", "1",
             "--max-cost", "0", "-o", tmp_path / "r.json")
    assert p.returncode == 3, p.stderr
    assert "no baseline to forecast from" in p.stderr
    res = load_results(tmp_path / "r.json")
    assert res.runs == [] and res.interrupted is not None and len(res.interrupted.missing) == 3


@pytest.mark.slow
def test_the_meter_holds_a_command_agent_to_the_task_turn_cap(tmp_path: Path) -> None:
    cfg = _config(tmp_path, f'kind = "command"\ncommand = "{sys.executable} {STDLIB_AGENT}"')
    toml = tmp_path / "suite" / "build-report" / "task.toml"
    out = tmp_path / "r.json"
    # uncapped (the default 30), this agent takes more than 2 turns here; it counts none itself
    p = gate("run", "--config", cfg, "--sim", "--task", "build-report", "-k", "1",
             "-o", tmp_path / "free.json")
    assert load_results(tmp_path / "free.json").runs[0].turns > 2, p.stderr
    toml.write_text(toml.read_text() + "max_turns = 2\n")
    p = gate("run", "--config", cfg, "--sim", "--task", "build-report", "-k", "1", "-o", out)
    assert p.returncode in (0, 1), p.stderr
    run = load_results(out).runs[0]
    assert run.turns == 2 and run.status == "failed", run
    assert run.capped == "turn cap reached (max_turns = 2)"
    assert run.reason == "stopped by the meter: turn cap reached (max_turns = 2)"
    # the third request never reached the model: the simulator served exactly two
    ledger = (load_results(out).model_extra or {})["simulator"]["ledger"]
    assert sum(1 for e in read_ledger(ledger) if e.get("usage")) == 2
    events = [json.loads(line) for line in Path(run.transcript or "").read_text().splitlines()]
    assert {"type": "meter_capped", "reason": run.capped}.items() <= {
        k: v for e in events if e["type"] == "meter_capped" for k, v in e.items()}.items()


@pytest.mark.slow
@pytest.mark.parametrize("agent", ["command", "builtin"])
def test_the_meter_holds_a_run_to_its_cost_cap(tmp_path: Path, agent: str) -> None:
    cfg = _config(tmp_path, f'kind = "command"\ncommand = "{sys.executable} {STDLIB_AGENT}"'
                  if agent == "command" else 'kind = "builtin"')
    out = tmp_path / "r.json"
    p = gate("run", "--config", cfg, "--sim", "--task", "build-report", "-k", "1", "-o", out,
             "--max-run-cost", "0.000001")
    assert p.returncode in (0, 1), p.stderr
    res = load_results(out)
    run = res.runs[0]
    assert run.turns == 1 and run.capped == "cost cap reached (max run cost $1e-06)", run
    assert run.status == "failed" and (run.reason or "").startswith("stopped by the meter")
    assert (res.model_extra or {})["max_run_cost_usd"] == 0.000001
