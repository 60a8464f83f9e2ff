"""``gate ci`` asks the configured upstream (``[agent] upstream``) what it needs, and a job
without it is unmeasurable (exit 3) in one line that names exactly what is missing, before
anything runs; another upstream's credential does not count, and the job never falls back to
the simulator."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers.ci import REPO, TOKEN, Project, make_baseline, sh, touch_agent, write_sim_suite
from tests.helpers.fake_github import FakeGitHub

pytestmark = pytest.mark.slow

#: every upstream's credentials and settings emptied; the cloud look-ups kept off the network
NOTHING = {"ANTHROPIC_API_KEY": "", "AWS_ACCESS_KEY_ID": "", "AWS_SECRET_ACCESS_KEY": "",
           "AWS_SESSION_TOKEN": "", "AWS_BEARER_TOKEN_BEDROCK": "", "AWS_REGION": "",
           "AWS_DEFAULT_REGION": "", "AWS_EC2_METADATA_DISABLED": "true",
           "GATE_GATEWAY_URL": "", "GATE_GATEWAY_TOKEN": "", "GOOGLE_APPLICATION_CREDENTIALS": "",
           "ANTHROPIC_VERTEX_PROJECT_ID": "", "CLOUD_ML_REGION": "", "NO_GCE_CHECK": "True"}
#: a credential of the wrong upstream: it must not satisfy the check
ANTHROPIC_ONLY = {**NOTHING, "ANTHROPIC_API_KEY": "sk-ant-api03-not-this-upstreams-key"}


def _project(tmp_path: Path, upstream: str) -> Iterator[Project]:
    origin = tmp_path / "origin.git"
    sh(tmp_path, "git", "init", "-q", "--bare", "-b", "main", str(origin))
    seed = tmp_path / "seed"
    seed.mkdir()
    sh(seed, "git", "init", "-q", "-b", "main")
    write_sim_suite(seed)
    cfg = seed / "gate.toml"
    cfg.write_text(cfg.read_text().replace("[agent]\n", f'[agent]\nupstream = "{upstream}"\n', 1))
    make_baseline(seed, sim=True)
    sh(seed, "git", "add", "-A")
    sh(seed, "git", "commit", "-q", "-m", f"suite and baseline, on {upstream}")
    sh(seed, "git", "remote", "add", "origin", f"file://{origin}")
    sh(seed, "git", "push", "-q", "origin", "main")
    with FakeGitHub(REPO, token=TOKEN) as gh:
        yield Project(tmp_path, origin, gh)


@pytest.fixture
def gateway_project(tmp_path: Path) -> Iterator[Project]:
    yield from _project(tmp_path, "gateway")


@pytest.fixture
def vertex_project(tmp_path: Path) -> Iterator[Project]:
    yield from _project(tmp_path, "vertex")


def test_a_gateway_job_with_only_an_anthropic_key_names_the_gateways_variables(
        gateway_project: Project) -> None:
    ci = gateway_project.pr_branch("agent-change", touch_agent)
    run = gateway_project.gate_ci(ci, env=ANTHROPIC_ONLY)
    assert run.code == 3, run.stderr
    line = next(ln for ln in run.stderr.splitlines() if "GATE_GATEWAY_URL" in ln)
    assert 'upstream = "gateway" needs GATE_GATEWAY_URL and GATE_GATEWAY_TOKEN' in line
    assert "ANTHROPIC_API_KEY" not in line and "sim: true" in line
    assert "Traceback" not in run.stderr
    assert not (ci / "results.json").exists()  # nothing ran: no simulator stood in


def test_a_vertex_job_names_its_project_region_and_credentials(vertex_project: Project) -> None:
    ci = vertex_project.pr_branch("agent-change", touch_agent)
    run = vertex_project.gate_ci(ci, env=ANTHROPIC_ONLY)
    assert run.code == 3, run.stderr
    line = next(ln for ln in run.stderr.splitlines() if "ANTHROPIC_VERTEX_PROJECT_ID" in ln)
    assert "CLOUD_ML_REGION" in line and "application default credentials" in line
    assert "google-github-actions/auth" in line and "Traceback" not in run.stderr
    assert not (ci / "results.json").exists()
