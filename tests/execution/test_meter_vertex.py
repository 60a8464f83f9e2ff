"""The meter as a Vertex AI gateway: the agent (the real ``anthropic.AnthropicVertex``) talks
Vertex to its run's slice of the meter with the run's token; the meter signs each forwarded
request with a Google access token of its own (a real service-account key, a token endpoint on
loopback: refreshed when expired) and meters the usage token for token, at the region's price;
the run-token check holds, and another project's path never leaves the meter."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anthropic
import httpx2
import pytest

from gate.core.cost import price_table
from gate.meter import MeterProxy
from gate.sim import FaultConfig, Simulator, key_id, read_ledger
from gate.upstream import VERTEX
from gate.usage import Usage
from tests.helpers.google import TokenEndpoint, service_account_key, token_endpoint
from tests.helpers.suites import long_text

PROJECT, REGION = "gate-test-project", "us-east5"
MODEL = "claude-sonnet-4-5@20250929"
EPH = {"type": "ephemeral"}


@pytest.fixture
def google(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[TokenEndpoint]:
    """Application default credentials: a key file whose token endpoint issues tokens that
    expire at once (each request refreshes)."""
    with token_endpoint(expires_in=1) as (ep, key):
        monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS",
                           str(service_account_key(tmp_path / "sa.json", key, ep.url)))
        monkeypatch.setenv("ANTHROPIC_VERTEX_PROJECT_ID", PROJECT)
        monkeypatch.setenv("CLOUD_ML_REGION", REGION)
        yield ep


def opened(sim: Simulator) -> Any:
    import os

    return VERTEX.open({**os.environ, "ANTHROPIC_VERTEX_BASE_URL": f"{sim.base_url}/v1"})


def agent(base_url: str, token: str, **kw: Any) -> anthropic.AnthropicVertex:
    return anthropic.AnthropicVertex(region=REGION, project_id=PROJECT, access_token=token,
                                     base_url=f"{base_url}/v1", max_retries=0, **kw)


def ask(**kw: Any) -> dict[str, Any]:
    return {"model": MODEL, "max_tokens": 64,
            "messages": [{"role": "user", "content": "What is in the context?"}], **kw}


def test_the_meter_signs_with_googles_token_and_meters_token_for_token(
        google: TokenEndpoint, tmp_path: Path) -> None:
    system = [{"type": "text", "text": long_text(2000), "cache_control": EPH}]
    with Simulator(auth="vertex", ledger_path=tmp_path / "l.jsonl") as sim, \
            MeterProxy(opened(sim), None, price_table()) as meter:
        run = meter.open_run("t-r0")
        client = agent(run.base_url, run.token)
        plain = client.messages.create(**ask(system=system))
        with client.messages.stream(**ask(system=system)) as stream:
            streamed = stream.get_final_message()
        counted = client.messages.count_tokens(model=MODEL, messages=ask()["messages"])
        run.close()
        totals = run.measured()
    # every forwarded request carried a fresh Google token (expired at once: refreshed), and
    # the run's own token never reached the upstream
    ledger = read_ledger(sim.ledger_path)
    assert [e["key_id"] for e in ledger] == [key_id(t) for t in google.issued[1:]]
    assert key_id(run.token) not in {e["key_id"] for e in ledger}
    assert len(google.issued) == 4 and google.refused == []
    assert counted.input_tokens > 0
    # the client's usage is the gate's, token for token
    client_usage = sum((Usage.from_api(m.usage.model_dump()) for m in (plain, streamed)),
                       Usage())
    assert totals.turns == 2 and totals.billed_usage == client_usage
    assert streamed.usage.cache_read_input_tokens == plain.usage.cache_creation_input_tokens > 0
    # priced as claude-sonnet-4-5 with the regional endpoint's 10 % over the list price
    assert totals.billed_cost_usd == pytest.approx(
        price_table().cost("claude-sonnet-4-5", client_usage) * 1.10)
    assert [r.model for r in run.requests] == [MODEL, MODEL]


def test_the_run_token_check_never_weakens(google: TokenEndpoint, tmp_path: Path) -> None:
    with Simulator(auth="vertex", ledger_path=tmp_path / "l.jsonl") as sim, \
            MeterProxy(opened(sim), None, price_table()) as meter:
        run = meter.open_run("t-r0")
        for token in ("ya29.a-google-token", "", run.token[:-1]):
            with pytest.raises(anthropic.AuthenticationError):
                agent(run.base_url, token or "x").messages.create(**ask())
        url = (f"{run.base_url}/v1/projects/{PROJECT}/locations/{REGION}/publishers/"
               f"anthropic/models/{MODEL}:rawPredict")
        body = {**ask(), "anthropic_version": "vertex-2023-10-16"}
        assert httpx2.post(url, json=body).status_code == 401  # no token at all
        # Claude Code's way: the run's token in a custom Authorization header
        ok = httpx2.post(url, json=body, headers={"authorization": f"Bearer {run.token}"})
        assert ok.status_code == 200
        run.close()
    assert len(read_ledger(sim.ledger_path)) == 1


def test_another_projects_or_regions_path_is_refused_and_never_signed(
        google: TokenEndpoint, tmp_path: Path) -> None:
    with Simulator(auth="vertex", ledger_path=tmp_path / "l.jsonl") as sim, \
            MeterProxy(opened(sim), None, price_table()) as meter:
        run = meter.open_run("t-r0")
        issued = len(google.issued)
        for other in (dict(project_id="someone-elses-project"), dict(region="global")):
            client = anthropic.AnthropicVertex(
                **{"region": REGION, "project_id": PROJECT, **other},
                access_token=run.token, base_url=f"{run.base_url}/v1", max_retries=0)
            with pytest.raises(anthropic.PermissionDeniedError):
                client.messages.create(**ask())
        run.close()
    assert read_ledger(sim.ledger_path) == []
    assert len(google.issued) == issued  # nothing was signed for them
    assert len(run.refused) == 2


def test_googles_rate_limit_is_infra_and_a_bad_request_the_agents(
        google: TokenEndpoint, tmp_path: Path) -> None:
    with Simulator(auth="vertex", faults=FaultConfig(rate_429=1.0)) as sim, \
            MeterProxy(opened(sim), None, price_table()) as meter:
        run = meter.open_run("t-r0")
        with pytest.raises(anthropic.RateLimitError):
            agent(run.base_url, run.token).messages.create(**ask())
        run.close()
    [limited] = run.requests
    assert (limited.status, limited.by, limited.error) == (429, "provider",
                                                          "429 RESOURCE_EXHAUSTED")
    with Simulator(auth="vertex", ledger_path=tmp_path / "l.jsonl") as sim, \
            MeterProxy(opened(sim), None, price_table()) as meter:
        run = meter.open_run("t-r0")
        with pytest.raises(anthropic.BadRequestError):
            agent(run.base_url, run.token).messages.create(**ask(max_tokens=0))
        run.close()
    [bad] = run.requests
    assert (bad.status, bad.by, bad.error) == (400, "agent", "400 INVALID_ARGUMENT")
