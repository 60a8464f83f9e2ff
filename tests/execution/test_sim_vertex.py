"""The simulator speaks Vertex AI, checked with the real client (``anthropic.AnthropicVertex``):
rawPredict and streamRawPredict, the same model and usage as the Messages API (caching
included), token counting, the bearer token, dated and undated model names, a region or
``global`` in the path, and Google's error JSON for what Vertex refuses."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import anthropic
import httpx2
import pytest

from gate.sim import FaultConfig, Simulator, read_ledger, sim_label
from tests.helpers.suites import long_text

PROJECT = "gate-test-project"
DATED = "claude-sonnet-4-5@20250929"
EPH = {"type": "ephemeral"}


@pytest.fixture
def sim() -> Iterator[Simulator]:
    with Simulator() as s:
        yield s


def vertex(sim: Simulator, region: str = "us-east5", **kw: Any) -> anthropic.AnthropicVertex:
    return anthropic.AnthropicVertex(region=region, project_id=PROJECT, access_token="ya29.sim",
                                     base_url=f"{sim.base_url}/v1", max_retries=0, **kw)


def ask(**kw: Any) -> dict[str, Any]:
    return {"model": DATED, "max_tokens": 64,
            "messages": [{"role": "user", "content": "What is in the context?"}], **kw}


def test_raw_predict_answers_as_the_messages_api_does(sim: Simulator) -> None:
    msg = vertex(sim).messages.create(**ask())
    same = anthropic.Anthropic(base_url=sim.base_url, api_key="k", max_retries=0) \
        .messages.create(**{**ask(), "model": "claude-sonnet-4-5-20250929"})
    assert msg.model == sim_label(DATED)
    assert msg.usage.input_tokens == same.usage.input_tokens > 0
    assert msg.usage.output_tokens > 0
    [entry] = [e for e in read_ledger(sim.ledger_path) if e["endpoint"].startswith("/v1/proj")]
    assert entry["endpoint"] == (f"/v1/projects/{PROJECT}/locations/us-east5/publishers/"
                                 f"anthropic/models/{DATED}:rawPredict")
    assert entry["model"] == DATED and entry["usage"]["input_tokens"] == msg.usage.input_tokens


def test_stream_raw_predict_streams_the_same_usage_and_caching_is_honoured(
        sim: Simulator) -> None:
    client = vertex(sim, region="global")
    system = [{"type": "text", "text": long_text(2000), "cache_control": EPH}]
    with client.messages.stream(**ask(system=system)) as stream:
        first = stream.get_final_message()
    with client.messages.stream(**ask(system=system)) as stream:
        second = stream.get_final_message()
    assert first.usage.cache_creation_input_tokens == second.usage.cache_read_input_tokens
    assert (first.usage.cache_creation_input_tokens or 0) > 1024  # sonnet's minimum
    assert second.usage.cache_creation_input_tokens == 0
    ledger = read_ledger(sim.ledger_path)
    assert [e["endpoint"].rsplit(":", 1)[1] for e in ledger] == ["streamRawPredict"] * 2
    assert "/locations/global/" in ledger[0]["endpoint"]
    assert ledger[1]["usage"]["cache_read_input_tokens"] == second.usage.cache_read_input_tokens


def test_a_newer_model_without_a_date_and_token_counting(sim: Simulator) -> None:
    client = vertex(sim, region="europe-west1")
    msg = client.messages.create(**ask(model="claude-opus-4-6"))
    assert msg.model == "claude-opus-4-6-sim"
    count = client.messages.count_tokens(model="claude-opus-4-6",
                                         messages=ask()["messages"])
    assert count.input_tokens == msg.usage.input_tokens


def test_no_bearer_token_is_401_unauthenticated_in_googles_shape(sim: Simulator) -> None:
    url = (f"{sim.base_url}/v1/projects/{PROJECT}/locations/us-east5/publishers/anthropic/"
           f"models/{DATED}:rawPredict")
    body = {"anthropic_version": "vertex-2023-10-16", **ask()}
    body.pop("model")
    for headers in ({}, {"x-api-key": "sk-ant-not-how-google-authenticates"}):
        r = httpx2.post(url, json=body, headers=headers)
        assert r.status_code == 401
        assert r.json()["error"]["status"] == "UNAUTHENTICATED"
    r = httpx2.post(url, json={**body, "anthropic_version": None},
                    headers={"authorization": "Bearer ya29.sim"})
    assert (r.status_code, r.json()["error"]["status"]) == (400, "INVALID_ARGUMENT")
    assert "anthropic_version" in r.json()["error"]["message"]


def test_a_bad_request_is_400_invalid_argument(sim: Simulator) -> None:
    with pytest.raises(anthropic.BadRequestError) as err:
        vertex(sim).messages.create(**ask(max_tokens=0))
    assert err.value.status_code == 400
    assert err.value.body == {"error": {"code": 400, "status": "INVALID_ARGUMENT",
                                        "message": err.value.body["error"]["message"]}}


def test_a_rate_limit_is_429_resource_exhausted(sim: Simulator) -> None:
    with Simulator(faults=FaultConfig(rate_429=1.0)) as limited, \
            pytest.raises(anthropic.RateLimitError) as err:
        vertex(limited).messages.create(**ask())
    assert json.loads(err.value.response.text)["error"]["status"] == "RESOURCE_EXHAUSTED"
    assert err.value.response.headers["retry-after"] == "1"


def test_a_path_that_is_no_vertex_call_is_404(sim: Simulator) -> None:
    r = httpx2.post(f"{sim.base_url}/v1/projects/{PROJECT}/locations/us-east5/publishers/"
                    "anthropic/models/count-tokens:streamRawPredict", json={},
                    headers={"authorization": "Bearer ya29.sim"})
    assert (r.status_code, r.json()["error"]["status"]) == (404, "NOT_FOUND")
