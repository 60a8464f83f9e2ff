"""The Bedrock row of the upstream port (gate/upstream/_bedrock.py): its routes (InvokeModel as
the SDK and Claude Code call it, measured), whose fault each of Bedrock's errors is, the model
IDs it calls and prices, what an agent is given, and the credentials the scrub withholds."""

from __future__ import annotations

import pytest

from gate.errors import BadInput, Unmeasurable
from gate.secrets import scrubbed_env
from gate.upstream import BEDROCK, credential_variables, get_upstream

SONNET = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"


@pytest.mark.parametrize(("method", "rest", "stream"), [
    ("POST", f"model/{SONNET}/invoke", False),
    ("POST", f"model/{SONNET}/invoke-with-response-stream", True),
    ("POST", "model/arn%3Aaws%3Abedrock%3Aus-east-1%3A123456789012%3Ainference-profile%2F"
             f"{SONNET.replace(':', '%3A')}/invoke", False),
])
def test_invoke_model_routes_are_metered(method: str, rest: str, stream: bool) -> None:
    found = BEDROCK.match(method, rest)
    assert found is not None and found.billable and found.route.stream is stream
    assert found.target == "/" + rest


@pytest.mark.parametrize("rest", [
    "model/../v1/messages/invoke", "model/a/b/invoke", "model/a%2e%2e/invoke",
    "model/m/converse", "v1/messages", f"model/{SONNET}/invoke/",
])
def test_other_paths_are_refused(rest: str) -> None:
    assert BEDROCK.match("POST", rest) is None


def test_claude_codes_first_request_is_routed_unbilled() -> None:
    found = BEDROCK.match("GET", "inference-profiles")
    assert found is not None and not found.billable


@pytest.mark.parametrize(("status", "kind", "cause"), [
    (429, "ThrottlingException", "provider"),
    (503, "ServiceUnavailableException", "provider"),
    (429, "ModelNotReadyException", "provider"),
    (500, "InternalServerException:http://internal.amazon.com/coral/com.amazon.bedrock/",
     "provider"),
    (403, "AccessDeniedException", "provider"),
    (403, "InvalidSignatureException", "provider"),
    (400, "ValidationException", "agent"),
    (400, "ValidationException:http://internal.amazon.com/coral/com.amazon.bedrock/", "agent"),
    (404, "ResourceNotFoundException", "agent"),
    (400, "", "agent"),
    (502, "", "provider"),
])
def test_whose_fault_each_bedrock_error_is(status: int, kind: str, cause: str) -> None:
    headers = {"X-Amzn-ErrorType": kind} if kind else {}
    fault = BEDROCK.fault(status, headers, b'{"message":"m"}')
    assert fault.cause == cause
    assert fault.why.startswith(f"{status} {kind.split(':')[0] or 'error'}")


def test_model_ids_and_the_model_they_are_priced_as() -> None:
    assert BEDROCK.model_id("claude-sonnet-4-5", "us-east-1") == SONNET
    assert BEDROCK.model_id("claude-sonnet-4-5", "eu-west-1").startswith("eu.anthropic.")
    assert BEDROCK.model_id("claude-sonnet-5-5", None) == "anthropic.claude-sonnet-5-5-v1"
    assert BEDROCK.model_id(SONNET, "eu-west-1") == SONNET  # an ID is called as it is
    assert BEDROCK.price_model(SONNET) == "claude-sonnet-4-5-20250929"
    assert BEDROCK.price_model("anthropic.claude-3-5-haiku-20241022-v1:0") == \
        "claude-haiku-3-5-20241022"
    assert BEDROCK.price_model("global.anthropic.claude-opus-4-6-v1") == "claude-opus-4-6"


def test_an_agent_gets_the_meter_as_its_gateway_and_the_run_token_as_a_bearer() -> None:
    env = {**BEDROCK.agent_env("http://127.0.0.1:9/r/run1", "run-token-1"),
           **BEDROCK.model_env("claude-sonnet-4-5")}
    assert env["CLAUDE_CODE_USE_BEDROCK"] == "1" and env["CLAUDE_CODE_SKIP_BEDROCK_AUTH"] == "1"
    assert env["ANTHROPIC_BEDROCK_BASE_URL"] == "http://127.0.0.1:9/r/run1"
    assert env["AWS_BEARER_TOKEN_BEDROCK"] == "run-token-1"
    assert env["AWS_REGION"] and env["ANTHROPIC_MODEL"] == SONNET
    assert not any(k in env for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"))


def test_the_scrub_withholds_aws_credentials_from_every_child() -> None:
    assert get_upstream("bedrock") is BEDROCK
    names = set(credential_variables())
    aws = {"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
           "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_SHARED_CREDENTIALS_FILE", "AWS_PROFILE",
           "AWS_CONFIG_FILE", "AWS_BEARER_TOKEN_BEDROCK"}
    assert aws <= names and "AWS_REGION" not in names
    env = {**dict.fromkeys(aws, "AKIAABCDEFGHIJKLMNOP"), "AWS_REGION": "eu-west-1",
           "PATH": "/usr/bin"}
    clean = scrubbed_env(environ=env)
    assert not aws & set(clean) and clean["PATH"] == "/usr/bin"


def test_ci_says_how_to_give_the_job_aws_credentials() -> None:
    assert BEDROCK.credential_name == "AWS_ACCESS_KEY_ID"
    assert "configure-aws-credentials" in BEDROCK.credential_setup
    assert "id-token: write" in BEDROCK.credential_setup


def test_the_sessions_region_comes_from_aws_region_else_aws_default_region(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AWS_REGION", raising=False)
    monkeypatch.setenv("AWS_DEFAULT_REGION", "eu-west-1")
    endpoint = BEDROCK.simulated("http://127.0.0.1:9", "sim-secret")
    api = endpoint.upstream
    assert endpoint.region == "eu-west-1" and api is not BEDROCK
    env = {**api.agent_env("http://127.0.0.1:9/r/run1", "t"), **api.model_env("claude-sonnet-4-5")}
    assert env["AWS_REGION"] == "eu-west-1"  # the agent is told the session's region
    assert env["ANTHROPIC_MODEL"] == "eu.anthropic.claude-sonnet-4-5-20250929-v1:0"
    record = endpoint.record("claude-sonnet-4-5")
    assert (record.region, record.model_id) == ("eu-west-1", env["ANTHROPIC_MODEL"])
    monkeypatch.setenv("AWS_REGION", "ap-southeast-2")  # AWS_REGION first, as botocore reads
    assert BEDROCK.simulated("http://127.0.0.1:9", "s").upstream.agent_env("u", "t")[
        "AWS_REGION"] == "ap-southeast-2"
    monkeypatch.delenv("AWS_REGION")
    monkeypatch.delenv("AWS_DEFAULT_REGION")  # a simulated session without one: us-east-1
    assert BEDROCK.simulated("http://127.0.0.1:9", "s").region == "us-east-1"


def test_a_malformed_region_is_refused_naming_the_variable_it_came_from(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AWS_REGION", raising=False)
    with pytest.raises(BadInput, match=r"^environment AWS_DEFAULT_REGION: 'Frankfurt'"):
        BEDROCK.open({"AWS_DEFAULT_REGION": "Frankfurt"})
    with pytest.raises(Unmeasurable, match=r"AWS_REGION \(or AWS_DEFAULT_REGION\) is not set"):
        BEDROCK.open({})


def test_a_global_profile_is_priced_at_list_and_a_regional_one_above_it() -> None:
    from gate.core.cost import price_table
    from gate.usage import Usage

    prices, usage = price_table(), Usage(input_tokens=1_000_000, output_tokens=0)
    listed = prices.cost("claude-sonnet-4-5", usage)
    cost = {m: BEDROCK.cost(prices, m, usage, "us-east-1") for m in (
        "global.anthropic.claude-sonnet-4-5-20250929-v1:0",
        "us.anthropic.claude-sonnet-4-5-20250929-v1:0",
        "anthropic.claude-sonnet-4-5-20250929-v1:0")}
    assert list(cost.values()) == pytest.approx([listed, listed * 1.10, listed * 1.10])
    older = "us.anthropic.claude-sonnet-4-20250514-v1:0"  # before Sonnet 4.5: one price
    assert BEDROCK.cost(prices, older, usage, "us-east-1") == pytest.approx(
        prices.cost("claude-sonnet-4", usage))
    arn = "arn:aws:bedrock:us-east-1:123456789012:inference-profile%2Fglobal.anthropic.x-v1"
    assert BEDROCK.pricing("us-east-1", arn) == "aws-bedrock global"
    assert BEDROCK.pricing("us-east-1", older).startswith("aws-bedrock regional")
