"""The skill's effect: `gate compare RESULTS --conditions A,B` (docs/skills.md)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gate.compare._effects import effects
from gate.core.config import GateSettings
from gate.core.results import (
    AgentInfo,
    Results,
    RunResult,
    RunUsage,
    Schedule,
    SuiteInfo,
    TaskInfo,
    new_results,
    write_results,
)
from tests.helpers.process import gate
from tests.helpers.suites import RATE, bundled_config


def _run(task: str, condition: str, rep: int, passed: bool, turns: int = 5,
         cost: float = 0.01, prompt: int = 1000) -> RunResult:
    return RunResult(task=task, replication=rep, condition=condition,
                     status="passed" if passed else "failed", reason=None, turns=turns,
                     usage=RunUsage(input_tokens=0, output_tokens=100,
                                    cache_creation_input_tokens=0,
                                    cache_read_input_tokens=prompt * turns),
                     cost_usd=cost, duration_s=1.0 + turns / 10, notes=None)


def _results(runs: list[RunResult], conditions: list[str]) -> Results:
    tasks = sorted({r.task for r in runs})
    return new_results(model="m", agent=AgentInfo(kind="builtin", fingerprint="sha256:x"),
                       suite=SuiteInfo(digest="d", tasks={t: TaskInfo(digest="d") for t in tasks}),
                       commit=None, runs=runs, schedule=Schedule(conditions=conditions))


def test_a_skill_that_helps_on_many_tasks_is_significant_and_one_that_does_nothing_is_not(
        ) -> None:
    runs = []
    for i in range(12):
        t = f"t{i}"
        for k in range(4):
            runs.append(_run(t, "control", k, passed=k == 0, turns=10, cost=0.02))
            runs.append(_run(t, "target", k, passed=k < 3, turns=6, cost=0.012))
            runs.append(_run(t, "negative", k, passed=k == 0, turns=10, cost=0.021,
                             prompt=1100))
    rep = effects(_results(runs, ["control", "target", "negative"]),
                  ["control", "target", "negative"], GateSettings())
    target, negative = rep.effects
    assert rep.comparisons == 2 and target.alpha == pytest.approx(0.005)
    assert target.delta == pytest.approx(0.5) and target.verdict == "helps"
    assert target.ci_low is not None and target.ci_low > 0 and target.p_value is not None
    assert target.p_value < 0.001
    turns = {m.name: m for m in target.metrics}["turns"]
    assert turns.change == pytest.approx(-0.4) and turns.ci_high <= -0.4 + 1e-9
    # the irrelevant skill: the same outcomes; its CI includes 0; a longer prompt, measured
    assert negative.delta == 0 and negative.verdict == "no significant effect"
    assert negative.ci_low is not None and negative.ci_high is not None
    assert negative.ci_low < 0 < negative.ci_high and negative.p_value == 1.0
    prompt = {m.name: m for m in negative.metrics}["prompt_per_request"]
    assert prompt.change == pytest.approx(0.1) and prompt.p_value <= 0.005
    # the per-condition table
    rows = {r.condition: r for r in rep.conditions}
    assert rows["target"].pass_rate == pytest.approx(0.75)
    assert rows["control"].pass_rate == pytest.approx(0.25)


def test_the_pass_rate_test_is_two_sided_and_paired_by_task() -> None:
    # a skill that hurts is caught as such (the test looks both ways)
    runs = [r for i in range(12) for k in range(4) for r in (
        _run(f"t{i}", "control", k, passed=k < 3), _run(f"t{i}", "target", k, passed=k == 0))]
    hurt = effects(_results(runs, ["control", "target"]), ["control", "target"],
                   GateSettings()).effects[0]
    assert hurt.verdict == "hurts" and hurt.delta == pytest.approx(-0.5)
    # paired by task: a condition that ran only easy tasks does not look better for it
    runs = [_run("easy", "control", k, True) for k in range(6)]
    runs += [_run("hard", "control", k, False) for k in range(6)]
    runs += [_run("easy", "target", k, True) for k in range(6)]
    e = effects(_results(runs, ["control", "target"]), ["control", "target"],
                GateSettings()).effects[0]
    assert e.tasks == 1 and e.delta == 0 and e.only_one == ["hard"]


def test_few_runs_give_an_honest_wide_interval() -> None:
    runs = [_run("t", "control", 0, False), _run("t", "target", 0, True)]
    e = effects(_results(runs, ["control", "target"]), ["control", "target"],
                GateSettings()).effects[0]
    assert e.delta == 1.0 and e.verdict == "no significant effect"
    assert e.ci_low is not None and e.ci_low < 0


@pytest.mark.slow  # runs `gate` as a subprocess
def test_conditions_not_in_the_file_are_bad_input(tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    write_results(out, _results([_run("t", "control", 0, True)], ["control"]))
    p = gate("compare", out, "--conditions", "control,target")
    assert p.returncode == 2, p.stderr
    assert f"{out}: no runs under condition 'target'" in p.stderr and "Traceback" not in p.stderr
    p = gate("compare", out, "--conditions", "control")
    assert p.returncode == 2 and "at least two conditions" in p.stderr, p.stderr
    p = gate("compare", out, out, "--conditions", "control,target")
    assert p.returncode == 2 and "takes one argument" in p.stderr, p.stderr


@pytest.mark.slow  # runs `gate` as a subprocess
def test_untrusted_names_are_escaped_in_markdown(tmp_path: Path) -> None:
    evil = "x@org/team <img src=x>"
    runs = [_run("t", "control", 0, True), _run("t", "target", 0, True)]
    res = _results(runs, ["control", "target"])
    res.runs[1].condition = evil
    out = tmp_path / "r.json"
    write_results(out, res)
    p = gate("compare", out, "--conditions", f"control,{evil}", "--format", "markdown")
    assert p.returncode == 0, p.stderr
    assert "<img" not in p.stdout and "@org" not in p.stdout and "&lt;img" in p.stdout


@pytest.mark.slow
def test_done_when_the_helpful_skill_shows_its_benefit_and_the_irrelevant_one_none(
        tmp_path: Path) -> None:
    """`gate run --sim --condition control --condition target --condition negative` on the
    bundled suite's task with a target skill, then the effect report through the CLI."""
    cfg = bundled_config(tmp_path)
    out = tmp_path / "r.json"
    p = gate("run", "--config", cfg, "--sim", "--model", "claude-haiku-4-5", "-k", "15",
             "-j", "4", "--no-transcripts", "--task", RATE, "--condition", "control",
             "--condition", "target", "--condition", "negative", "-o", out, timeout=600)
    assert p.returncode in (0, 1), p.stderr
    p = gate("compare", out, "--config", cfg, "--conditions", "control,target,negative",
             "--format", "json")
    assert p.returncode == 0, p.stderr
    rep = json.loads(p.stdout)
    target, negative = rep["effects"]
    assert (target["b"], negative["b"]) == ("target", "negative")
    # the helpful skill: more passes and far fewer turns on its task, with its uncertainty
    assert target["delta"] > 0.1 and target["ci_low"] < target["delta"] < target["ci_high"]
    turns = {m["name"]: m for m in target["metrics"]}["turns"]
    assert turns["change"] < -0.3 and turns["ci_high"] < 0
    assert [t["task"] for t in target["per_task"]] == [RATE]
    # the irrelevant skill: no benefit, and the interval says so (it includes 0)
    assert negative["delta"] == 0 and negative["verdict"] == "no significant effect"
    assert negative["ci_low"] < 0 < negative["ci_high"]
    # what each skill adds to every prompt
    assert negative["skills_block_bytes"]["negative"] > 0
    assert negative["skills_block_bytes"]["control"] == 0
    prompt = {m["name"]: m for m in negative["metrics"]}["prompt_per_request"]
    assert prompt["b"] > prompt["a"]
    # the same report as text: the per-condition table and both effects
    p = gate("compare", out, "--config", cfg, "--conditions", "control,target,negative")
    assert p.returncode == 0, p.stderr
    assert "target vs control on 1 task: pass rate +" in p.stdout
    assert "negative vs control on 1 task: pass rate +0.0 pts" in p.stdout
    assert "context-offloading" in p.stdout and "git-commit-messages" in p.stdout


@pytest.mark.slow  # runs `gate` as a subprocess
def test_the_html_report_has_the_per_condition_table_escaped_under_its_csp(
        tmp_path: Path) -> None:
    evil = "<script>alert(1)</script>"
    runs = []
    for i in range(3):
        for k in range(2):
            runs += [_run(f"t{i}", "control", k, k == 0), _run(f"t{i}", "target", k, True),
                     _run(f"t{i}", evil, k, k == 0)]
    res = _results(runs, ["control", "target", evil])
    res.model_extra["conditions"] = {  # type: ignore[index]
        "target": {"skills": {f"t{i}": ["context-offloading"] for i in range(3)}}}
    out, page_path = tmp_path / "r.json", tmp_path / "r.html"
    write_results(out, res)
    p = gate("report", out, "--html", page_path)
    assert p.returncode == 0, p.stderr
    page = page_path.read_text()
    section = page[page.index('<section id="conditions">'):]
    section = section[:section.index("</section>")]
    # the leaderboard: every condition with its skills and pass rate
    assert "<th scope=\"row\">target</th><td>context-offloading</td><td>3</td><td>6/6</td>" \
        "<td>100.0 %</td>" in section
    assert "target vs control on 3 tasks: pass rate +50.0 pts" in section
    assert "&lt;script&gt;alert(1)&lt;/script&gt; vs control" in section
    assert page.count("<script") == 2  # the data block and the page's own script, no other
    assert 'href="#conditions"' in page
    # a run without conditions has no such section
    plain_out = tmp_path / "plain.json"
    write_results(plain_out, _results([_run("t", "control", 0, True)], ["control"]))
    p = gate("report", plain_out, "--html", page_path)
    assert p.returncode == 0 and 'id="conditions"' not in page_path.read_text(), p.stderr
