"""The same-job A/B under a plan (issue 40, item 3): through ``gate ci``, both arms hold the
plan the public rule makes from the base's committed baseline — which neither arm is judged
against ("independent") — and the comparison of the arms is judged unconditioned."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from gate.compare import RunPlan, compare, judge, plain_runs, plan_runs
from gate.core.config import load_config
from gate.core.results import load_results
from gate.execution.run import RunRequest, run_suite
from tests.helpers.ci import REPO, TOKEN, Project, _origin, sh, touch_agent, write_sim_suite
from tests.helpers.fake_github import FakeGitHub


def _project(tmp_path: Path) -> Iterator[Project]:
    """The built-in agent on the simulator, ``[ci] judge = "ab"``, and a committed baseline
    of 6 runs a task (3 is the suite's replications): deep enough for the rule to read its
    outcomes and give the tasks other runs than the uniform 3."""
    seed = tmp_path / "seed"
    seed.mkdir()
    sh(seed, "git", "init", "-q", "-b", "main")
    write_sim_suite(seed)
    with (seed / "gate.toml").open("a") as fh:
        fh.write('\n[ci]\njudge = "ab"\n')
    run_suite(RunRequest(config=load_config(seed / "gate.toml"), output=seed / "baseline.json",
                         transcripts=False, sim=True, replications=6))
    origin = _origin(tmp_path, seed)
    with FakeGitHub(REPO, token=TOKEN) as gh:
        yield Project(tmp_path, origin, gh)


@pytest.mark.slow
def test_both_arms_hold_the_committed_baselines_plan_and_are_judged_unconditioned(
        tmp_path: Path) -> None:
    for project in _project(tmp_path):
        ci = project.pr_branch("roomier", touch_agent)
        run = project.gate_ci(ci, "--sim", env={"ANTHROPIC_API_KEY": ""})
        assert run.code == 0, run.stderr
        base, pr = load_results(ci / "results.base.json"), load_results(ci / "results.json")
        committed = load_results(ci / "baseline.json")
        cfg = load_config(ci / "gate.toml")
        assert base.plan is not None and pr.plan is not None
        recorded = RunPlan.from_record(pr.plan)
        assert recorded.settings.replications == cfg.suite.replications
        assert not recorded.settings.sequential  # one look: every replication in both arms
        want = plan_runs(committed, [(t, pr.suite.tasks[t].digest) for t in pr.suite.tasks],
                         recorded.settings, source="independent")
        assert want.source == "independent"
        assert base.plan == pr.plan == want.record(1)
        # the rule read the committed baseline's outcomes: not the uniform schedule
        assert all(p.allowed is not None for p in want.tasks.values()), want.tasks
        assert set(want.through(1).values()) != {cfg.suite.replications}
        for arm in (base, pr):
            ran: dict[str, int] = {}
            for r in arm.runs:
                ran[r.task] = ran.get(r.task, 0) + 1
            assert ran == want.through(1)
        # the arms' comparison reads the plan but conditions on nothing: the plain tests
        c = judge(base, pr, cfg.gate)
        assert c.plan is not None and c.plan.source == "independent"
        assert not c.plan.conditioned and not c.plan.reads_outcomes
        plain = compare(plain_runs(base), plain_runs(pr), cfg.gate)
        assert c.pass_rate_test == plain.pass_rate_test
        assert [m.p_value for m in c.metrics] == [m.p_value for m in plain.metrics]
