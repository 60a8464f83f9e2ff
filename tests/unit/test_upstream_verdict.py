"""A yardstick never crosses upstreams silently (gate/compare/_upstreams.py): a real simulator
run (the repository's baseline.json, which predates the record) judged against itself with
the upstream each arm recorded changed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gate.compare import judge
from gate.core.config import GateSettings
from gate.core.results import Results, UpstreamInfo, load_results, parse_results, summarize
from gate.errors import BadInput
from tests.helpers import ROOT

SETTINGS = GateSettings(power_simulations=0)

DIRECT = UpstreamInfo(upstream="anthropic", provider="anthropic", model_id="claude-sonnet-5-5",
                      host="api.anthropic.com", pricing="anthropic")
GATEWAY = UpstreamInfo(upstream="gateway", provider="gateway", model_id="claude-sonnet-5-5",
                       host="llm.example.internal", pricing="anthropic")
REGIONAL = UpstreamInfo(upstream="gateway", provider="gateway", region="eu-west-1",
                        model_id="claude-sonnet-5-5", host="llm.example.internal",
                        pricing="gateway-regional")


@pytest.fixture(scope="module")
def run() -> Results:
    found = load_results(ROOT / "baseline.json")
    assert found.upstream_api is not None and found.upstream_api.upstream == "anthropic"
    return found.model_copy(update={"upstream_api": None})  # as an older file: no record


def _on(run: Results, upstream: UpstreamInfo | None, *, cost: float = 1.0,
        model: str | None = None) -> Results:
    runs = [r.model_copy(update={"cost_usd": r.cost_usd * cost}) for r in run.runs]
    return run.model_copy(update={"upstream_api": upstream, "runs": runs,
                                  "summary": summarize(runs), "model": model or run.model})


def test_older_files_and_one_upstream_compare_as_ever(run: Results) -> None:
    ever = judge(run, run, SETTINGS)
    for base, pr in ((run, _on(run, GATEWAY)), (_on(run, GATEWAY), run),
                     (_on(run, DIRECT), _on(run, DIRECT))):
        c = judge(base, pr, SETTINGS)
        assert (c.verdict, c.headline, c.notes) == (ever.verdict, ever.headline, ever.notes)


def test_another_upstream_is_named_in_the_verdict(run: Results) -> None:
    c = judge(_on(run, DIRECT), _on(run, GATEWAY), SETTINGS)
    assert (c.verdict, c.exit_code) == ("pass", 0)
    named = ("the baseline was measured on upstream anthropic (anthropic at api.anthropic.com, "
             "model claude-sonnet-5-5), this run on upstream gateway (gateway at "
             "llm.example.internal, model claude-sonnet-5-5)")
    assert c.headline.startswith("No regression") and c.headline.endswith(named)
    assert f"Another upstream: {named}." in c.notes
    assert c.metric("cost").gating  # priced by the same rules: cost gates as ever


def test_where_prices_differ_cost_is_reported_not_gated(run: Results) -> None:
    # three times the cost on the same upstream: a cost regression
    same = judge(_on(run, GATEWAY), _on(run, GATEWAY, cost=3.0), SETTINGS)
    assert same.verdict == "regression" and same.metric("cost").blocks
    # the same numbers priced by another upstream's rules: reported, never gating
    c = judge(_on(run, GATEWAY), _on(run, REGIONAL, cost=3.0), SETTINGS)
    cost = c.metric("cost")
    assert (c.verdict, c.exit_code) == ("pass", 0), c.headline
    assert not cost.comparable and not cost.gating and not cost.blocks
    assert cost.candidate is not None and cost.baseline is not None \
        and cost.candidate > 2.5 * cost.baseline  # still reported
    assert cost.note == "not comparable: the two arms' upstreams price differently"
    assert c.schedule is not None and c.schedule.reason is not None
    assert "cost is reported, not gated" in c.schedule.reason
    assert "priced by anthropic's rules and this run by gateway-regional's" in c.schedule.reason
    assert "region eu-west-1" in c.headline


def test_where_the_model_differs_the_comparison_is_inconclusive_with_the_fix(
        run: Results) -> None:
    c = judge(_on(run, DIRECT), _on(run, GATEWAY, model="claude-opus-5-5 (simulator)"),
              SETTINGS)
    assert (c.verdict, c.exit_code) == ("inconclusive", 3)
    assert c.headline.startswith("Inconclusive: the baseline was measured on upstream "
                                 "anthropic"), c.headline
    assert "the model differs (claude-sonnet-5-5 (simulator) → claude-opus-5-5 (simulator))" \
        in c.reasons[0]
    assert 'Refresh the baseline on this upstream (`gate run` with [agent] upstream = ' \
        '"gateway", then `gate baseline`)' in c.reasons[0]
    # the same change of model on one upstream is the agent's change, judged as ever
    same = judge(_on(run, GATEWAY), _on(run, GATEWAY, model="claude-opus-5-5 (simulator)"),
                 SETTINGS)
    assert same.verdict == "pass"


def test_a_record_that_is_not_one_is_refused_naming_the_field(tmp_path: Path) -> None:
    data = json.loads((ROOT / "baseline.json").read_text())
    data["upstream_api"] = {"upstream": "gateway", "provider": 7, "pricing": "anthropic"}
    with pytest.raises(BadInput) as err:
        parse_results(json.dumps(data).encode(), tmp_path / "r.json")
    assert "upstream_api.provider" in str(err.value)


def test_a_baseline_never_pools_runs_of_another_upstream(run: Results) -> None:
    from gate.pool.baseline import promote

    later = run.model_copy(update={"created_at": "2099-01-01T00:00:00Z", "commit": "f" * 40})
    pooled, said = promote(_on(later, DIRECT), _on(run, DIRECT))
    assert said.startswith("pooled") and len(pooled.runs) > len(run.runs)
    fresh, said = promote(_on(later, GATEWAY), _on(run, DIRECT))
    assert said.startswith("upstream changed (upstream anthropic (anthropic at "
                           "api.anthropic.com, model claude-sonnet-5-5) → upstream gateway"), said
    assert len(fresh.runs) == len(run.runs) and fresh.upstream_api == GATEWAY
    # an older baseline (no record) pools as ever
    _, said = promote(_on(later, GATEWAY), run)
    assert said.startswith("pooled"), said
