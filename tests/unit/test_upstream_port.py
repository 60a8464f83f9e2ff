"""The upstream port (gate/upstream): the registry, what each registered upstream reads from
the environment and sends, whose fault its error answers are, and the scrub that withholds
every upstream's credentials."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from gate.errors import BadInput, Unmeasurable
from gate.secrets import scrubbed_env, withheld_notes
from gate.upstream import (
    ANTHROPIC,
    GATEWAY,
    Outgoing,
    credential_variables,
    get_upstream,
    register_upstream,
    upstream_names,
)

KEY = "sk-ant-api03-planted-0123456789abcdef"
TOKEN = "gw-planted-token-0123456789"


def _signed(endpoint: object) -> dict[str, str]:
    sign = endpoint.sign  # type: ignore[attr-defined]
    return dict(sign(Outgoing("POST", "https://x/v1/messages", {}, b"{}")))


def _headers(**given: str) -> Callable[[str], str]:
    low = {k.replace("_", "-").lower(): v for k, v in given.items()}
    return lambda name: low.get(name, "")


def test_the_registry_knows_both_and_refuses_an_unknown_name() -> None:
    assert {"anthropic", "gateway"} <= set(upstream_names())
    assert get_upstream("gateway") is GATEWAY
    with pytest.raises(BadInput) as err:
        get_upstream("nope", where="gate.toml: agent.upstream")
    assert str(err.value).startswith("gate.toml: agent.upstream: unknown upstream 'nope' "
                                     "(known: anthropic, gateway")
    with pytest.raises(ValueError, match="registered twice"):
        register_upstream(type(GATEWAY)())


def test_the_direct_api_reads_its_key_or_its_token() -> None:
    keyed = ANTHROPIC.open({"ANTHROPIC_API_KEY": KEY})
    assert (keyed.base_url, keyed.label, _signed(keyed)) == (
        "https://api.anthropic.com", "anthropic-api", {"x-api-key": KEY})
    bearer = ANTHROPIC.open({"ANTHROPIC_AUTH_TOKEN": TOKEN,
                             "ANTHROPIC_BASE_URL": "http://127.0.0.1:9/"})
    assert (bearer.base_url, bearer.label, _signed(bearer)) == (
        "http://127.0.0.1:9", "custom-base-url", {"authorization": f"Bearer {TOKEN}"})
    with pytest.raises(Unmeasurable, match="no ANTHROPIC_API_KEY in the environment"):
        ANTHROPIC.open({})
    with pytest.raises(BadInput, match=r"environment ANTHROPIC_BASE_URL: 'api\.example' is not"):
        ANTHROPIC.open({"ANTHROPIC_API_KEY": KEY, "ANTHROPIC_BASE_URL": "api.example"})


def test_a_gateway_is_a_base_url_and_a_bearer_token() -> None:
    gw = GATEWAY.open({"GATE_GATEWAY_URL": "https://llm.example.internal/anthropic",
                       "GATE_GATEWAY_TOKEN": TOKEN})
    assert _signed(gw) == {"authorization": f"Bearer {TOKEN}"}
    assert gw.record("claude-sonnet-5-5").as_dict() == {
        "upstream": "gateway", "provider": "gateway", "region": None,
        "model_id": "claude-sonnet-5-5", "host": "llm.example.internal", "pricing": "anthropic"}
    assert TOKEN not in repr(gw) and TOKEN not in json.dumps(gw.record("m").as_dict())
    assert GATEWAY.agent_env("http://meter/r/x", "gate-run-1") == {
        "ANTHROPIC_BASE_URL": "http://meter/r/x", "ANTHROPIC_AUTH_TOKEN": "gate-run-1"}
    assert ANTHROPIC.agent_env("http://meter/r/x", "gate-run-1") == {
        "ANTHROPIC_BASE_URL": "http://meter/r/x", "ANTHROPIC_API_KEY": "gate-run-1"}


def test_the_run_token_comes_in_a_key_header_or_a_bearer_token() -> None:
    assert ANTHROPIC.run_token(_headers(x_api_key="t1")) == "t1"
    assert ANTHROPIC.run_token(_headers(authorization="Bearer t2")) == "t2"
    assert ANTHROPIC.run_token(_headers(authorization="Basic t3")) == ""
    # the simulator standing in for a gateway takes its bearer token, nothing else
    assert GATEWAY.simulator_refusal(_headers(authorization=f"Bearer {TOKEN}"), TOKEN) is None
    assert GATEWAY.simulator_refusal(_headers(x_api_key=TOKEN), TOKEN) is not None
    assert GATEWAY.simulator_refusal(_headers(authorization="Bearer other"), TOKEN) \
        == "invalid bearer token (the gateway's)"


@pytest.mark.parametrize(("status", "body", "cause", "why"), [
    (400, {"error": {"type": "invalid_request_error", "message": "max_tokens: too big"}},
     "agent", "400 invalid_request_error"),
    (400, {"error": {"type": "invalid_request_error", "message": "Your credit balance is too "
                     "low to access the Anthropic API. Please go to Plans & Billing"}},
     "credit?", "400 invalid_request_error"),
    (401, {"error": {"type": "authentication_error", "message": "invalid x-api-key"}},
     "provider", "401 authentication_error"),
    (404, {"error": {"type": "not_found_error", "message": "model: claude-x"}},
     "agent", "404 not_found_error"),
    (404, {"error": {"type": "not_found_error", "message": "Not found"}},
     "provider", "404 not_found_error"),
    (529, {"error": {"type": "overloaded_error", "message": "Overloaded"}},
     "provider", "529 overloaded_error"),
    (502, None, "provider", "HTTP 502"),
])
def test_whose_fault_a_messages_error_is(status: int, body: object, cause: str,
                                         why: str) -> None:
    data = json.dumps(body).encode() if body is not None else b"<html>bad gateway</html>"
    for api in (ANTHROPIC, GATEWAY):
        fault = api.fault(status, {}, data)
        assert (fault.cause, fault.why) == (cause, why)


def test_the_scrub_withholds_every_upstreams_credential_whichever_runs() -> None:
    assert {"ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "GATE_GATEWAY_TOKEN"} \
        <= set(credential_variables())
    env = {"ANTHROPIC_API_KEY": KEY, "GATE_GATEWAY_TOKEN": TOKEN,
           "GATE_GATEWAY_URL": "https://llm.example.internal", "PATH": "/usr/bin"}
    assert scrubbed_env(environ=env) == {"PATH": "/usr/bin"}
    assert scrubbed_env(environ=env, pass_env=["GATE_GATEWAY_TOKEN"]) == {"PATH": "/usr/bin"}
    assert withheld_notes(env) == []  # the gate's own: withheld without a note
