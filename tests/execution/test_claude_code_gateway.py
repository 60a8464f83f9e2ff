"""Claude Code through the gateway upstream (``[agent] upstream = "gateway"``): what the pinned
Claude Code sends when it reaches a gateway with ANTHROPIC_BASE_URL and ANTHROPIC_AUTH_TOKEN
(measured: a bearer token, no API key header), and a gated run of it whose usage the meter
counts token for token.

Runs where a `claude` binary is found ($GATE_CLAUDE_BIN, then PATH; the `claude_bin` fixture).
"""

from __future__ import annotations

import http.client
import json
import subprocess
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from gate.core.config import load_config
from gate.execution.run import RunRequest, run_suite
from gate.sim import Simulator
from tests.helpers.usage import claude_code_reported

REPO = Path(__file__).resolve().parents[2]
TOKEN = "gw-claude-token-0123456789"

pytestmark = [pytest.mark.claude_code, pytest.mark.slow]


@pytest.fixture
def recorded(tmp_path: Path) -> Iterator[tuple[str, list[dict[str, str]]]]:
    """A recording hop in front of the simulator standing in for a gateway (bearer ``TOKEN``
    only): (its URL, the headers of each request that passed)."""
    seen: list[dict[str, str]] = []
    with Simulator(auth="gateway", credential=TOKEN) as sim:
        target = urlsplit(sim.base_url)

        class Hop(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                seen.append({k.lower(): v for k, v in self.headers.items()})
                body = self.rfile.read(int(self.headers.get("content-length") or 0))
                up = http.client.HTTPConnection(target.hostname or "", target.port, timeout=60)
                up.request("POST", self.path, body=body, headers=dict(self.headers.items()))
                resp = up.getresponse()
                data = resp.read()
                self.send_response(resp.status)
                for k, v in resp.getheaders():
                    if k.lower() not in ("transfer-encoding", "content-length", "connection"):
                        self.send_header(k, v)
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
                up.close()

            def log_message(self, *args: object) -> None:
                pass

        hop = ThreadingHTTPServer(("127.0.0.1", 0), Hop)
        threading.Thread(target=hop.serve_forever, daemon=True).start()
        try:
            yield f"http://127.0.0.1:{hop.server_address[1]}", seen
        finally:
            hop.shutdown()
            hop.server_close()


def test_claude_code_reaches_a_gateway_with_a_bearer_token(
        tmp_path: Path, claude_bin: str, recorded: tuple[str, list[dict[str, str]]]) -> None:
    url, seen = recorded
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "ANTHROPIC_BASE_URL": url,
           "ANTHROPIC_AUTH_TOKEN": TOKEN, "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1"}
    p = subprocess.run([claude_bin, "-p", "say hi", "--output-format", "json"], env=env,
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["is_error"] is False
    assert seen
    for headers in seen:
        assert headers["authorization"] == f"Bearer {TOKEN}"
        assert "x-api-key" not in headers


def test_claude_code_through_the_gateway_is_metered_token_for_token(
        tmp_path: Path, claude_bin: str) -> None:
    command = (
        f'IS_SANDBOX=1 CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 "{claude_bin}" '
        '-p "$(cat "$GATE_PROMPT_FILE")" --output-format json --dangerously-skip-permissions'
    )
    cfg = load_config(REPO / "gate.toml")
    cfg = cfg.model_copy(update={"agent": cfg.agent.model_copy(
        update={"kind": "command", "command": command, "upstream": "gateway"})})
    res = run_suite(RunRequest(config=cfg, output=tmp_path / "r.json",
                               task_ids=["fix-slugify-whitespace"], replications=1, jobs=1,
                               sim=True))
    (run,) = res.runs
    assert run.status == "passed", run.reason
    assert res.upstream_api is not None and res.upstream_api.upstream == "gateway"
    claude_code_reported(run)
