"""The simulator smoke (``bench/bench_plan.py --sim``) says what a harmless PR's check shows.

Its summary counted ``Comparison.verdict``, which is "inconclusive" both for a comparison that
exits 3 and for one that is only "unclear" (a gating metric past its margin that its test could
not reliably judge, gate/compare/_unclear.py), which exits 0 and is headlined "Unclear". Every
"inconclusive" PR of the smoke was the second kind: mean turns past +10 % because of a run that
hit the turn cap. The PRs here are the committed baseline's own first-look runs, judged as the
smoke judges them (the plan from baseline.json, its first look).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.bench_plan import look_of, shown, sim_summary
from gate.compare import Comparison, PlanSettings, judge, plan_runs
from gate.core.config import load_config
from gate.core.results import RunResult, Schedule, load_results, new_results
from gate.core.tasks import load_suite
from gate.execution.run import suite_info

REPO = Path(__file__).resolve().parents[2]
#: two medium tasks whose every baseline run took 6 turns
LOOPED = ("rename-get-user", "add-dry-run-flag")


@pytest.fixture(scope="module")
def judged() -> dict[str, Comparison]:
    cfg = load_config(REPO / "gate.toml")
    base = load_results(REPO / "baseline.json")
    suite = load_suite(cfg.path(cfg.suite.tasks))
    settings = cfg.gate.model_copy(update={"power_simulations": 0})
    plan = plan_runs(base, [(t.id, t.digest) for t in suite.tasks],
                     PlanSettings.of(settings, replications=cfg.suite.replications,
                                     sequential=True))
    first = plan.through(1)
    own = [r for r in base.runs if r.replication < first[r.task]]

    def pr(runs: list[RunResult]) -> Comparison:
        f = new_results(model=base.model, agent=base.agent,
                        suite=suite_info(suite, cfg.suite.net_raw), commit=base.commit,
                        runs=runs, schedule=Schedule(replications=max(first.values()),
                                                     sequential=list(plan.settings.uniform())[:1]),
                        simulator={"seed": 1})
        f.plan = plan.record(1)
        return judge(base, f, settings)

    def loop(r: RunResult) -> RunResult:  # the simulator's "loop" failure: re-read to the cap
        return r.model_copy(update={"status": "failed", "turns": 30,
                                    "reason": "max_turns (30) reached"})

    def infra(r: RunResult) -> RunResult:
        return r.model_copy(update={"status": "error", "reason": "sandbox lost"})

    return {
        "unchanged": pr(own),
        "two loops": pr([loop(r) if r.task in LOOPED and r.replication == 0 else r
                         for r in own]),
        "infra": pr([infra(r) if r.replication == 0 else r for r in own]),
        "all fail": pr([r.model_copy(update={"status": "failed"}) for r in own]),
    }


def test_an_unclear_comparison_shows_unclear_not_inconclusive(
        judged: dict[str, Comparison]) -> None:
    c = judged["two loops"]
    # what the old summary counted: the verdict field reads "inconclusive", yet the check is green
    assert (c.verdict, c.exit_code) == ("inconclusive", 0)
    assert c.resolution is not None and c.resolution.unclear == ["turns"]
    assert shown(c) == "unclear"
    assert shown(judged["unchanged"]) == "pass"
    assert shown(judged["all fail"]) == "blocked"
    infra = judged["infra"]
    assert (infra.verdict, infra.exit_code, shown(infra)) == ("inconclusive", 3, "inconclusive")


def test_the_summary_counts_by_what_the_check_shows_and_prints_the_reasons(
        judged: dict[str, Comparison]) -> None:
    draws = [(look_of(judged["unchanged"], 1.94),),
             (look_of(judged["two loops"], 1.94), look_of(judged["unchanged"], 6.75)),
             (look_of(judged["two loops"], 1.94), look_of(judged["two loops"], 6.75)),
             (look_of(judged["infra"], 1.94),)]
    text = "\n".join(sim_summary(draws, 1.94))
    assert text.startswith("pass 2 (exit 0), unclear 1 (exit 0), inconclusive 1 (exit 3); "
                           "2 ended after look 1 (1.94 runs a task), 2 after look 2 (6.75); "
                           "4.34 runs per task (first look 1.94).")
    assert "PR 1:" not in text  # a plain pass is not repeated
    assert "PR 2: ends pass (exit 0)" in text  # an unclear first look is shown
    assert "PR 3: ends unclear (exit 0)" in text and "PR 4: ends inconclusive (exit 3)" in text
    # the reason, the metric and its power at the margin, for every look that was not a pass
    assert "unclear: turns (0 % power at the margin)" in text  # at α/4: the first of three looks
    assert text.count("- mean turns +16 % (p = ") == 3
    assert "- infra errors in" in text


def test_the_summary_of_prs_that_all_looked_again(judged: dict[str, Comparison]) -> None:
    draws = [(look_of(judged["two loops"], 1.94), look_of(judged["unchanged"], 6.75))]
    assert sim_summary(draws, 1.94)[0] == (
        "pass 1 (exit 0); 1 ended after look 2 (6.75 runs a task); 6.75 runs per task (first "
        "look 1.94).")
    three = [(look_of(judged["unchanged"], 1.94),),
             (look_of(judged["two loops"], 1.94), look_of(judged["unchanged"], 3.88),
              look_of(judged["unchanged"], 6.75))]
    assert sim_summary(three, 1.94)[0].startswith(
        "pass 2 (exit 0); 1 ended after look 1 (1.94 runs a task), 1 after look 3 (6.75); ")
    assert sim_summary([], 1.94) == ["no PRs"]
