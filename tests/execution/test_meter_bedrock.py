"""The meter as a Bedrock gateway: an agent talks InvokeModel to the meter with the run's token
as its Bedrock API key (``AWS_BEARER_TOKEN_BEDROCK``: what AnthropicBedrock and Claude Code send
as a bearer token, measured), the meter checks that token, signs each forwarded request with
SigV4 (botocore's signer) and the simulator checks the signature with its own code; the usage
is read from the event-stream frames and equals the client's own, token for token. Bedrock's
errors are the port's: throttling and unavailability are infra, a validation error the agent's."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anthropic
import pytest

from gate.core.cost import price_table
from gate.meter import MeterProxy, RunMeter
from gate.sim import FaultConfig, Simulator, read_ledger
from gate.upstream import BEDROCK, get_upstream
from gate.usage import Usage

SECRET = "gate-simulator-key"
MODEL_ID = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
LONG = "Cache me if you can, said the system prompt. " * 400


@pytest.fixture
def meter() -> Iterator[tuple[Simulator, MeterProxy]]:
    with Simulator(auth="bedrock", credential=SECRET) as sim, \
            MeterProxy(BEDROCK.simulated(sim.base_url, SECRET), None, price_table()) as proxy:
        yield sim, proxy


def agent(run: RunMeter, token: str | None = None) -> anthropic.AnthropicBedrock:
    return anthropic.AnthropicBedrock(api_key=token or run.token, aws_region="us-east-1",
                                      base_url=run.base_url, max_retries=0)


def _ask(**extra: Any) -> dict[str, Any]:
    system = [{"type": "text", "text": LONG, "cache_control": {"type": "ephemeral"}}]
    return {"max_tokens": 300, "system": system,
            "messages": [{"role": "user", "content": "hello"}], **extra}


def _client_usage(u: anthropic.types.Usage) -> Usage:
    return Usage.from_api(u.model_dump())


def test_the_meter_signs_forwards_and_meters_token_for_token(
        meter: tuple[Simulator, MeterProxy]) -> None:
    sim, proxy = meter
    run = proxy.open_run("t1-r0")
    c = agent(run)
    first = c.messages.create(model=MODEL_ID, **_ask())
    with c.messages.stream(model=MODEL_ID, **_ask()) as stream:
        second = stream.get_final_message()
    run.close()
    totals = run.measured()
    assert totals.turns == 2 and totals.unmetered is None
    client_usage = _client_usage(first.usage) + _client_usage(second.usage)
    assert totals.billed_usage == client_usage
    assert second.usage.cache_read_input_tokens == first.usage.cache_creation_input_tokens > 0
    assert totals.billed_cost_usd > 0  # priced as the model family the ID names
    ledger = read_ledger(sim.ledger_path)
    assert [e["status"] for e in ledger] == [200, 200]
    assert [r.model for r in run.requests] == [MODEL_ID, MODEL_ID]


def test_a_wrong_run_token_is_refused_and_never_forwarded(
        meter: tuple[Simulator, MeterProxy]) -> None:
    sim, proxy = meter
    run = proxy.open_run("t1-r0")
    with pytest.raises(anthropic.AuthenticationError):
        agent(run, token="not-the-run-token").messages.create(model=MODEL_ID, **_ask())
    # an AWS signature instead of the run's token is no token either
    signed = anthropic.AnthropicBedrock(aws_access_key="AKIDEXAMPLE", aws_secret_key="x",
                                        aws_region="us-east-1", base_url=run.base_url,
                                        max_retries=0)
    with pytest.raises(anthropic.AuthenticationError):
        signed.messages.create(model=MODEL_ID, **_ask())
    run.close()
    assert read_ledger(sim.ledger_path) == []
    assert run.measured().turns == 0


def test_paths_bedrock_does_not_serve_are_refused(meter: tuple[Simulator, MeterProxy]) -> None:
    _, proxy = meter
    run = proxy.open_run("t1-r0")
    c = agent(run)
    with pytest.raises(anthropic.PermissionDeniedError):
        c.post("/model/x/converse", cast_to=object, body={})
    run.close()
    assert [r["path"] for r in run.refusals()] == ["/model/x/converse"]


@pytest.mark.parametrize(("faults", "cause"), [
    (FaultConfig(rate_429=1.0), "provider"),
    (FaultConfig(rate_529=1.0), "provider"),
])
def test_bedrocks_errors_are_infra_or_the_agents(faults: FaultConfig, cause: str) -> None:
    with Simulator(auth="bedrock", credential=SECRET, faults=faults) as sim, \
            MeterProxy(BEDROCK.simulated(sim.base_url, SECRET), None, price_table()) as proxy:
        run = proxy.open_run("t1-r0")
        with pytest.raises(anthropic.APIStatusError):
            agent(run).messages.create(model=MODEL_ID, **_ask())
        run.close()
    assert run.api_failure() is not None and run.agent_error() is None
    assert "Exception" in (run.requests[0].error or "")


def test_a_validation_error_is_the_agents(meter: tuple[Simulator, MeterProxy]) -> None:
    _, proxy = meter
    run = proxy.open_run("t1-r0")
    with pytest.raises(anthropic.BadRequestError):  # Bedrock wants max_tokens >= 1
        agent(run).messages.create(model=MODEL_ID, **_ask(max_tokens=0))
    run.close()
    assert run.agent_error() is not None and "ValidationException" in run.agent_error()
    assert run.api_failure() is None


def test_the_port_names_bedrock() -> None:
    assert get_upstream("bedrock") is BEDROCK


@pytest.fixture
def aws_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> pytest.MonkeyPatch:
    """Only what a test sets: no shared files, no profile, no instance metadata lookup."""
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
                 "AWS_PROFILE", "AWS_BEARER_TOKEN_BEDROCK", "AWS_WEB_IDENTITY_TOKEN_FILE",
                 "AWS_CONTAINER_CREDENTIALS_FULL_URI", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    return monkeypatch


def test_the_runners_aws_keys_from_botocores_chain_sign_for_a_configured_endpoint(
        aws_env: pytest.MonkeyPatch) -> None:
    import os

    from gate.upstream import SIM_ACCESS_KEY

    with Simulator(auth="bedrock", credential=SECRET) as sim:
        aws_env.setenv("AWS_ACCESS_KEY_ID", SIM_ACCESS_KEY)
        aws_env.setenv("AWS_SECRET_ACCESS_KEY", SECRET)
        endpoint = BEDROCK.open({"AWS_REGION": "eu-west-1", "GATE_BEDROCK_URL": sim.base_url,
                                 **os.environ})
        assert endpoint.region == "eu-west-1" and not endpoint.simulated
        with MeterProxy(endpoint, None, price_table()) as proxy:
            run = proxy.open_run("t1-r0")
            got = agent(run).messages.create(model=MODEL_ID, **_ask())
            run.close()
        assert run.measured().billed_usage == _client_usage(got.usage)
        aws_env.setenv("AWS_SECRET_ACCESS_KEY", "a-wrong-secret")  # the simulator refuses it
        endpoint = BEDROCK.open({"AWS_REGION": "eu-west-1", "GATE_BEDROCK_URL": sim.base_url})
        with MeterProxy(endpoint, None, price_table()) as proxy:
            run = proxy.open_run("t1-r0")
            with pytest.raises(anthropic.PermissionDeniedError):
                agent(run).messages.create(model=MODEL_ID, **_ask())
            run.close()
        assert run.api_failure() is not None and "InvalidSignatureException" in (
            run.requests[0].error or "")


def test_no_credentials_or_no_region_is_said_in_one_line(aws_env: pytest.MonkeyPatch) -> None:
    from gate.errors import Unmeasurable

    with pytest.raises(Unmeasurable, match="no AWS credentials"):
        BEDROCK.open({"AWS_REGION": "us-east-1"})
    with pytest.raises(Unmeasurable, match=r"AWS_REGION \(or AWS_DEFAULT_REGION\) is not set"):
        BEDROCK.open({})
    endpoint = BEDROCK.open({"AWS_REGION": "us-west-2", "AWS_BEARER_TOKEN_BEDROCK": "k"})
    assert endpoint.base_url == "https://bedrock-runtime.us-west-2.amazonaws.com"
