"""The gateway upstream end to end (gate/upstream/_gateway.py): `gate run` through a
Messages-compatible gateway — a base URL and a bearer token — with the simulator standing in
for the gateway and checking the bearer; a wrong token is the gate's own credential refused
(infra), never the agent's; bad settings are one line and exit 2."""

from __future__ import annotations

import json
import shutil
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from gate.core.results import load_results
from gate.execution.run import SIM_CREDENTIAL
from gate.sim import Simulator, key_id, ledger_totals, read_ledger
from gate.usage import Usage
from tests.helpers.process import gate, user_env

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
TASK = "fix-slugify-whitespace"
TOKEN = "gw-test-token-0123456789abcdef"


def _project(tmp_path: Path, upstream: str = "gateway", agent: str = "") -> Path:
    """The repository's gate.toml beside its agent files in ``tmp_path``, on ``upstream``."""
    text = (REPO / "gate.toml").read_text()
    text = text.replace("[agent]\n", f'[agent]\nupstream = "{upstream}"\n{agent}', 1)
    text = text.replace('tasks = "tasks"', f'tasks = "{REPO / "tasks"}"', 1)
    (tmp_path / "gate.toml").write_text(text)
    for folder in ("agent", "skills"):
        shutil.copytree(REPO / folder, tmp_path / folder)
    return tmp_path / "gate.toml"


def _run(cfg: Path, *args: str, **env: str) -> tuple[int, str, Path]:
    out = cfg.parent / "r.json"
    p = gate("run", "--config", str(cfg), "--task", TASK, "--replications", "1", "--jobs", "1",
             "-o", str(out), *args, base=user_env(**env), cwd=cfg.parent)
    return p.returncode, p.stderr, out


def _metered(path: Path) -> Usage:
    res = load_results(path)
    return sum((r.billed_usage or r.usage for r in res.runs), Usage())


def test_gate_run_sim_through_a_gateway_checks_its_bearer(tmp_path: Path) -> None:
    """`gate run --sim` with `[agent] upstream = "gateway"`: the simulator speaks the gateway's
    authentication (a bearer token only), the meter sends it, and the file records it."""
    code, err, out = _run(_project(tmp_path), "--sim")
    assert code == 0, err
    res = load_results(out)
    (run,) = res.runs
    assert run.status == "passed", run.reason
    assert res.model_extra["upstream"] == "simulator"  # type: ignore[index]
    assert res.upstream_api is not None and res.upstream_api.model_dump() == {
        "upstream": "gateway", "provider": "gateway", "region": None,
        "model_id": "claude-sonnet-5-5", "host": "127.0.0.1", "pricing": "anthropic"}
    ledger = res.model_extra["simulator"]["ledger"]  # type: ignore[index]
    served = read_ledger(ledger)
    assert served and {e["key_id"] for e in served} == {key_id(SIM_CREDENTIAL)}
    assert {e["status"] for e in served} == {200}
    assert _metered(out) == ledger_totals(ledger)  # metered token for token


def test_gate_run_through_a_gateway_url_with_its_token(tmp_path: Path) -> None:
    """Without --sim: GATE_GATEWAY_URL and GATE_GATEWAY_TOKEN, the simulator as the gateway
    accepting that token only. A wrong token is the gate's own credential refused: the runs
    are infra errors (exit 3), the agent is not failed for it."""
    cfg = _project(tmp_path)
    with Simulator(tasks_dir=REPO / "tasks", ledger_path=tmp_path / "ledger.jsonl",
                   auth="gateway", credential=TOKEN) as sim:
        code, err, out = _run(cfg, GATE_GATEWAY_URL=sim.base_url, GATE_GATEWAY_TOKEN=TOKEN)
        assert code == 0, err
        res = load_results(out)
        assert res.model == "claude-sonnet-5-5"  # not simulated: the gate did not start it
        assert res.model_extra["upstream"] == "gateway"  # type: ignore[index]
        assert res.upstream_api is not None and res.upstream_api.host == "127.0.0.1"
        assert [r.status for r in res.runs] == ["passed"]
        served = read_ledger(tmp_path / "ledger.jsonl")
        assert {e["key_id"] for e in served} == {key_id(TOKEN)}
        assert _metered(out) == ledger_totals(tmp_path / "ledger.jsonl")
        # the gateway takes its bearer token only: an API key's header is refused
        req = urllib.request.Request(f"{sim.base_url}/v1/messages", data=b"{}", method="POST",
                                     headers={"x-api-key": TOKEN,
                                              "content-type": "application/json"})
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(req, timeout=10)
        assert refused.value.code == 401
        assert json.loads(refused.value.read())["error"]["type"] == "authentication_error"

        (tmp_path / "ledger.jsonl").unlink()
        code, err, out = _run(cfg, GATE_GATEWAY_URL=sim.base_url,
                              GATE_GATEWAY_TOKEN="gw-a-wrong-token-000000000")
    assert code == 3, err
    (run,) = load_results(out).runs
    assert run.status == "error" and run.reason is not None  # infra: not the agent's failure
    assert "401 invalid bearer token (the gateway's)" in run.reason, run.reason
    assert "type: authentication_error" in run.reason
    assert {(e["status"], e.get("error")) for e in read_ledger(tmp_path / "ledger.jsonl")} \
        == {(401, "authentication_error")}
    assert "gw-a-wrong-token" not in out.read_text()  # the token is in no file


def test_a_command_agent_gets_the_meter_as_its_gateway_never_the_token(tmp_path: Path) -> None:
    """A command agent on the gateway upstream gets ANTHROPIC_BASE_URL and
    ANTHROPIC_AUTH_TOKEN (the run's token) — as a client reaches a gateway — and neither the
    gateway's URL nor its token."""
    seen = tmp_path / "env.json"
    script = tmp_path / "agent.py"
    script.write_text(
        "import json, os, sys\n"
        f"json.dump(dict(os.environ), open({str(seen)!r}, 'w'))\n")
    cfg = _project(tmp_path, agent=f'command = "{sys.executable} {script}"\n')
    cfg.write_text(cfg.read_text().replace('kind = "builtin"', 'kind = "command"', 1))
    with Simulator(tasks_dir=REPO / "tasks", auth="gateway", credential=TOKEN) as sim:
        gateway = sim.base_url
        _run(cfg, GATE_GATEWAY_URL=gateway, GATE_GATEWAY_TOKEN=TOKEN)
        env = json.loads(seen.read_text())
    assert env["ANTHROPIC_AUTH_TOKEN"].startswith("gate-run-")
    assert env["ANTHROPIC_BASE_URL"].startswith("http://127.0.0.1:")
    assert env["ANTHROPIC_BASE_URL"] != gateway and "/r/" in env["ANTHROPIC_BASE_URL"]
    assert env["ANTHROPIC_MODEL"] == "claude-sonnet-5-5"
    assert "ANTHROPIC_API_KEY" not in env
    assert not any(k.startswith("GATE_GATEWAY") for k in env)
    assert TOKEN not in json.dumps(env)


@pytest.mark.parametrize(("upstream", "env", "code", "said"), [
    ("nope", {}, 2, "gate.toml: agent.upstream: unknown upstream 'nope' (known: anthropic, "),
    ("gateway", {}, 2, 'gate.toml [agent] upstream = "gateway": GATE_GATEWAY_URL is not set'),
    ("gateway", {"GATE_GATEWAY_URL": "ftp://llm.example", "GATE_GATEWAY_TOKEN": TOKEN}, 2,
     "environment GATE_GATEWAY_URL: 'ftp://llm.example' is not an http(s) base URL"),
    ("gateway", {"GATE_GATEWAY_URL": "https://llm.example"}, 3,
     "no GATE_GATEWAY_TOKEN in the environment"),
])
def test_bad_gateway_settings_are_one_line(tmp_path: Path, upstream: str, env: dict[str, str],
                                           code: int, said: str) -> None:
    got, err, out = _run(_project(tmp_path, upstream), **env)
    assert got == code and said in err, err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert not out.exists()
