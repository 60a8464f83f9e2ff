"""``gate ci`` with the Bedrock upstream on the simulator: main's baseline and a PR's runs are
both measured through Bedrock (the builtin agent through AnthropicBedrock, the meter signing
with SigV4 for the simulator's Bedrock front), the results say so, and a PR that changes the
agent is judged against a baseline of the same upstream; without the simulator and without AWS
credentials the job is unmeasurable and says how a job gets them."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from gate.core.results import load_results
from tests.helpers.ci import (
    REPO,
    TOKEN,
    Project,
    make_baseline,
    sh,
    touch_agent,
    write_sim_suite,
)
from tests.helpers.fake_github import FakeGitHub

pytestmark = pytest.mark.slow

NO_AWS = {"ANTHROPIC_API_KEY": "", "AWS_ACCESS_KEY_ID": "", "AWS_SECRET_ACCESS_KEY": "",
          "AWS_SESSION_TOKEN": "", "AWS_BEARER_TOKEN_BEDROCK": "",
          "AWS_EC2_METADATA_DISABLED": "true"}


def _on_bedrock(root: Path) -> None:
    cfg = root / "gate.toml"
    cfg.write_text(cfg.read_text().replace("[agent]\n", '[agent]\nupstream = "bedrock"\n', 1))


@pytest.fixture
def bedrock_project(tmp_path: Path) -> Iterator[Project]:
    origin = tmp_path / "origin.git"
    sh(tmp_path, "git", "init", "-q", "--bare", "-b", "main", str(origin))
    seed = tmp_path / "seed"
    seed.mkdir()
    sh(seed, "git", "init", "-q", "-b", "main")
    write_sim_suite(seed)
    _on_bedrock(seed)
    make_baseline(seed, sim=True)
    sh(seed, "git", "add", "-A")
    sh(seed, "git", "commit", "-q", "-m", "suite and baseline, on Bedrock")
    sh(seed, "git", "remote", "add", "origin", f"file://{origin}")
    sh(seed, "git", "push", "-q", "origin", "main")
    with FakeGitHub(REPO, token=TOKEN) as gh:
        yield Project(tmp_path, origin, gh)


def test_a_pr_on_bedrock_is_measured_against_a_bedrock_baseline(
        bedrock_project: Project) -> None:
    ci = bedrock_project.pr_branch("agent-change", touch_agent)
    base = load_results(ci / "baseline.json", "baseline")
    assert base.upstream_api is not None and base.upstream_api.upstream == "bedrock"
    run = bedrock_project.gate_ci(ci, "--sim", env=NO_AWS)
    assert run.code in (0, 3), run.stderr  # never a regression: the agent did not change
    assert run.outputs["verdict"] != "regression"
    res = load_results(ci / "results.json")
    assert res.upstream_api is not None
    assert (res.upstream_api.upstream, res.upstream_api.provider) == ("bedrock", "aws-bedrock")
    assert res.summary.errors == 0 and res.summary.passed > 0
    assert "another upstream" not in run.summary.lower()
    run.no_secrets(bedrock_project.gh)


def test_without_the_simulator_and_without_aws_credentials_it_is_unmeasurable(
        bedrock_project: Project) -> None:
    ci = bedrock_project.pr_branch("agent-change-2", touch_agent)
    run = bedrock_project.gate_ci(ci, env={**NO_AWS, "AWS_REGION": "us-east-1"})
    assert run.code == 3, run.stderr
    line = next(ln for ln in run.stderr.splitlines() if "AWS_ACCESS_KEY_ID" in ln)
    assert 'upstream = "bedrock" needs AWS credentials' in line  # the region was given
    assert "AWS_REGION (or" not in line and "configure-aws-credentials" in line
