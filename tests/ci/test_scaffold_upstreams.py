"""`gate init --upstream gateway|bedrock`'s refresh workflow, played as the runner plays it:
its gate step's `env:` (the repository variable and secret `gate init` names, expanded) under
action.yml's own step env, into `gate ci` against the GitHub stand-in, with the simulator
standing in for the team's gateway (accepting its bearer token only) or for Bedrock (checking
SigV4 for its own key). No `sim: true`: the run is metered through that upstream and the
results say so. The same gateway workflow without the secret (a fork's run, or a repository
that has not added it) is unmeasurable, naming what is missing. For Bedrock the role step
(aws-actions/configure-aws-credentials) is played by its contract: it exports the role
session's keys and the region of the repository variable to the steps after it."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from gate.core.results import load_results
from gate.sim import Simulator, key_id, read_ledger
from tests.helpers.action import _gate_step_env
from tests.helpers.ci import REPO, TOKEN, Project, push_event, sh
from tests.helpers.fake_github import FakeGitHub
from tests.helpers.process import gate, user_env

pytestmark = pytest.mark.slow
GATEWAY_TOKEN = "gw-scaffold-token-0123456789abcdef"
EXPR = re.compile(r"\$\{\{\s*(secrets|vars)\.([A-Z0-9_]+)\s*\}\}")


def _scaffold(tmp_path: Path, upstream: str) -> Iterator[Project]:
    seed = tmp_path / "seed"
    seed.mkdir()
    sh(seed, "git", "init", "-q", "-b", "main")
    p = gate("init", "--branch", "main", "--upstream", upstream, cwd=seed, base=user_env())
    assert p.returncode == 0, p.stderr
    sh(seed, "git", "add", "-A")
    sh(seed, "git", "commit", "-q", "-m", f"gate init --upstream {upstream}")
    origin = tmp_path / "origin.git"
    sh(tmp_path, "git", "init", "-q", "--bare", "-b", "main", str(origin))
    sh(seed, "git", "remote", "add", "origin", f"file://{origin}")
    sh(seed, "git", "push", "-q", "origin", "main")
    with FakeGitHub(REPO, token=TOKEN) as gh:
        gh.origin = origin
        yield Project(tmp_path, origin, gh)


@pytest.fixture
def scaffold(tmp_path: Path) -> Iterator[Project]:
    yield from _scaffold(tmp_path, "gateway")


@pytest.fixture
def bedrock_scaffold(tmp_path: Path) -> Iterator[Project]:
    yield from _scaffold(tmp_path, "bedrock")


def _gate_step(checkout: Path, name: str) -> dict[str, Any]:
    wf = yaml.safe_load((checkout / ".github" / "workflows" / name).read_text())
    (job,) = wf["jobs"].values()
    (step,) = [s for s in job["steps"] if s.get("id") == "gate"]
    assert isinstance(step, dict)
    return step


def _expanded(values: dict[str, Any], repo: dict[str, str]) -> dict[str, str]:
    """A step's `env:`, its `secrets.*` / `vars.*` as the repository holds them ("" unset)."""
    return {k: EXPR.sub(lambda m: repo.get(m[2], ""), str(v)) for k, v in values.items()}


def _refresh(scaffold: Project, action: dict[str, Any], repo: dict[str, str]) -> Any:
    main = scaffold.clone(f"main-ci-{len(scaffold.gh.requests)}")
    step = _gate_step(main, "agent-gate-main.yml")
    assert "with" not in step  # no anthropic-api-key: the gateway's are in its env
    workflow_env = _expanded(step["env"], repo)
    assert set(workflow_env) == {"GATE_GATEWAY_URL", "GATE_GATEWAY_TOKEN"}
    _, action_env, _ = _gate_step_env(action, {}, TOKEN)
    # a composite action's steps inherit the calling step's env; their own comes on top
    env = {**workflow_env, **action_env}
    return main, scaffold.gate_ci(main, event="push", event_path=push_event(main),
                                  ref="refs/heads/main", env=env)


def test_the_gateway_scaffold_refreshes_through_the_gateway(
        scaffold: Project, action: dict[str, Any], tmp_path: Path) -> None:
    ledger = tmp_path / "gateway-ledger.jsonl"
    tasks = scaffold.clone("tasks-src") / "tasks"
    with Simulator(tasks_dir=tasks, ledger_path=ledger, auth="gateway",
                   credential=GATEWAY_TOKEN) as gw:
        main, run = _refresh(scaffold, action, {"GATE_GATEWAY_URL": gw.base_url,
                                                "GATE_GATEWAY_TOKEN": GATEWAY_TOKEN})
    assert run.code == 0, run.stderr
    assert run.outputs["refresh"] == "committed", run.outputs
    res = load_results(main / "results.json")
    assert res.upstream_api is not None
    assert (res.upstream_api.upstream, res.upstream_api.host) == ("gateway", "127.0.0.1")
    assert res.summary.total > 0 and res.summary.errors == 0
    served = read_ledger(ledger)
    assert served and {e["key_id"] for e in served} == {key_id(GATEWAY_TOKEN)}
    run.no_secrets(scaffold.gh)


def test_without_the_gateways_secret_the_refresh_names_what_is_missing(
        scaffold: Project, action: dict[str, Any]) -> None:
    _, run = _refresh(scaffold, action, {"GATE_GATEWAY_URL": "https://gw.example"})
    assert run.code == 3, run.stderr
    assert "GATE_GATEWAY_TOKEN is empty" in run.stderr and "sim: true" in run.stderr
    assert "Traceback" not in run.stderr


def test_the_bedrock_scaffold_refreshes_through_bedrock_in_the_roles_region(
        bedrock_scaffold: Project, action: dict[str, Any], tmp_path: Path) -> None:
    from gate.upstream import SIM_ACCESS_KEY

    main = bedrock_scaffold.clone("main-ci")
    wf = yaml.safe_load((main / ".github/workflows/agent-gate-main.yml").read_text())
    (job,) = wf["jobs"].values()
    assert job["permissions"]["id-token"] == "write"
    role, gate_step = job["steps"][1], job["steps"][2]
    assert role["uses"].startswith("aws-actions/configure-aws-credentials@")
    assert gate_step["id"] == "gate" and "with" not in gate_step and "env" not in gate_step
    repo_vars = {"AGENT_GATE_AWS_ROLE": "arn:aws:iam::111122223333:role/agent-gate",
                 "AGENT_GATE_AWS_REGION": "eu-west-1"}
    given = _expanded(role["with"], repo_vars)
    assert given == {"role-to-assume": repo_vars["AGENT_GATE_AWS_ROLE"],
                     "aws-region": "eu-west-1"}
    secret = "sim-role-session-secret-0123456789"
    ledger = tmp_path / "bedrock-ledger.jsonl"
    with Simulator(tasks_dir=main / "tasks", ledger_path=ledger, auth="bedrock",
                   credential=secret) as bedrock:
        # the role step's contract: the session's keys and the region, for the later steps
        exported = {"AWS_ACCESS_KEY_ID": SIM_ACCESS_KEY, "AWS_SECRET_ACCESS_KEY": secret,
                    "AWS_REGION": given["aws-region"], "AWS_DEFAULT_REGION": given["aws-region"],
                    # the network: bedrock-runtime.eu-west-1 is the simulator's front here
                    "GATE_BEDROCK_URL": bedrock.base_url, "AWS_EC2_METADATA_DISABLED": "true"}
        _, action_env, _ = _gate_step_env(action, {}, TOKEN)
        run = bedrock_scaffold.gate_ci(main, event="push", event_path=push_event(main),
                                       ref="refs/heads/main", env={**exported, **action_env})
    assert run.code == 0, run.stderr
    assert run.outputs["refresh"] == "committed", run.outputs
    record = load_results(main / "results.json").upstream_api
    assert record is not None
    assert (record.upstream, record.region) == ("bedrock", "eu-west-1")
    assert record.model_id is not None and record.model_id.startswith("eu.anthropic.")
    assert read_ledger(ledger)  # served by the simulator behind its SigV4 check
    run.no_secrets(bedrock_scaffold.gh)


@pytest.fixture
def vertex_scaffold(tmp_path: Path) -> Iterator[Project]:
    yield from _scaffold(tmp_path, "vertex")


def test_the_vertex_scaffold_refreshes_through_vertex_in_its_project_and_region(
        vertex_scaffold: Project, action: dict[str, Any], tmp_path: Path) -> None:
    """The auth step (google-github-actions/auth) played by its contract: a credentials file
    named by GOOGLE_APPLICATION_CREDENTIALS (here a service account's key whose token endpoint
    is served on loopback); the job's project and region from the repository variables."""
    from tests.helpers.google import service_account_key, token_endpoint

    main = vertex_scaffold.clone("main-ci")
    wf = yaml.safe_load((main / ".github/workflows/agent-gate-main.yml").read_text())
    (job,) = wf["jobs"].values()
    assert job["permissions"]["id-token"] == "write"
    auth = job["steps"][1]
    assert auth["uses"].startswith("google-github-actions/auth@")
    repo_vars = {"ANTHROPIC_VERTEX_PROJECT_ID": "gate-test-project",
                 "CLOUD_ML_REGION": "europe-west1",
                 "AGENT_GATE_GCP_PROVIDER": "projects/1/locations/global/workloadIdentityPools/"
                                            "github/providers/repo",
                 "AGENT_GATE_GCP_SERVICE_ACCOUNT": "gate@gate-test-project.iam.gserviceaccount.com"}
    assert all(_expanded(auth["with"], repo_vars).values())
    job_env = _expanded(job["env"], repo_vars)
    ledger = tmp_path / "vertex-ledger.jsonl"
    with token_endpoint() as (ep, key), \
            Simulator(tasks_dir=main / "tasks", ledger_path=ledger, auth="vertex") as vertex:
        exported = {"GOOGLE_APPLICATION_CREDENTIALS":
                    str(service_account_key(tmp_path / "gha-creds.json", key, ep.url)),
                    # the network: {region}-aiplatform.googleapis.com is the simulator here
                    "ANTHROPIC_VERTEX_BASE_URL": f"{vertex.base_url}/v1",
                    "NO_GCE_CHECK": "True"}
        _, action_env, _ = _gate_step_env(action, {}, TOKEN)
        run = vertex_scaffold.gate_ci(main, event="push", event_path=push_event(main),
                                      ref="refs/heads/main",
                                      env={**job_env, **exported, **action_env})
    assert run.code == 0, run.stderr
    assert run.outputs["refresh"] == "committed", run.outputs
    record = load_results(main / "results.json").upstream_api
    assert record is not None
    assert (record.upstream, record.region) == ("vertex", "europe-west1")
    assert record.model_extra == {"project": "gate-test-project"}
    assert ep.issued and read_ledger(ledger)  # signed with the gate's own Google token
    run.no_secrets(vertex_scaffold.gh)


def test_a_forks_pr_on_the_bedrock_scaffold_is_given_nothing_and_says_so(
        bedrock_scaffold: Project, action: dict[str, Any]) -> None:
    """GitHub gives a fork's pull request no OIDC token: the role step's `if:` skips it there
    (the fork is in the event), so the gate step runs with no AWS credentials, and the run
    says GitHub gave it none (exit 3 by the default [ci] fork_without_key), never measuring
    with anything else and never on the simulator."""
    from gate.upstream._contract import OIDC_STEP_IF

    def change_agent(work: Path) -> None:
        (work / "agent" / "system.md").write_text("Be brief.\n" * 200)

    pr = bedrock_scaffold.pr_branch("from-fork", change_agent)
    wf = yaml.safe_load((pr / ".github/workflows/agent-gate.yml").read_text())
    (job,) = wf["jobs"].values()
    role = job["steps"][1]
    assert "if: " + role["if"] == OIDC_STEP_IF  # head.repo.fork is true in a fork's event
    event = bedrock_scaffold.event(pr, head_repo="stranger/agent")
    _, action_env, _ = _gate_step_env(action, {}, TOKEN)
    run = bedrock_scaffold.gate_ci(pr, event_path=event, env={
        **action_env, "AWS_EC2_METADATA_DISABLED": "true"})
    assert run.code == 3, run.stderr
    said = run.stderr + run.stdout + run.summary
    assert "AWS_ACCESS_KEY_ID" in said and "Traceback" not in said
    assert "from the fork stranger/agent" in said  # what GitHub withheld, both of them:
    assert "no AWS credential (no AWS_ACCESS_KEY_ID, no OIDC token to assume a role)" in said
    assert not (pr / "results.json").exists()
