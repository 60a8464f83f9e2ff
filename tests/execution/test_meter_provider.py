"""What the agent sends can never judge it: whose fault an API error is, and what server tools
cost.

The real meter over real HTTP in front of the simulator (and, where the API would have to
quote an agent's text at the very start of a message, a loopback upstream that does): a
validation error that quotes "credit" is the agent's; the account's real credit message is
infra, confirmed by the meter's own 1-token request on the gate's credential. A server tool
(web search, billed per use) is refused unless the suite allows it; allowed, its uses are
priced from the dated price table; a billed use the table cannot price leaves the run not
fully metered; a client tool with a ``type`` is no server tool. Then through ``gate run``.
"""

from __future__ import annotations

import http.client
import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from gate.core.cost import PriceTable, price_table
from gate.core.results import load_results
from gate.meter import MeterProxy, RunMeter
from gate.sim import FaultConfig, Simulator, read_ledger
from gate.upstream import CREDIT_MESSAGE
from gate.usage import Usage
from tests.helpers.process import gate

MODEL = "claude-sonnet-5-5"
SEARCH = {"type": "web_search_20250305", "name": "web_search", "max_uses": 50}
QUOTES_CREDIT = [{"type": "text", "text": "hi"},
                 {"type": "Your credit balance is too low to access the Anthropic API.",
                  "text": "billing"}]


def _body(content: Any = "say hi", tools: list[dict[str, Any]] | None = None,
          stream: bool = False) -> dict[str, Any]:
    body: dict[str, Any] = {"model": MODEL, "max_tokens": 64, "stream": stream,
                            "messages": [{"role": "user", "content": content}]}
    if tools is not None:
        body["tools"] = tools
    return body


def _post(run: RunMeter, body: dict[str, Any]) -> tuple[int, bytes]:
    host, port = run.base_url.split("//")[1].split("/")[0].split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=30)
    conn.request("POST", "/" + run.base_url.split("/", 3)[3] + "/v1/messages",
                 body=json.dumps(body).encode(),
                 headers={"x-api-key": run.token, "content-type": "application/json",
                          "anthropic-version": "2023-06-01"})
    resp = conn.getresponse()
    data = resp.read()
    conn.close()
    return resp.status, data


@pytest.fixture
def sim() -> Iterator[Simulator]:
    with Simulator() as s:
        yield s


def _billed(sim: Simulator) -> list[dict[str, Any]]:
    return [e for e in read_ledger(sim.ledger_path) if e.get("status") == 200]


# -- whose fault an error is -------------------------------------------------------------------


def test_a_validation_error_quoting_credit_is_the_agents(sim: Simulator) -> None:
    with MeterProxy(sim.base_url, "sk-real", price_table()) as meter:
        run = meter.open_run("t-r0")
        status, data = _post(run, _body(QUOTES_CREDIT))
    assert status == 400 and b"credit balance" in data  # the API quoted the agent's text
    assert run.api_failure() is None
    assert run.agent_error() is not None and "invalid_request_error" in run.agent_error()
    assert len(read_ledger(sim.ledger_path)) == 1  # no check needed: it does not start so


def test_the_accounts_real_credit_message_is_infra_confirmed_by_the_meter() -> None:
    with Simulator(faults=FaultConfig(rate_credit=1.0)) as sim, \
            MeterProxy(sim.base_url, "sk-real", price_table()) as meter:
        run = meter.open_run("t-r0")
        status, data = _post(run, _body())
        ledger = read_ledger(sim.ledger_path)
    assert status == 400 and json.loads(data)["error"]["message"].startswith(CREDIT_MESSAGE)
    assert run.agent_error() is None
    assert run.api_failure() is not None and "credit is too low" in run.api_failure()
    assert [e["fault"] for e in ledger] == ["credit", "credit"]  # the agent's, the meter's


class _Quoting:
    """A Messages API that answers with the credit message only a request whose text holds
    ``ECHO`` (as if an API message began with the agent's own words), and bills the rest."""

    def __init__(self) -> None:
        self.seen: list[dict[str, Any]] = []
        up = self

        class H(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a: object) -> None:
                pass

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers["content-length"]))
                up.seen.append({"key": self.headers.get("x-api-key"), "body": json.loads(raw)})
                if b"ECHO" in raw:
                    status, body = 400, {"type": "error", "error": {
                        "type": "invalid_request_error", "message": CREDIT_MESSAGE + " ECHO"}}
                else:
                    status, body = 200, {"type": "message", "role": "assistant", "content": [],
                                         "usage": {"input_tokens": 10, "output_tokens": 1}}
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"


def test_a_message_that_only_starts_like_the_credit_message_is_the_agents() -> None:
    """Where a message starts with the credit message, the meter asks the API itself, with a
    1-token request on the gate's credential: it is answered, so the account has credit and
    the error was the agent's. The check's cost is the run's overhead, not the agent's."""
    up = _Quoting()
    try:
        with MeterProxy(up.url, "sk-real", price_table()) as meter:
            run = meter.open_run("t-r0")
            status, _ = _post(run, _body("ECHO"))
            totals = run.measured()
    finally:
        up.server.shutdown()
    assert status == 400
    assert run.api_failure() is None
    assert run.agent_error() is not None and "the account has credit" in run.agent_error()
    agent, check = up.seen
    assert agent["body"]["messages"][0]["content"] == "ECHO"
    assert check["key"] == "sk-real" and check["body"]["max_tokens"] == 1
    assert (totals.turns, totals.cost_usd) == (0, 0.0)
    assert totals.overhead_usd == pytest.approx(price_table().cost(
        MODEL, Usage(input_tokens=10, output_tokens=1)))


# -- server tools ------------------------------------------------------------------------------


def test_a_server_tool_the_suite_does_not_allow_is_refused_as_the_agents(
        sim: Simulator) -> None:
    with MeterProxy(sim.base_url, "sk-real", price_table()) as meter:
        run = meter.open_run("t-r0")
        status, data = _post(run, _body(tools=[SEARCH]))
        mcp_status, _ = _post(run, {**_body(), "mcp_servers": [
            {"type": "url", "url": "https://example.invalid/mcp", "name": "x"}]})
    assert status == 400 and b"server_tools" in data, data
    assert mcp_status == 400
    assert read_ledger(sim.ledger_path) == []  # never forwarded, never billed
    assert run.agent_error() is not None and "(mcp) is not allowed" in run.agent_error()


@pytest.mark.parametrize("stream", [False, True])
def test_fifty_allowed_searches_cost_fifty_cents_plus_the_tokens(sim: Simulator,
                                                                 stream: bool) -> None:
    with MeterProxy(sim.base_url, "sk-real", price_table(),
                    server_tools={"web_search"}) as meter:
        run = meter.open_run("t-r0")
        assert _post(run, _body(tools=[SEARCH], stream=stream))[0] == 200
        totals = run.measured()
    (entry,) = _billed(sim)
    assert entry["usage"]["server_tool_use"] == {"web_search_requests": 50}
    tokens = price_table().cost(MODEL, Usage.from_api(entry["usage"]))
    assert totals.billed_cost_usd == pytest.approx(0.50 + tokens)
    assert totals.cost_usd == pytest.approx(0.50 + tokens)
    assert totals.unmetered is None


def test_a_billed_server_tool_use_without_a_price_is_not_fully_metered(
        sim: Simulator) -> None:
    table = price_table()
    unpriced = PriceTable(table.date, table.models, {})
    with MeterProxy(sim.base_url, "sk-real", unpriced, server_tools={"web_search"}) as meter:
        run = meter.open_run("t-r0")
        assert _post(run, _body(tools=[SEARCH]))[0] == 200
        totals = run.measured()
    assert totals.unmetered is not None and "web_search_requests" in totals.unmetered
    assert totals.unmetered_by == "agent"


def test_an_allowed_server_tool_billed_by_time_is_not_fully_metered(sim: Simulator) -> None:
    with MeterProxy(sim.base_url, "sk-real", price_table(),
                    server_tools={"code_execution"}) as meter:
        run = meter.open_run("t-r0")
        tools = [{"type": "code_execution_20250825", "name": "code_execution"}]
        assert _post(run, _body(tools=tools))[0] == 200
        totals = run.measured()
    assert totals.unmetered is not None and "by time" in totals.unmetered


def test_client_tools_with_a_type_are_no_server_tools(sim: Simulator) -> None:
    """Client tools the agent runs itself may carry a ``type``; the usage's ``service_tier``
    (the simulator sends it) carries no charge either."""
    tools = [{"type": "bash_20250124", "name": "bash"},
             {"type": "text_editor_20250728", "name": "str_replace_based_edit_tool"},
             {"type": "computer_20250124", "name": "computer", "display_width_px": 800,
              "display_height_px": 600},
             {"type": "custom", "name": "lookup", "input_schema": {"type": "object"}}]
    with MeterProxy(sim.base_url, "sk-real", price_table()) as meter:
        run = meter.open_run("t-r0")
        assert _post(run, _body(tools=tools))[0] == 200
        totals = run.measured()
    (entry,) = _billed(sim)
    assert entry["usage"]["service_tier"] == "standard"
    assert "server_tool_use" not in entry["usage"]
    assert totals.cost_usd == pytest.approx(price_table().cost(MODEL,
                                                               Usage.from_api(entry["usage"])))
    assert totals.unmetered is None


# -- through gate run --------------------------------------------------------------------------

# a command agent: POSTs $BODY once; an error answer: it gives up (exit 1); else it writes the
# answer and exits 0
AGENT = r'''
import json, os, sys, urllib.error, urllib.request
req = urllib.request.Request(os.environ["ANTHROPIC_BASE_URL"] + "/v1/messages",
                             data=os.environ["BODY"].encode(),
                             headers={"x-api-key": os.environ["ANTHROPIC_API_KEY"],
                                      "anthropic-version": "2023-06-01",
                                      "content-type": "application/json"})
try:
    urllib.request.urlopen(req, timeout=60).read()
except urllib.error.HTTPError as exc:
    sys.exit(f"gave up after a {exc.code}")
open("hello.txt", "w").write("hi\n")
'''


def _config(tmp_path: Path, make_task: Any, suite_extra: str = "") -> Path:
    make_task("t")
    agent = tmp_path / "agent.py"
    agent.write_text(AGENT)
    cfg = tmp_path / "gate.toml"
    cfg.write_text(f'[agent]\nkind = "command"\nmodel = "{MODEL}"\n'
                   f'command = "{sys.executable} {agent}"\nenv = ["BODY"]\n'
                   f'[suite]\ntasks = "{tmp_path / "suite"}"\n{suite_extra}')
    return cfg


def _run(cfg: Path, out: Path, body: dict[str, Any], *extra: str,
         env: dict[str, str] | None = None) -> Any:
    return gate("run", "--config", cfg, "-k", "1", "-o", out, *extra, timeout=240,
                env={"BODY": json.dumps(body), **(env or {})})


@pytest.mark.slow
def test_gate_run_sim_fails_a_run_whose_own_request_quoted_credit(
        tmp_path: Path, make_task: Any) -> None:
    cfg = _config(tmp_path, make_task)
    p = _run(cfg, tmp_path / "r.json", _body(QUOTES_CREDIT), "--sim")
    run = load_results(tmp_path / "r.json").runs[0]
    assert run.status == "failed", (run.status, run.reason, p.stderr)
    assert run.reason is not None and "400 invalid_request_error" in run.reason
    assert p.returncode == 0, p.stderr


@pytest.mark.slow
def test_gate_run_keeps_the_accounts_credit_infra(tmp_path: Path, make_task: Any) -> None:
    cfg = _config(tmp_path, make_task)
    with Simulator(faults=FaultConfig(rate_credit=1.0)) as sim:
        p = _run(cfg, tmp_path / "r.json", _body(), env={
            "ANTHROPIC_BASE_URL": sim.base_url, "ANTHROPIC_API_KEY": "sk-ant-test-key-0000"})
    run = load_results(tmp_path / "r.json").runs[0]
    assert run.status == "error", (run.status, run.reason, p.stderr)
    assert run.reason is not None and "credit is too low" in run.reason


@pytest.mark.slow
def test_gate_run_sim_refuses_web_search_unless_the_suite_allows_it(
        tmp_path: Path, make_task: Any) -> None:
    body = _body(tools=[SEARCH])
    cfg = _config(tmp_path, make_task)
    p = _run(cfg, tmp_path / "refused.json", body, "--sim")
    run = load_results(tmp_path / "refused.json").runs[0]
    assert run.status == "failed", (run.status, run.reason, p.stderr)
    assert run.reason is not None and "server_tools" in run.reason

    cfg.write_text(cfg.read_text() + 'server_tools = ["web_search"]\n')
    p = _run(cfg, tmp_path / "allowed.json", body, "--sim")
    run = load_results(tmp_path / "allowed.json").runs[0]
    assert run.status == "passed", (run.status, run.reason, p.stderr)
    tokens = price_table().cost(MODEL, run.usage)
    assert run.cost_usd == pytest.approx(0.50 + tokens), (run.cost_usd, tokens)


@pytest.mark.slow
def test_an_unknown_server_tool_in_gate_toml_is_one_line(tmp_path: Path,
                                                         make_task: Any) -> None:
    cfg = _config(tmp_path, make_task, 'server_tools = ["web_serch"]\n')
    p = _run(cfg, tmp_path / "r.json", _body(), "--sim")
    assert p.returncode == 2, p.stderr
    assert "suite.server_tools" in p.stderr and "web_serch" in p.stderr
    assert "Traceback" not in p.stderr and not (tmp_path / "r.json").exists()


@pytest.mark.slow
def test_a_pull_request_cannot_allow_itself_a_server_tool(tmp_path: Path,
                                                         make_task: Any) -> None:
    """``[suite]`` measures, so on a PR it is the base branch's: a PR that allows itself web
    search still has it refused (``gate run --base-ref``: the yardstick ``gate ci`` opens on
    a pull request), and is told of the change."""
    cfg = _config(tmp_path, make_task)
    cfg.write_text(cfg.read_text().replace(f'tasks = "{tmp_path / "suite"}"', 'tasks = "suite"'))
    for args in (["init", "-q", "-b", "main"], ["add", "-A"],
                 ["-c", "user.email=t@example.invalid", "-c", "user.name=t", "commit", "-q",
                  "-m", "base"]):
        subprocess.run(["git", *args], cwd=tmp_path, check=True, capture_output=True)
    cfg.write_text(cfg.read_text() + 'server_tools = ["web_search"]\n')
    p = gate("run", "--config", cfg, "--base-ref", "main", "-k", "1", "-o", tmp_path / "pr.json",
             "--sim", cwd=tmp_path, env={"BODY": json.dumps(_body(tools=[SEARCH]))})
    assert p.returncode == 0, p.stderr
    assert "[suite].server_tools" in p.stdout + p.stderr, p.stdout + p.stderr
    run = load_results(tmp_path / "pr.json").runs[0]
    assert run.status == "failed", (run.status, run.reason, p.stderr)
    assert run.reason is not None and "not allowed in this suite" in run.reason
