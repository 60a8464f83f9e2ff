"""What each upstream says a real session lacks (``Upstream.missing``: ``gate ci`` names it
all in one line and exits 3 before anything runs): only its own credential and settings count,
never another upstream's; each missing piece is named as a person sets it. Real credential
look-ups: botocore's chain (instance metadata off), google-auth's application default
credentials (a real service-account key file)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gate.upstream import ANTHROPIC, BEDROCK, GATEWAY, VERTEX
from tests.helpers.google import service_account_key, token_endpoint

#: every upstream's credential variables, unset (botocore and google-auth read the process's)
_ALL = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "GATE_GATEWAY_URL", "GATE_GATEWAY_TOKEN",
        "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE",
        "AWS_BEARER_TOKEN_BEDROCK", "AWS_REGION", "AWS_DEFAULT_REGION",
        "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_ROLE_ARN", "AWS_CONTAINER_CREDENTIALS_FULL_URI",
        "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "GOOGLE_APPLICATION_CREDENTIALS",
        "ANTHROPIC_VERTEX_PROJECT_ID", "CLOUD_ML_REGION", "CLOUDSDK_CONFIG")


@pytest.fixture
def bare(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for name in _ALL:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))  # no ~/.aws, no gcloud ADC
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-aws-credentials"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-aws-config"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.setenv("NO_GCE_CHECK", "True")
    return monkeypatch



def test_anthropic_needs_its_key_and_no_other_upstreams(bare: pytest.MonkeyPatch) -> None:
    assert ANTHROPIC.missing(dict(AWS_ACCESS_KEY_ID="AKIDEXAMPLE",
                                  GATE_GATEWAY_TOKEN="t")) == ("ANTHROPIC_API_KEY",)
    assert ANTHROPIC.missing(dict(ANTHROPIC_API_KEY="sk-ant-x")) == ()
    assert ANTHROPIC.missing(dict(ANTHROPIC_AUTH_TOKEN="tok")) == ()


def test_a_gateway_needs_its_url_and_its_token(bare: pytest.MonkeyPatch) -> None:
    assert GATEWAY.missing(dict(ANTHROPIC_API_KEY="sk-ant-x")) == (
        "GATE_GATEWAY_URL", "GATE_GATEWAY_TOKEN")
    assert GATEWAY.missing(dict(GATE_GATEWAY_URL="https://gw.example")) == (
        "GATE_GATEWAY_TOKEN",)
    assert GATEWAY.missing(dict(GATE_GATEWAY_URL="https://gw.example",
                                GATE_GATEWAY_TOKEN="t")) == ()


def test_bedrock_needs_a_region_and_aws_credentials(bare: pytest.MonkeyPatch) -> None:
    missing = BEDROCK.missing(dict(ANTHROPIC_API_KEY="sk-ant-x"))
    assert len(missing) == 2
    assert missing[0] == "AWS_REGION (or AWS_DEFAULT_REGION)"
    assert "AWS_ACCESS_KEY_ID" in missing[1] and "AWS_BEARER_TOKEN_BEDROCK" in missing[1]
    bare.setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE")  # botocore's chain reads the process's
    bare.setenv("AWS_SECRET_ACCESS_KEY", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY")
    assert BEDROCK.missing(dict(AWS_DEFAULT_REGION="eu-west-1")) == ()
    bare.delenv("AWS_SECRET_ACCESS_KEY")
    assert BEDROCK.missing(dict(AWS_REGION="us-east-1",
                                AWS_BEARER_TOKEN_BEDROCK="ABSK-key")) == ()


def test_vertex_needs_a_project_a_region_and_application_default_credentials(
        bare: pytest.MonkeyPatch, tmp_path: Path) -> None:
    missing = VERTEX.missing(dict(ANTHROPIC_API_KEY="sk-ant-x", AWS_REGION="us-east-1"))
    assert missing[:2] == ("ANTHROPIC_VERTEX_PROJECT_ID", "CLOUD_ML_REGION")
    assert len(missing) == 3 and "application default credentials" in missing[2]
    with token_endpoint() as (ep, key):
        bare.setenv("GOOGLE_APPLICATION_CREDENTIALS",
                    str(service_account_key(tmp_path / "sa.json", key, ep.url)))
        assert VERTEX.missing(dict(ANTHROPIC_VERTEX_PROJECT_ID="gate-test-project",
                                   CLOUD_ML_REGION="global")) == ()
        assert ep.issued == []  # found, not spent: no token is asked for



@pytest.mark.parametrize(("upstream", "variable"), [("bedrock", "AWS_REGION"),
                                                    ("vertex", "ANTHROPIC_VERTEX_PROJECT_ID")])
def test_gate_run_without_the_upstreams_place_is_unmeasurable_as_gate_ci_says(
        bare: pytest.MonkeyPatch, tmp_path: Path, upstream: str, variable: str) -> None:
    """A real `gate run` on Bedrock without a region (Vertex without a project) cannot measure,
    as without a credential: exit 3 naming the variable and --sim, the same answer gate ci's
    check gives (never exit 2 as if gate.toml were wrong); the simulator needs neither."""
    import shutil

    from click.testing import CliRunner

    from gate.cli import main

    (tmp_path / "gate.toml").write_text(f'[agent]\nupstream = "{upstream}"\n')
    shutil.copytree(Path(__file__).resolve().parents[2] / "tasks" / "fix-slugify-whitespace",
                    tmp_path / "tasks" / "fix-slugify-whitespace")
    bare.chdir(tmp_path)
    res = CliRunner().invoke(main, ["run", "-o", str(tmp_path / "r.json")])
    assert res.exit_code == 3, (res.exit_code, res.output)
    (line,) = res.output.strip().splitlines()
    assert variable in line and "--sim" in line, line


def test_what_a_run_github_gives_no_secrets_lacks_is_said_for_its_upstream() -> None:
    """A fork's or Dependabot's run: GitHub withholds the secrets, and for an upstream reached
    through OIDC the token too, so the words name both where both apply (it once said only
    "no AWS_ACCESS_KEY_ID" on a Bedrock scaffold that stores no key at all)."""
    assert ANTHROPIC.withheld_name == "ANTHROPIC_API_KEY"
    assert GATEWAY.withheld_name == GATEWAY.credential_name == "GATE_GATEWAY_TOKEN"
    assert BEDROCK.withheld_name == (
        "AWS credential (no AWS_ACCESS_KEY_ID, no OIDC token to assume a role)")
    assert VERTEX.withheld_name == ("Google credential (no GOOGLE_APPLICATION_CREDENTIALS, no "
                                    "OIDC token for workload identity)")
    # what a person adds as a secret stays the variable
    assert BEDROCK.credential_name == "AWS_ACCESS_KEY_ID"
