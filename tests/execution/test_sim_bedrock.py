"""The simulator speaks Bedrock (gate/sim/_bedrock.py): the real ``anthropic.AnthropicBedrock``
client, streaming and not, gets the Messages simulator's answers and usage token for token,
signed with SigV4 (checked by the simulator's own check, not botocore) or a Bedrock API key;
prompt caching (5m and 1h) is honoured; a bad signature, a Bedrock-shaped bad body and the
simulator's injected faults come back as Bedrock's errors."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import anthropic
import pytest

from gate.sim import FaultConfig, Simulator
from gate.upstream import SIM_ACCESS_KEY, chunk_event, decode_all

SECRET = "gate-simulator-secret"
MODEL_ID = "anthropic.claude-sonnet-4-5-20250929-v1:0"
MESSAGES_MODEL = "claude-sonnet-4-5-20250929"
LONG = "The quick brown fox jumps over the lazy dog. " * 400  # past the cacheable minimum


@pytest.fixture(scope="module")
def bedrock() -> Iterator[Simulator]:
    with Simulator(auth="bedrock", credential=SECRET) as s:
        yield s


@pytest.fixture(scope="module")
def messages() -> Iterator[Simulator]:
    with Simulator() as s:
        yield s


def client(sim: Simulator, **kw: Any) -> anthropic.AnthropicBedrock:
    auth = kw or {"aws_access_key": SIM_ACCESS_KEY, "aws_secret_key": SECRET}
    return anthropic.AnthropicBedrock(aws_region="us-east-1", base_url=sim.base_url,
                                      max_retries=0, **auth)


def _ask(**extra: Any) -> dict[str, Any]:
    return {"max_tokens": 200, "messages": [{"role": "user", "content": "hello there"}], **extra}


def test_invoke_answers_as_the_messages_simulator_does(bedrock: Simulator,
                                                       messages: Simulator) -> None:
    got = client(bedrock).messages.create(model=MODEL_ID, **_ask())
    direct = anthropic.Anthropic(base_url=messages.base_url, api_key="k", max_retries=0)
    want = direct.messages.create(model=MESSAGES_MODEL, **_ask())
    assert got.model == want.model == f"{MESSAGES_MODEL}-sim"
    assert got.content == want.content and got.stop_reason == want.stop_reason
    assert got.usage == want.usage


def test_a_stream_in_event_stream_frames_gives_the_same_events_and_usage(
        bedrock: Simulator, messages: Simulator) -> None:
    with client(bedrock).messages.stream(model=MODEL_ID, **_ask()) as stream:
        kinds = [event.type for event in stream]
        got = stream.get_final_message()
    direct = anthropic.Anthropic(base_url=messages.base_url, api_key="k", max_retries=0)
    with direct.messages.stream(model=MESSAGES_MODEL, **_ask()) as stream:
        want = stream.get_final_message()
    assert kinds[0] == "message_start" and kinds[-1] == "message_stop"
    assert got.content == want.content and got.usage == want.usage


def _raw_stream(sim: Simulator, body: dict[str, Any]) -> bytes:
    signed = anthropic.AnthropicBedrock(aws_region="us-east-1", base_url=sim.base_url,
                                        aws_access_key=SIM_ACCESS_KEY, aws_secret_key=SECRET)
    resp = signed.messages.with_raw_response.create(model=MODEL_ID, stream=True, **body)
    assert resp.headers["content-type"] == "application/vnd.amazon.eventstream"
    return resp.http_response.read()


def test_the_stream_is_aws_event_stream_frames_with_invocation_metrics(
        bedrock: Simulator) -> None:
    frames = decode_all(_raw_stream(bedrock, _ask()))
    events = [chunk_event(f) for f in frames]
    assert all(e is not None for e in events)
    assert events[0] is not None and events[0]["type"] == "message_start"
    last = events[-1]
    assert last is not None and last["type"] == "message_stop"
    metrics = last["amazon-bedrock-invocationMetrics"]
    start = events[0]["message"]["usage"]
    assert metrics["inputTokenCount"] == start["input_tokens"]
    assert metrics["outputTokenCount"] > 0


@pytest.mark.parametrize("ttl", ["5m", "1h"])
def test_prompt_caching_is_honoured(bedrock: Simulator, ttl: str) -> None:
    system = [{"type": "text", "text": LONG + ttl,
               "cache_control": {"type": "ephemeral", "ttl": ttl}}]
    c = client(bedrock)
    first = c.messages.create(model=MODEL_ID, system=system, **_ask())  # type: ignore[arg-type]
    second = c.messages.create(model=MODEL_ID, system=system, **_ask())  # type: ignore[arg-type]
    assert first.usage.cache_creation_input_tokens and not first.usage.cache_read_input_tokens
    assert first.usage.cache_creation is not None
    split = first.usage.cache_creation.model_dump()
    assert split[f"ephemeral_{ttl}_input_tokens"] == first.usage.cache_creation_input_tokens
    assert second.usage.cache_read_input_tokens == first.usage.cache_creation_input_tokens


def test_a_bedrock_api_key_as_a_bearer_token(bedrock: Simulator) -> None:
    got = client(bedrock, api_key=SECRET).messages.create(model=MODEL_ID, **_ask())
    assert got.usage.output_tokens > 0
    with pytest.raises(anthropic.PermissionDeniedError) as err:
        client(bedrock, api_key="another").messages.create(model=MODEL_ID, **_ask())
    assert err.value.response.headers["x-amzn-errortype"].startswith(
        "UnrecognizedClientException")


def test_a_wrong_secret_is_refused_as_an_invalid_signature(bedrock: Simulator) -> None:
    wrong = client(bedrock, aws_access_key=SIM_ACCESS_KEY, aws_secret_key="not-it")
    with pytest.raises(anthropic.PermissionDeniedError) as err:
        wrong.messages.create(model=MODEL_ID, **_ask())
    assert err.value.response.headers["x-amzn-errortype"].startswith(
        "InvalidSignatureException")
    unknown = client(bedrock, aws_access_key="AKIDUNKNOWN", aws_secret_key=SECRET)
    with pytest.raises(anthropic.PermissionDeniedError):
        unknown.messages.create(model=MODEL_ID, **_ask())


def _post(sim: Simulator, path: str, body: Any, headers: dict[str, str]
          ) -> tuple[int, dict[str, str], bytes]:
    req = urllib.request.Request(sim.base_url + path, data=json.dumps(body).encode(),
                                 method="POST", headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, {k.lower(): v for k, v in resp.headers.items()}, resp.read()
    except urllib.error.HTTPError as err:
        return err.code, {k.lower(): v for k, v in err.headers.items()}, err.read()


def test_unsigned_requests_and_bodies_bedrock_refuses(bedrock: Simulator) -> None:
    status, headers, _ = _post(bedrock, f"/model/{MODEL_ID}/invoke", _ask(), {})
    assert status == 403
    assert headers["x-amzn-errortype"].startswith("MissingAuthenticationTokenException")
    bearer = {"authorization": f"Bearer {SECRET}", "content-type": "application/json"}
    status, headers, raw = _post(bedrock, f"/model/{MODEL_ID}/invoke", _ask(), bearer)
    assert status == 400 and headers["x-amzn-errortype"].startswith("ValidationException")
    assert "anthropic_version" in json.loads(raw)["message"]
    body = {**_ask(), "anthropic_version": "bedrock-2023-05-31", "model": MODEL_ID}
    status, headers, raw = _post(bedrock, f"/model/{MODEL_ID}/invoke", body, bearer)
    assert status == 400 and "extraneous key [model]" in json.loads(raw)["message"]


@pytest.mark.parametrize(("kind", "status", "error_type"), [
    ("rate_429", 429, "ThrottlingException"),
    ("rate_529", 503, "ServiceUnavailableException"),
    ("rate_500", 500, "InternalServerException"),
])
def test_injected_faults_come_back_as_bedrocks_errors(kind: str, status: int,
                                                      error_type: str) -> None:
    faults = FaultConfig(**{kind: 1.0})  # type: ignore[arg-type]
    with Simulator(auth="bedrock", credential=SECRET, faults=faults) as sim, \
            pytest.raises(anthropic.APIStatusError) as err:
        client(sim).messages.create(model=MODEL_ID, **_ask())
    assert err.value.status_code == status
    assert err.value.response.headers["x-amzn-errortype"].split(":")[0] == error_type


def test_a_stream_error_is_an_exception_frame() -> None:
    with Simulator(auth="bedrock", credential=SECRET,
                   faults=FaultConfig(rate_stream_error=1.0)) as sim:
        frames = decode_all(_raw_stream(sim, _ask()))
    assert frames[-1].message_type == "exception"
    assert frames[-1].headers[":exception-type"] == "serviceUnavailableException"


def test_without_a_credential_any_bedrock_api_key_is_taken() -> None:
    with Simulator(auth="bedrock") as sim:
        got = client(sim, api_key="anything").messages.create(model=MODEL_ID, **_ask())
        assert got.usage.output_tokens > 0
        signed = client(sim, aws_access_key=SIM_ACCESS_KEY, aws_secret_key="gate-simulator")
        assert signed.messages.create(model=MODEL_ID, **_ask()).usage.output_tokens > 0
