"""The schedule does not decide the verdict: runs are measured with a warm start whatever the
replications, jobs or order; the schedule is recorded; cost and cache-hit rate measured under
different metering definitions are reported, never gated (docs/statistics.md)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from gate.agents._builtin import BuiltinAgent
from gate.cli import main
from gate.compare import compare
from gate.compare._synthetic import reference_rates, synthetic_results
from gate.core.config import GateSettings, load_config
from gate.core.results import Results, Schedule, load_results, write_results
from gate.execution.run import RunRequest, run_suite
from gate.meter import METERING
from gate.pool.baseline import promote
from gate.sim import ledger_totals
from tests.helpers.suites import rooted_at

REPO = Path(__file__).resolve().parents[2]
RATES = reference_rates()
FAST = GateSettings(power_simulations=0, permutations=999, metric_alpha=0.02)
EASY = ["fix-slugify-whitespace", "fix-low-stock-report", "fix-version-compare"]


def _scheduled(res: Results, metering: str | None = METERING, **fields: object) -> Results:
    schedule = Schedule(metering=metering, **fields)  # type: ignore[arg-type]
    return res.model_copy(update={"schedule": schedule})


# ---- compare: metering definitions ----


def test_different_metering_reports_cost_and_cache_hits_without_gating() -> None:
    rng = np.random.default_rng(1)
    old = synthetic_results(RATES, 20, rng, cache_hit=[0.9] * 15)  # no schedule: an old file
    worse = _scheduled(synthetic_results(RATES, 5, rng, cache_hit=[0.6] * 15, cost_scale=2.0))
    c = compare(old, worse, FAST)
    for name in ("cost", "cache_hit_rate"):
        m = c.metric(name)
        assert m.verdict == "regression" and m.delta is not None  # reported...
        assert not m.comparable and not m.gating and not m.blocks  # ...not gated
        assert m.note is not None and "metering" in m.note
    assert c.verdict == "pass"
    assert c.schedule is not None and not c.schedule.same_metering
    assert c.schedule.not_comparable == ["cost", "cache_hit_rate"]
    assert c.schedule.reason is not None and METERING in c.schedule.reason
    assert c.baseline.metering is None and c.candidate.metering == METERING
    # the same runs measured alike: the regression blocks
    same = compare(_scheduled(old), worse, FAST)
    assert same.metric("cache_hit_rate").blocks and same.metric("cost").blocks
    assert same.verdict == "regression" and same.schedule is not None
    assert same.schedule.same_metering and same.schedule.reason is None


def test_schedule_fields_may_differ_freely() -> None:
    rng = np.random.default_rng(2)
    base = _scheduled(synthetic_results(RATES, 20, rng), replications=3, jobs=4)
    cand = _scheduled(synthetic_results(RATES, 5, rng, cost_scale=2.0), replications=5, jobs=1,
                      sequential=[2, 3])
    c = compare(base, cand, FAST)
    assert c.schedule is not None and c.schedule.same_metering
    assert c.schedule.differs == ["jobs", "replications", "sequential"]
    assert c.metric("cost").comparable and c.metric("cost").blocks


def test_compare_cli_says_why_a_metric_is_not_gating(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    write_results(tmp_path / "base.json", synthetic_results(RATES, 20, rng))
    write_results(tmp_path / "new.json", _scheduled(
        synthetic_results(RATES, 5, rng, cost_scale=2.0)))
    (tmp_path / "gate.toml").write_text("[gate]\npermutations = 999\npower_simulations = 0\n")
    args = ["compare", str(tmp_path / "base.json"), str(tmp_path / "new.json"), "--config",
            str(tmp_path / "gate.toml")]
    runner = CliRunner()
    res = runner.invoke(main, [*args, "--format", "json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert data["schedule"]["not_comparable"] == ["cost", "cache_hit_rate"]
    cost = next(m for m in data["metrics"] if m["name"] == "cost")
    assert cost["comparable"] is False and cost["blocks"] is False
    for fmt in ("text", "markdown"):
        out = runner.invoke(main, [*args, "--format", fmt]).stdout
        assert "reported, not gated" in out and "not comparable" in out, fmt


# ---- the results file and the baseline ----


def test_a_results_file_without_schedule_or_overhead_still_loads(tmp_path: Path) -> None:
    res = synthetic_results(RATES, 2, np.random.default_rng(4))
    data = json.loads(res.model_dump_json())
    for key in ("schedule",):
        data.pop(key)
    for key in ("overhead_usd", "spend_usd"):
        data["summary"].pop(key)
    for run in data["runs"]:
        run.pop("billed_usage")
        run.pop("overhead_usd")
    path = tmp_path / "old.json"
    path.write_text(json.dumps(data))
    old = load_results(path)
    assert old.schedule is None and old.metering is None
    assert old.runs[0].billed_usage is None and old.runs[0].overhead_usd is None


def test_baseline_restarts_when_the_metering_changes_and_records_each_schedule() -> None:
    def refresh(i: int, metering: str | None, jobs: int) -> Results:
        res = synthetic_results(reference_rates(6), 3, np.random.default_rng(i),
                                commit=f"{i:x}" * 40,
                                created_at=f"2026-11-{10 + i:02d}T00:00:00Z")
        return _scheduled(res, metering, replications=3, jobs=jobs) if metering else res

    old, _ = promote(refresh(1, None, 1), None)
    new, msg = promote(refresh(2, METERING, 4), old)
    assert msg.startswith(f"metering changed (none recorded → {METERING}): starting a new")
    assert {r.commit for r in new.runs} == {"2" * 40}
    pooled, msg = promote(refresh(3, METERING, 8), new)
    assert msg.startswith("pooled 18 runs")
    assert pooled.metering == METERING
    assert [(s["commit"], s["schedule"]["jobs"]) for s in pooled.sources] == [
        ("2" * 40, 4), ("3" * 40, 8)]
    assert all(s["schedule"]["metering"] == METERING for s in pooled.sources)


# ---- through the real pipeline on the simulator ----


def _ledger_cost(res: Results) -> float:
    from gate.core.cost import price_table
    from gate.sim import read_ledger
    from gate.usage import Usage

    prices = price_table()
    return sum(prices.cost(e["model"].removesuffix("-sim"), Usage.from_api(e["usage"]))
               for e in read_ledger(res.model_extra["simulator"]["ledger"])  # type: ignore[index]
               if e.get("usage"))


@pytest.mark.slow
def test_measured_usage_does_not_depend_on_the_schedule(tmp_path: Path) -> None:
    """The same agent at -k 1 and at -k 3: what each run is billed depends on which sibling
    warmed the prefix first; what it is measured does not. Whether billing actually differs
    here depends on timing (which sibling's request lands first), so this test asserts the
    measured side only; test_meter_warm.py shows deterministically that a cold opening
    is measured exactly as its warm sibling is billed."""
    cfg = load_config(REPO / "gate.toml")
    arms = {}
    for k, j in ((1, 1), (3, 8)):
        res = run_suite(RunRequest(config=cfg, output=tmp_path / f"k{k}j{j}.json", task_ids=EASY,
                                   replications=k, jobs=j, sim=True, seed=1, transcripts=False))
        assert res.summary.errors == 0
        assert res.schedule == Schedule(replications=k, jobs=j, metering=METERING)
        assert load_results(tmp_path / f"k{k}j{j}.json").schedule == res.schedule
        # measured + overhead = what the simulator billed, to the token and the cent
        assert res.summary.spend_usd == pytest.approx(_ledger_cost(res), rel=1e-4)
        served = ledger_totals(res.model_extra["simulator"]["ledger"])  # type: ignore[index]
        billed = res.summary.model_extra["billed_tokens"]  # type: ignore[index]
        assert billed["cache_creation_input_tokens"] == served.cache_creation_input_tokens
        assert billed["cache_read_input_tokens"] == served.cache_read_input_tokens
        arms[k] = res

    def key(r: object) -> tuple[object, ...]:
        u = r.usage  # type: ignore[attr-defined]
        return (r.turns, u.input_tokens, u.output_tokens,  # type: ignore[attr-defined]
                u.cache_creation_input_tokens, u.cache_read_input_tokens)

    for run in arms[1].runs:
        # the k = 1 run is the task's first episode; one of the k = 3 runs is the same episode
        twins = [r for r in arms[3].runs if r.task == run.task and key(r) == key(run)]
        assert twins, f"{run.task}: no run of the other schedule measured the same"
        assert run.usage.cache_hit_rate == twins[0].usage.cache_hit_rate
        assert run.cost_usd == pytest.approx(twins[0].cost_usd)
    assert sum(r.overhead_usd or 0 for r in arms[3].runs) > 0


@pytest.mark.slow
@pytest.mark.timeout(900)  # four suite runs
def test_caching_regressions_are_still_blocked_against_the_committed_baseline(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The unchanged agent at k = 1 is not blocked by the committed (k = 3, pooled) baseline;
    ``{{ now }}`` in the system prompt, ``cache = "off"`` and no moving breakpoint are."""
    base = load_results(REPO / "baseline.json", "baseline")
    assert base.metering == METERING and base.model.endswith("(simulator)")
    cfg = rooted_at(load_config(REPO / "gate.toml"), tmp_path)  # now.md beside its gate.toml
    now = tmp_path / "now.md"
    now.write_text("Current time: {{ now }}\n" + (REPO / "agent" / "system.md").read_text())

    def judged(label: str, **agent: object) -> tuple[int, dict[str, dict[str, object]]]:
        c = cfg.model_copy(update={"agent": cfg.agent.model_copy(update=agent)})
        out = tmp_path / f"{label}.json"
        run_suite(RunRequest(config=c, output=out, replications=1, jobs=4, sim=True, seed=4,
                             transcripts=False))
        res = CliRunner().invoke(main, ["compare", str(REPO / "baseline.json"), str(out),
                                        "--format", "json", "--config",
                                        str(REPO / "gate.toml")])
        data = json.loads(res.stdout)
        return res.exit_code, {m["name"]: m for m in data["metrics"]}

    code, metrics = judged("unchanged")
    assert code == 0, metrics
    assert not metrics["cache_hit_rate"]["blocks"] and not metrics["cost"]["blocks"]
    assert metrics["cache_hit_rate"]["comparable"] is True
    for label, agent in (("now", {"system_prompt": "now.md"}), ("off", {"cache": "off"})):
        code, metrics = judged(label, **agent)
        assert code == 1 and metrics["cache_hit_rate"]["blocks"], (label, metrics)
    monkeypatch.setattr(BuiltinAgent, "_messages", lambda self, history: list(history))
    code, metrics = judged("no-moving-breakpoint")
    assert code == 1 and metrics["cache_hit_rate"]["blocks"], metrics
