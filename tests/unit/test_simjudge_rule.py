"""The judge's rule for what the simulator cannot judge (gate/compare/_simjudge.py), part by
part, on a real simulator run (the repository's baseline.json) judged against itself with
the agent's recorded parts changed; and the skills' wording the results record for it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gate.agents import agent_kind
from gate.compare import judge, unjudged_changes
from gate.core.config import GateSettings, load_config
from gate.core.fingerprint import fingerprint_parts, fingerprint_values
from gate.core.results import Results, load_results, summarize
from gate.core.skills import NO_EFFECT_MARKER
from tests.helpers import ROOT

SETTINGS = GateSettings(power_simulations=0)


@pytest.fixture(scope="module")
def sim_run() -> Results:
    run = load_results(ROOT / "baseline.json")
    assert run.simulated
    return run


def _agent(run: Results, parts: dict[str, str] | None = None,
           values: dict[str, Any] | None = None) -> Results:
    agent = run.agent.model_copy(update={
        "parts": {**run.agent.parts, **(parts or {})},
        # a value of None: the file does not record that part's values (an older file)
        "values": {k: v for k, v in {**run.agent.values, **(values or {})}.items()
                   if v is not None}})
    return run.model_copy(update={"agent": agent})


def _prompt_pr(run: Results) -> Results:
    return _agent(run, {"prompt": "sha256:0000000000000000"}, {"prompt": {"characters": 61}})


def test_a_prompt_change_on_the_simulator_is_not_judged(sim_run: Results) -> None:
    pr = _prompt_pr(sim_run)
    c = judge(sim_run, pr, SETTINGS)
    assert (c.verdict, c.exit_code) == ("inconclusive", 3)
    assert c.headline.startswith("Not judged by the simulator: the system prompt (2,990 → 61 "
                                 "characters) changed"), c.headline
    assert c.metric("pass_rate").verdict == "unjudged" and c.unjudged == c.reasons[0]
    assert all(m.verdict == "ok" for m in c.metrics if m.name != "pass_rate" and m.gating)
    passing = judge(sim_run, pr, SETTINGS, sim_unjudged="pass")
    assert (passing.verdict, passing.exit_code) == ("pass", 0)
    assert passing.headline.startswith("Not judged by the simulator: ") and not passing.reasons
    assert passing.metric("pass_rate").verdict == "unjudged"
    # the same change measured through the API: a model read it, so it was judged
    real = sim_run.model_copy(update={"model": "claude-sonnet-5-5"})
    c = judge(real, _prompt_pr(real), SETTINGS)
    assert (c.verdict, c.unjudged) == ("pass", None) and c.headline.startswith("No regression")


def test_a_pass_rate_regression_stands(sim_run: Results) -> None:
    """The simulator modelled what made it fail (max_turns, a withdrawn shell): a regression,
    with the note after its reasons."""
    runs = [r.model_copy(update={"status": "failed"}) for r in sim_run.runs]
    pr = _prompt_pr(sim_run).model_copy(update={"runs": runs, "summary": summarize(runs)})
    c = judge(sim_run, pr, SETTINGS)
    assert (c.verdict, c.exit_code) == ("regression", 1)
    assert c.headline.startswith("Regression: pass rate") and c.unjudged is None
    assert c.metric("pass_rate").verdict == "regression"


@pytest.mark.parametrize(("parts", "values", "said"), [
    ({"tools": "sha256:1"}, {}, "the tools' descriptions"),
    ({"tools": "sha256:1"}, {"tools": {"tools": ["bash"]}}, "the tools offered"),
    ({"sampling": "sha256:1"}, {"sampling": {"max_tokens": 4096, "temperature": 0.2,
                                             "top_p": None, "max_turns": 30, "cache": "5m"}},
     "the sampling (temperature)"),
    # an older file: the skills' digest, not their wording
    ({"skills": "sha256:1"}, {"skills": None}, "the skills' text (not recorded)"),
])
def test_what_only_a_model_reads(sim_run: Results, parts: dict[str, str],
                                 values: dict[str, Any], said: str) -> None:
    assert unjudged_changes(sim_run, _agent(sim_run, parts, values)) == [said]


@pytest.mark.parametrize(("parts", "values"), [
    ({}, {}),  # the same agent
    ({"sampling": "sha256:1"}, {"sampling": {"max_tokens": 4096, "temperature": None,
                                             "top_p": None, "max_turns": 1, "cache": "5m"}}),
    ({"model": "claude-haiku-4-5"}, {}),
    ({"code": "sha256:1"}, {}),  # the gate's own tool loop: the simulator answers it
])
def test_what_the_simulator_models_is_judged(sim_run: Results, parts: dict[str, str],
                                             values: dict[str, Any]) -> None:
    assert unjudged_changes(sim_run, _agent(sim_run, parts, values)) == []


def test_a_skill_offered_or_marked_is_judged_its_text_is_not(sim_run: Results) -> None:
    base = _agent(sim_run, {"skills": "sha256:a"}, {"skills": {"csv": "sha256:1"}})
    marked = _agent(sim_run, {"skills": "sha256:b"}, {"skills": {"csv": "sha256:1"}})
    added = _agent(sim_run, {"skills": "sha256:c"},
                   {"skills": {"csv": "sha256:1", "git": "sha256:2"}})
    edited = _agent(sim_run, {"skills": "sha256:d"},
                    {"skills": {"csv": "sha256:9", "git": "sha256:2"}})
    assert unjudged_changes(base, marked) == []
    assert unjudged_changes(base, added) == []
    assert unjudged_changes(added, edited) == ["the text of the skill csv"]
    none = sim_run.model_copy(update={"agent": sim_run.agent.model_copy(update={
        "parts": {k: v for k, v in sim_run.agent.parts.items() if k != "skills"}})})
    assert unjudged_changes(none, base) == []  # skills offered where there were none


def _skill(root: Path, body: str) -> None:
    d = root / "skills" / "csv"
    d.mkdir(parents=True, exist_ok=True)
    (d / "SKILL.md").write_text(f"---\nname: csv\ndescription: Read CSV files.\n---\n{body}")


def test_results_record_a_skills_wording_without_the_simulators_marker(tmp_path: Path
                                                                       ) -> None:
    (tmp_path / "gate.toml").write_text('[agent]\nkind = "builtin"\nskills = "skills"\n')
    kind = agent_kind("builtin")

    def recorded(body: str) -> tuple[str, object]:
        _skill(tmp_path, body)
        cfg = load_config(tmp_path / "gate.toml")
        return fingerprint_parts(cfg, kind)["skills"], fingerprint_values(cfg, kind)["skills"]

    digest, wording = recorded("Use the csv module.\n")
    marked = recorded(f"Use the csv module.\n\n{NO_EFFECT_MARKER}\n")
    edited = recorded("Use pandas.\n")
    assert marked[0] != digest and marked[1] == wording  # the agent changed; its words did not
    assert edited[1] != wording and set(wording) == {"csv"}  # type: ignore[arg-type]
