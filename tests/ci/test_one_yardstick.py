"""``gate compare --base-ref`` and ``gate ci`` judge a pull request the same way by structure:
both open the base's yardstick and read its baseline with gate.ci's ``open_base`` /
``base_baseline`` (``gate run --base-ref`` too, through ``measured_by``), and both call
gate.ci's ``verdict``. Checked in-process on the same pair: the CLI's verdict, headline and
exit against the ci judge stage's (plan → judge, results re-judged from a file).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from gate.ci._context import Context
from gate.ci._event import Event
from gate.ci._judge import judge
from gate.ci._obtain import Obtained
from gate.ci._options import CIOptions
from gate.ci._plan import Basis, make_plan, measured_by
from gate.cli import main
from gate.compare._synthetic import reference_rates, synthetic_results
from gate.core.config import load_config
from gate.core.results import load_results, write_results
from gate.execution.run import RunRequest
from gate.github import CIEnvironment
from tests.helpers.suites import judged_repo


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return judged_repo(tmp_path)


def _ci_judge(repo: Path, results: Path, tmp_path: Path) -> tuple[str, str, int]:
    """gate ci's plan and judge stages on stored results, as a re-judge runs them."""
    req = RunRequest(config=load_config(repo / "gate.toml"), output=results)
    env = CIEnvironment.from_environ({
        "GITHUB_EVENT_NAME": "pull_request", "GITHUB_REPOSITORY": "acme/agent",
        "GITHUB_OUTPUT": str(tmp_path / "outputs"),
        "GITHUB_STEP_SUMMARY": str(tmp_path / "summary")})
    ctx = Context.make(CIOptions(run=req, rejudge=results, log=lambda _: None), env, None)
    with measured_by(req, "main") as (ys, request):
        basis = Basis(ys, repo, ctx.opts.overrides.apply(ys.config.ci), request)
        plan = make_plan(ctx, Event("pr", "rejudge"), basis)
        assert plan.baseline is not None
        got = judge(ctx, plan, Obtained(load_results(results), plan.baseline))
    return got.comparison.verdict, got.comparison.headline, got.exit_code


@pytest.mark.parametrize(("rates", "verdict"), [
    (reference_rates(), "pass"),
    ([0.0] * 15, "regression"),
])
def test_gate_compare_base_ref_and_the_ci_judge_agree(repo: Path, tmp_path: Path,
                                                      rates: list[float], verdict: str) -> None:
    results = tmp_path / "results.json"
    write_results(results, synthetic_results(rates, 5, np.random.default_rng(11)))
    res = CliRunner().invoke(main, ["compare", "--base-ref", "main", str(results),
                                    "--config", str(repo / "gate.toml"), "--format", "json"])
    assert res.exit_code in (0, 1), res.output
    local = json.loads(res.stdout)
    ci = _ci_judge(repo, results, tmp_path)
    assert (local["verdict"], local["headline"], res.exit_code) == ci
    assert local["verdict"] == verdict


def test_no_command_opens_a_yardstick_of_its_own() -> None:
    """``gate compare --base-ref`` and ``gate run --base-ref`` go through gate.ci's plan."""
    cli = Path(__file__).resolve().parents[2] / "gate" / "cli"
    assert [p.name for p in sorted(cli.glob("*.py"))
            if "open_yardstick" in p.read_text(encoding="utf-8")] == []
