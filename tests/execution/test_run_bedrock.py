"""`gate run --sim` with the Bedrock upstream, end to end: the builtin agent through the SDK's
``AnthropicBedrock`` and Claude Code through its Bedrock settings (the meter as its gateway,
``CLAUDE_CODE_SKIP_BEDROCK_AUTH=1``) talk InvokeModel to the meter, which signs with SigV4 for
the simulator's Bedrock front; the usage each client reports equals the gate's, token for token,
and the results file says which upstream it measured."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gate.core.config import GateConfig, load_config
from gate.core.results import load_results
from gate.execution.run import RunRequest, run_suite
from gate.sim import read_ledger
from tests.helpers.usage import builtin_metered_exactly, claude_code_reported

REPO = Path(__file__).resolve().parents[2]
EASY = ["fix-slugify-whitespace", "fix-version-compare"]

pytestmark = pytest.mark.slow


def _config(**agent: object) -> GateConfig:
    cfg = load_config(REPO / "gate.toml")
    return cfg.model_copy(update={"agent": cfg.agent.model_copy(
        update={"upstream": "bedrock", **agent})})


def _events(transcript: str | None) -> list[dict[str, object]]:
    return [json.loads(line) for line in Path(transcript or "").read_text().splitlines()]


def test_the_builtin_agent_through_anthropic_bedrock(tmp_path: Path) -> None:
    out = tmp_path / "results.json"
    res = run_suite(RunRequest(config=_config(), output=out, task_ids=EASY, replications=1,
                               jobs=2, sim=True, seed=3))
    assert res.summary.errors == 0 and res.summary.passed >= 1, res.runs
    saved = load_results(out)
    record = saved.upstream_api
    assert record is not None
    assert (record.upstream, record.provider, record.model_id) == (
        "bedrock", "aws-bedrock", "us.anthropic.claude-sonnet-5-5-v1")
    ledger = read_ledger(saved.model_extra["simulator"]["ledger"])  # type: ignore[index]
    assert {e["model"] for e in ledger} == {"claude-sonnet-5-5"}  # the ID's model, served
    builtin_metered_exactly(res.runs, saved.model_extra["simulator"]["ledger"])  # type: ignore[index]


@pytest.mark.claude_code
def test_claude_code_through_its_bedrock_settings(tmp_path: Path, claude_bin: str,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    runner_aws = {"AWS_ACCESS_KEY_ID": "AKIARUNNERKEY0000001",
                  "AWS_SECRET_ACCESS_KEY": "runner-secret-access-key-0001",
                  "AWS_SESSION_TOKEN": "runner-session-token-0001",
                  "AWS_WEB_IDENTITY_TOKEN_FILE": str(tmp_path / "web-identity-token")}
    for name, value in runner_aws.items():  # the runner's own: never the agent's
        monkeypatch.setenv(name, value)
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
    assert env["CLAUDE_CODE_USE_BEDROCK"] == "1" and env["CLAUDE_CODE_SKIP_BEDROCK_AUTH"] == "1"
    assert env["AWS_BEARER_TOKEN_BEDROCK"].startswith("gate-run-")
    for name, value in runner_aws.items():
        assert name not in env and value not in json.dumps(env), name
    assert env["AWS_REGION"]  # the gate sets the agent's region itself
    claude_code_reported(run)


@pytest.mark.parametrize(("model", "factor", "pricing"), [
    # a geographic inference profile is a regional endpoint: 10 % above the list price from
    # Sonnet 4.5 on; the global profile is priced at the list price
    ("eu.anthropic.claude-sonnet-4-5-20250929-v1:0", 1.10,
     "aws-bedrock regional (+10 % from Sonnet 4.5)"),
    ("global.anthropic.claude-sonnet-4-5-20250929-v1:0", 1.0, "aws-bedrock global"),
])
def test_a_configured_bedrock_id_is_called_as_is_and_priced_as_its_model(
        tmp_path: Path, model: str, factor: float, pricing: str) -> None:
    from gate.core.cost import price_table

    res = run_suite(RunRequest(config=_config(model=model), output=tmp_path / "r.json",
                               task_ids=EASY[:1], replications=1, jobs=1, sim=True, seed=3))
    (run,) = res.runs
    assert res.summary.errors == 0 and run.turns > 0
    assert res.upstream_api is not None and res.upstream_api.model_id == model
    billed = run.billed_usage or run.usage
    want = price_table().cost("claude-sonnet-4-5", billed) * factor
    assert want > 0 and res.upstream_api.pricing == pricing
    assert run.cost_usd + (run.overhead_usd or 0) == pytest.approx(want, rel=1e-6)


def test_the_region_is_the_runners_and_the_results_record_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A runner in eu-west-1 (``AWS_DEFAULT_REGION``): the meter signs for it (the simulator
    verifies the signature), the builtin agent's ``AnthropicBedrock`` is told it and
    asks for the ``eu.`` inference profile, and the results record region and ID as called."""
    monkeypatch.delenv("AWS_REGION", raising=False)
    monkeypatch.setenv("AWS_DEFAULT_REGION", "eu-west-1")
    out = tmp_path / "results.json"
    res = run_suite(RunRequest(config=_config(), output=out, task_ids=EASY[:1], replications=1,
                               jobs=1, sim=True, seed=3))
    assert res.summary.errors == 0 and res.runs[0].turns > 0, res.runs
    record = load_results(out).upstream_api
    assert record is not None
    assert (record.region, record.model_id) == ("eu-west-1", "eu.anthropic.claude-sonnet-5-5-v1")
    assert record.pricing == "aws-bedrock regional (+10 % from Sonnet 4.5)"
