"""Vertex AI as a row of the upstream port: its paths (the configured project and region only),
model names with and without ``@date``, whose fault each error answer is (Google's error JSON
and the Messages API's), the regional price premium, and what a command agent gets."""

from __future__ import annotations

import json

import pytest

from gate.core.cost import default_prices
from gate.errors import BadInput, Unmeasurable
from gate.upstream import VERTEX, bare_model, get_upstream, price_factor
from gate.usage import Usage

ROOT = "v1/projects/gate-test-project/locations/us-east5/publishers/anthropic/models/"


@pytest.fixture(autouse=True)
def _where(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_VERTEX_PROJECT_ID", "gate-test-project")
    monkeypatch.setenv("CLOUD_ML_REGION", "us-east5")


def test_vertex_is_a_registered_upstream() -> None:
    assert get_upstream("vertex") is VERTEX


def test_the_routes_the_clients_call_and_nothing_else() -> None:
    rawp = VERTEX.match("POST", ROOT + "claude-sonnet-4-5@20250929:rawPredict")
    assert rawp is not None and rawp.billable and rawp.route.stream is False
    assert rawp.model == "claude-sonnet-4-5@20250929"
    assert rawp.target == "/" + ROOT + "claude-sonnet-4-5@20250929:rawPredict"
    stream = VERTEX.match("POST", ROOT + "claude-opus-4-6:streamRawPredict")
    assert stream is not None and stream.route.stream is True and stream.model == "claude-opus-4-6"
    count = VERTEX.match("POST", ROOT + "count-tokens:rawPredict")
    assert count is not None and count.route.kind == "count_tokens" and not count.billable
    for refused in (
        ROOT + "count-tokens:streamRawPredict",
        ROOT + "claude-opus-4-6:predict",
        ROOT + "claude-opus-4-6:rawPredict/../x",
        ROOT.replace("us-east5", "global") + "claude-opus-4-6:rawPredict",  # not the region
        ROOT.replace("gate-test-project", "someone-elses") + "claude-opus-4-6:rawPredict",
        "v1/messages",
    ):
        assert VERTEX.match("POST", refused) is None, refused
    assert VERTEX.match("GET", ROOT + "claude-opus-4-6:rawPredict") is None


def test_model_names_price_as_the_messages_api_ids() -> None:
    assert bare_model("claude-sonnet-4-5@20250929") == "claude-sonnet-4-5"
    assert bare_model("claude-opus-4-6") == "claude-opus-4-6"
    assert VERTEX.price_model("claude-haiku-4-5@20251001") == "claude-haiku-4-5"


def test_a_regional_endpoint_costs_ten_percent_more_from_sonnet_4_5_on() -> None:
    prices, usage = default_prices(), Usage(input_tokens=1_000_000, output_tokens=100_000)
    listed = prices.cost("claude-sonnet-4-5", usage)
    assert VERTEX.cost(prices, "claude-sonnet-4-5@20250929", usage, "global") == listed
    assert VERTEX.cost(prices, "claude-sonnet-4-5@20250929", usage, "us-east5") == \
        pytest.approx(listed * 1.10)
    assert price_factor("claude-sonnet-4@20250514", "us-east5") == 1.0  # an older model
    assert price_factor("claude-opus-4-1@20250805", "europe-west1") == 1.0
    assert price_factor("claude-opus-4-6", "eu") == 1.10
    assert VERTEX.pricing("global") != VERTEX.pricing("us-east5")


def _fault(status: int, body: object) -> tuple[str, str]:
    f = VERTEX.fault(status, {}, json.dumps(body).encode())
    return f.cause, f.why


def google(code: int, status: str, message: str = "m") -> dict[str, object]:
    return {"error": {"code": code, "message": message, "status": status}}


def test_whose_fault_each_vertex_error_is() -> None:
    assert _fault(429, google(429, "RESOURCE_EXHAUSTED")) == ("provider", "429 RESOURCE_EXHAUSTED")
    assert _fault(400, google(400, "INVALID_ARGUMENT")) == ("agent", "400 INVALID_ARGUMENT")
    assert _fault(400, google(400, "FAILED_PRECONDITION"))[0] == "provider"
    assert _fault(401, google(401, "UNAUTHENTICATED"))[0] == "provider"
    assert _fault(403, google(403, "PERMISSION_DENIED"))[0] == "provider"
    assert _fault(503, google(503, "UNAVAILABLE"))[0] == "provider"
    assert _fault(404, google(404, "NOT_FOUND", "Publisher Model `projects/p/locations/r/"
                                                "publishers/anthropic/models/claude-x` was "
                                                "not found"))[0] == "agent"
    assert _fault(404, google(404, "NOT_FOUND", "project not found"))[0] == "provider"
    # a 401/429 is infra whatever status word it carries
    assert _fault(429, google(429, "INVALID_ARGUMENT"))[0] == "provider"
    # the model's service's own answer, in the Messages API's shape
    assert _fault(400, {"type": "error", "error": {"type": "invalid_request_error",
                                                   "message": "x"}})[0] == "agent"
    assert _fault(529, {"type": "error", "error": {"type": "overloaded_error",
                                                   "message": "x"}})[0] == "provider"


def test_a_command_agent_gets_claude_codes_vertex_settings_and_the_run_token() -> None:
    env = {**VERTEX.agent_env("http://127.0.0.1:9/r/run-1", "gate-run-tok"),
           **VERTEX.model_env("claude-opus-4-6")}
    assert env == {
        "CLAUDE_CODE_USE_VERTEX": "1", "CLAUDE_CODE_SKIP_VERTEX_AUTH": "1",
        "ANTHROPIC_VERTEX_BASE_URL": "http://127.0.0.1:9/r/run-1/v1",
        "ANTHROPIC_VERTEX_PROJECT_ID": "gate-test-project", "CLOUD_ML_REGION": "us-east5",
        "ANTHROPIC_AUTH_TOKEN": "gate-run-tok",
        "ANTHROPIC_CUSTOM_HEADERS": "Authorization: Bearer gate-run-tok",
        "ANTHROPIC_MODEL": "claude-opus-4-6"}
    assert not any("GOOGLE" in k or "CLOUDSDK" in k for k in env)


def test_a_missing_or_malformed_project_or_region_names_the_variable(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_VERTEX_PROJECT_ID")
    with pytest.raises(Unmeasurable, match="ANTHROPIC_VERTEX_PROJECT_ID is not set"):
        VERTEX.open({"CLOUD_ML_REGION": "us-east5"})
    with pytest.raises(BadInput, match="CLOUD_ML_REGION: 'US EAST' is not a Google Cloud region"):
        VERTEX.open({"ANTHROPIC_VERTEX_PROJECT_ID": "gate-test-project",
                     "CLOUD_ML_REGION": "US EAST"})
    sim = VERTEX.simulated("http://127.0.0.1:9/", "sim-key")
    assert (sim.region, sim.base_url) == ("us-east5", "http://127.0.0.1:9")
    monkeypatch.delenv("CLOUD_ML_REGION")
    assert VERTEX.simulated("http://127.0.0.1:9", "k").region == "global"


def test_the_credentials_are_withheld_and_the_settings_are_not() -> None:
    assert "GOOGLE_APPLICATION_CREDENTIALS" in VERTEX.credential_env
    assert "CLOUDSDK_AUTH_ACCESS_TOKEN" in VERTEX.credential_env
    assert "CLOUD_ML_REGION" not in VERTEX.credential_env


def test_the_sessions_place_is_read_once_and_kept_by_the_upstream_it_opens(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The project and region are the session's, read when it opens the upstream (validated
    then, recorded in the results): what the environment says later changes nothing the
    meter accepts, counts or tells an agent."""
    monkeypatch.setenv("ANTHROPIC_VERTEX_PROJECT_ID", "gate-test-project")
    monkeypatch.setenv("CLOUD_ML_REGION", "europe-west1")
    endpoint = VERTEX.simulated("http://127.0.0.1:9", "sim-token")
    api = endpoint.upstream
    assert api is not VERTEX and (api.project, endpoint.region) == ("gate-test-project",
                                                                   "europe-west1")
    assert endpoint.record("claude-sonnet-4-5").as_dict()["project"] == "gate-test-project"
    monkeypatch.setenv("ANTHROPIC_VERTEX_PROJECT_ID", "someone-elses-project")
    monkeypatch.setenv("CLOUD_ML_REGION", "us-east5")
    ours = ("v1/projects/gate-test-project/locations/europe-west1/publishers/anthropic/"
            "models/claude-sonnet-4-5@20250929:rawPredict")
    theirs = ours.replace("gate-test-project", "someone-elses-project").replace(
        "europe-west1", "us-east5")
    assert api.match("POST", ours) is not None and api.match("POST", theirs) is None
    env = api.agent_env("http://127.0.0.1:9/r/run1", "run-token")
    assert (env["ANTHROPIC_VERTEX_PROJECT_ID"], env["CLOUD_ML_REGION"]) == (
        "gate-test-project", "europe-west1")
    probe = api.count_probe({"model": "claude-sonnet-4-5", "messages": []})
    assert probe is not None and "/gate-test-project/locations/europe-west1/" in probe.target
    client = api.sdk_client("http://127.0.0.1:9/r/run1", "run-token")
    assert (client.project_id, client.region) == ("gate-test-project", "europe-west1")


def test_an_anthropic_record_names_no_project() -> None:
    endpoint = get_upstream("anthropic").simulated("http://127.0.0.1:9", "k")
    assert "project" not in endpoint.record("claude-sonnet-4-5").as_dict()
