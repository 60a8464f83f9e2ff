"""`gate run --sim` with the Vertex AI upstream, end to end: the builtin agent through the SDK's
``AnthropicVertex`` and Claude Code through its Vertex settings (the meter as its gateway,
``CLAUDE_CODE_SKIP_VERTEX_AUTH=1``, the run's token as its bearer token) talk rawPredict /
streamRawPredict to the meter, which signs for the simulator's Vertex dialect; the usage each
client reports equals the gate's, token for token, and the results file says which upstream,
region and model it measured."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gate.core.config import GateConfig, load_config
from gate.core.cost import price_table
from gate.core.results import load_results
from gate.execution.run import RunRequest, run_suite
from gate.sim import read_ledger
from gate.usage import Usage
from tests.helpers.usage import builtin_metered_exactly, claude_code_reported

REPO = Path(__file__).resolve().parents[2]
EASY = ["fix-slugify-whitespace", "fix-version-compare"]
PROJECT, REGION = "gate-test-project", "europe-west1"

pytestmark = pytest.mark.slow


@pytest.fixture(autouse=True)
def _where(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_VERTEX_PROJECT_ID", PROJECT)
    monkeypatch.setenv("CLOUD_ML_REGION", REGION)


def _config(**agent: object) -> GateConfig:
    cfg = load_config(REPO / "gate.toml")
    return cfg.model_copy(update={"agent": cfg.agent.model_copy(
        update={"upstream": "vertex", **agent})})


def _events(transcript: str | None) -> list[dict[str, object]]:
    return [json.loads(line) for line in Path(transcript or "").read_text().splitlines()]


def test_the_builtin_agent_through_anthropic_vertex(tmp_path: Path) -> None:
    out = tmp_path / "results.json"
    res = run_suite(RunRequest(config=_config(), output=out, task_ids=EASY, replications=1,
                               jobs=2, sim=True, seed=3))
    assert res.summary.errors == 0 and res.summary.passed >= 1, res.runs
    saved = load_results(out)
    record = saved.upstream_api
    assert record is not None
    model = _config().agent.model
    assert (record.upstream, record.provider, record.region, record.model_id) == (
        "vertex", "google-vertex", REGION, model)
    assert record.model_extra == {"project": PROJECT}  # the project called in, recorded
    ledger_path = saved.model_extra["simulator"]["ledger"]  # type: ignore[index]
    ledger = read_ledger(ledger_path)
    assert {e["endpoint"].split("/models/")[0] for e in ledger} == {
        f"/v1/projects/{PROJECT}/locations/{REGION}/publishers/anthropic"}
    assert {e["model"] for e in ledger} == {model}
    builtin_metered_exactly(res.runs, ledger_path)
    # a regional endpoint: priced 10 % over the list price
    spend = sum(r.cost_usd + (r.overhead_usd or 0) for r in res.runs)
    listed = sum(price_table().cost(model, Usage.from_api(e["usage"]))
                 for e in ledger if e.get("usage"))
    assert spend == pytest.approx(listed * 1.10, rel=1e-6)


@pytest.mark.claude_code
def test_claude_code_through_its_vertex_settings(tmp_path: Path, claude_bin: str,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    # the gate's own Google credentials (unused under --sim) never reach the agent
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(tmp_path / "gate-key.json"))
    monkeypatch.setenv("CLOUDSDK_AUTH_ACCESS_TOKEN", "ya29.the-gates-own-token")
    dump = tmp_path / "env.json"
    command = (
        f'python3 -c "import json,os; json.dump(dict(os.environ), open(\'{dump}\', \'w\'))" && '
        f'IS_SANDBOX=1 CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 "{claude_bin}" '
        '-p "$(cat "$GATE_PROMPT_FILE")" --output-format json --dangerously-skip-permissions'
    )
    res = run_suite(RunRequest(config=_config(kind="command", command=command),
                               output=tmp_path / "r.json", task_ids=EASY[:1], replications=1,
                               jobs=1, sim=True))
    (run,) = res.runs
    assert run.status == "passed", run.reason
    env = json.loads(dump.read_text())
    assert env["CLAUDE_CODE_USE_VERTEX"] == "1" and env["CLAUDE_CODE_SKIP_VERTEX_AUTH"] == "1"
    assert (env["ANTHROPIC_VERTEX_PROJECT_ID"], env["CLOUD_ML_REGION"]) == (PROJECT, REGION)
    assert env["ANTHROPIC_AUTH_TOKEN"].startswith("gate-run-")
    assert "GOOGLE_APPLICATION_CREDENTIALS" not in env and "CLOUDSDK_AUTH_ACCESS_TOKEN" not in env
    claude_code_reported(run)
