"""Through the real CLI: what the upstream bills is in a run's totals, or the run says it is
not, and who caused it.

A command agent that leaves requests in flight behind it, or asks for a model without a price,
cannot produce a cheap-looking pass, nor turn its own failure into an infra error that leaves
the pass rate: its run fails with that reason. What the provider causes (a 5xx) stays infra.
The upstream is the simulator, started by the test (with a latency or faults) or by the gate
(``--sim``); its ledger says what was answered.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from gate.core.results import load_results
from gate.sim import FaultConfig, Latency, Simulator, read_ledger
from tests.helpers.process import gate

pytestmark = pytest.mark.slow

# a command agent: POSTs one messages request per model named in $MODELS, each from a child
# process of its own (a new session, so it outlives nothing but the agent's own exit), waits
# ``$LINGER`` seconds, writes the answer and exits 0, whatever its children are doing
AGENT = r'''
import json, os, subprocess, sys, time, urllib.request
if len(sys.argv) > 1:
    body = json.dumps({"model": sys.argv[1], "max_tokens": 32,
                       "messages": [{"role": "user", "content": "say hi"}]}).encode()
    req = urllib.request.Request(os.environ["ANTHROPIC_BASE_URL"] + "/v1/messages", data=body,
                                 headers={"x-api-key": os.environ["ANTHROPIC_API_KEY"],
                                          "anthropic-version": "2023-06-01",
                                          "content-type": "application/json"})
    urllib.request.urlopen(req, timeout=120).read()
    sys.exit(0)
for model in os.environ["MODELS"].split():
    subprocess.Popen([sys.executable, __file__, model], start_new_session=True)
time.sleep(float(os.environ["LINGER"]))
open("hello.txt", "w").write("hi\n")
'''


def _setup(tmp_path: Path, make_task) -> Path:
    make_task("t")
    agent = tmp_path / "agent.py"
    agent.write_text(AGENT)
    cfg = tmp_path / "gate.toml"
    cfg.write_text(f'[agent]\nkind = "command"\nmodel = "claude-sonnet-5-5"\n'
                   f'command = "{sys.executable} {agent}"\nenv = ["MODELS", "LINGER"]\n'
                   f'[suite]\ntasks = "{tmp_path / "suite"}"\n')
    return cfg


def _gate(cfg: Path, out: Path, env: dict[str, str],
          *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "gate", "run", "--config", str(cfg), "-k", "1",
                           "-o", str(out), *extra], capture_output=True, text=True,
                          env={**os.environ, **env}, timeout=240)


def test_requests_left_in_flight_by_an_agents_children_fail_the_run(
        tmp_path: Path, make_task) -> None:
    """Three children each send a request (three models: no first-flight wait between them)
    the upstream answers after 15 s; the agent exits
    after one. The meter's grace (10 s) ends before they are answered: they are billed, so the
    run cannot be a pass with 0 turns, nor an infra error (the agent's doing): it fails."""
    cfg = _setup(tmp_path, make_task)
    ledger = tmp_path / "ledger.jsonl"
    with Simulator(ledger_path=ledger, latency=Latency(15_000, 0, None)) as sim:
        p = _gate(cfg, tmp_path / "r.json", {
            "ANTHROPIC_BASE_URL": sim.base_url, "ANTHROPIC_API_KEY": "sk-ant-test-key-0000",
            "MODELS": "claude-sonnet-5-5 claude-haiku-4-5 claude-opus-4-5", "LINGER": "1"})
        end = time.monotonic() + 30
        while time.monotonic() < end and len(read_ledger(ledger)) < 3:
            time.sleep(0.2)
    answered = [e for e in read_ledger(ledger) if e.get("status") == 200]
    assert len(answered) == 3, (p.stderr, read_ledger(ledger))  # the upstream billed three
    run = load_results(tmp_path / "r.json").runs[0]
    assert run.status == "failed", (run.status, run.turns, p.stderr)
    assert run.reason is not None and "not fully metered" in run.reason
    assert "in flight" in run.reason
    assert p.returncode == 0, p.stderr  # a failed run, no infra error: the run is measurable


UNPRICED = "claude-nobody-prices-this-9"


def test_a_model_without_a_price_asked_for_at_run_time_fails_the_run(
        tmp_path: Path, make_task) -> None:
    cfg = _setup(tmp_path, make_task)
    p = _gate(cfg, tmp_path / "r.json", {"MODELS": UNPRICED, "LINGER": "3"}, "--sim")
    run = load_results(tmp_path / "r.json").runs[0]
    assert run.status == "failed", (run.status, run.cost_usd, p.stderr)
    assert run.reason is not None and UNPRICED in run.reason
    assert f'[agent.prices."{UNPRICED}"]' in run.reason  # how to add its price
    assert "base branch" in run.reason
    assert run.turns == 1  # the request was billed and is counted, just not priced


def test_an_agent_that_turns_to_an_unpriced_model_is_a_regression_naming_the_price(
        tmp_path: Path, make_task) -> None:
    """The attack: an agent that cannot solve a task sends one request for a model with no
    price. Its runs used to be infra errors, the task left the comparison and the verdict was
    "No regression" (exit 0). Now they fail: 6/6 → 0/6 is a regression, and the headline says
    which price is missing and where it goes."""
    cfg = _setup(tmp_path, make_task)
    base = _gate(cfg, tmp_path / "base.json", {"MODELS": "", "LINGER": "0"}, "--sim",
                 "-k", "6", "-j", "3")
    assert base.returncode == 0, base.stderr
    assert {r.status for r in load_results(tmp_path / "base.json").runs} == {"passed"}
    pr = _gate(cfg, tmp_path / "pr.json", {"MODELS": UNPRICED, "LINGER": "2"}, "--sim",
               "-k", "6", "-j", "3")
    runs = load_results(tmp_path / "pr.json").runs
    assert [r.status for r in runs] == ["failed"] * 6, (pr.stderr, [r.reason for r in runs])
    c = gate("compare", tmp_path / "base.json", tmp_path / "pr.json", "--format", "json",
             "--config", cfg)
    assert c.returncode == 1, (c.stdout[-2000:], c.stderr)
    comparison = json.loads(c.stdout)
    assert comparison["verdict"] == "regression"
    assert f'[agent.prices."{UNPRICED}"]' in comparison["headline"], comparison["headline"]
    assert "base branch" in comparison["headline"]


def _cli_agent(tmp_path: Path, make_task, body: str) -> Path:
    """A command agent that sends one messages request (``body``) and exits 1 when it is
    refused, else writes the answer (the task passes)."""
    make_task("t")
    agent = tmp_path / "agent.py"
    agent.write_text(SINGLE.replace("BODY", body))
    cfg = tmp_path / "gate.toml"
    cfg.write_text(f'[agent]\nkind = "command"\nmodel = "claude-sonnet-5-5"\n'
                   f'command = "{sys.executable} {agent}"\n'
                   f'[suite]\ntasks = "{tmp_path / "suite"}"\n')
    return cfg


SINGLE = r'''
import json, os, sys, urllib.error, urllib.request
req = urllib.request.Request(os.environ["ANTHROPIC_BASE_URL"] + "/v1/messages",
                             data=json.dumps(BODY).encode(),
                             headers={"x-api-key": os.environ["ANTHROPIC_API_KEY"],
                                      "anthropic-version": "2023-06-01",
                                      "content-type": "application/json"})
try:
    urllib.request.urlopen(req, timeout=60).read()
except urllib.error.HTTPError as exc:
    sys.exit(f"the model API said {exc.code}")
open("hello.txt", "w").write("hi\n")
'''

GOOD = ('{"model": "claude-sonnet-5-5", "max_tokens": 32, '
        '"messages": [{"role": "user", "content": "say hi"}]}')


def test_a_provider_5xx_the_agent_gives_up_on_stays_an_infra_error(
        tmp_path: Path, make_task) -> None:
    cfg = _cli_agent(tmp_path, make_task, GOOD)
    with Simulator(faults=FaultConfig(rate_500=1.0)) as sim:
        p = _gate(cfg, tmp_path / "r.json", {"ANTHROPIC_BASE_URL": sim.base_url,
                                             "ANTHROPIC_API_KEY": "sk-ant-test-key-0000"})
    run = load_results(tmp_path / "r.json").runs[0]
    assert run.status == "error", (run.status, run.reason, p.stderr)
    assert run.reason is not None and "500 api_error" in run.reason
    assert p.returncode == 3, p.stderr


def test_a_malformed_request_the_agent_gives_up_on_fails_the_run(
        tmp_path: Path, make_task) -> None:
    """Its own protocol error (no max_tokens: a 400 from the API) is the agent's failure."""
    cfg = _cli_agent(tmp_path, make_task, GOOD.replace('"max_tokens": 32, ', ""))
    p = _gate(cfg, tmp_path / "r.json", {}, "--sim")
    run = load_results(tmp_path / "r.json").runs[0]
    assert run.status == "failed", (run.status, run.reason, p.stderr)
    assert run.reason is not None and "400 invalid_request_error" in run.reason
    assert p.returncode == 0, p.stderr


def test_a_configured_model_without_a_price_is_refused_before_anything_runs(
        tmp_path: Path, make_task) -> None:
    cfg = _setup(tmp_path, make_task)
    cfg.write_text(cfg.read_text().replace("claude-sonnet-5-5", "claude-nobody-prices-this-9"))
    p = _gate(cfg, tmp_path / "r.json", {"MODELS": "", "LINGER": "0"}, "--sim")
    assert p.returncode == 2, p.stderr
    assert "claude-nobody-prices-this-9" in p.stderr and "[agent.prices" in p.stderr
    assert not (tmp_path / "r.json").exists()
    assert "Traceback" not in p.stderr


class _Refusing:
    """A Messages API on loopback that answers every request with one 400 error."""

    def __init__(self, message: str) -> None:
        body = json.dumps({"type": "error", "request_id": "req_1", "error": {
            "type": "invalid_request_error", "message": message}}).encode()

        class H(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a: object) -> None:
                pass

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers["content-length"]))
                self.send_response(400)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"


@pytest.mark.parametrize(("message", "status"), [
    ("prompt is too long: 210000 tokens > 200000 maximum", "failed"),  # the agent's context
    ("Your credit balance is too low to access the Anthropic API.", "error"),  # the account's
])
def test_the_builtin_agent_giving_up_on_a_400_fails_unless_the_account_caused_it(
        tmp_path: Path, make_task, message: str, status: str) -> None:
    """The builtin agent reports an API error it cannot retry as infra; the meter knows whose
    it was: a request the API refused as the agent made it fails the run, a refusal about the
    account's credit stays infra."""
    make_task("t")
    cfg = tmp_path / "gate.toml"
    cfg.write_text(f'[agent]\nkind = "builtin"\nmodel = "claude-sonnet-5-5"\n'
                   f'[suite]\ntasks = "{tmp_path / "suite"}"\n')
    up = _Refusing(message)
    try:
        p = _gate(cfg, tmp_path / "r.json", {"ANTHROPIC_BASE_URL": up.url,
                                             "ANTHROPIC_API_KEY": "sk-ant-test-key-0000"})
    finally:
        up.server.shutdown()
    run = load_results(tmp_path / "r.json").runs[0]
    assert run.status == status, (run.reason, p.stderr)
    assert run.reason is not None and "invalid_request_error" in run.reason


REFUSED_LAST = r'''
import json, os, sys, urllib.error, urllib.request
def post(path, body):
    req = urllib.request.Request(os.environ["ANTHROPIC_BASE_URL"] + path,
                                 data=json.dumps(body).encode(),
                                 headers={"x-api-key": os.environ["ANTHROPIC_API_KEY"],
                                          "anthropic-version": "2023-06-01",
                                          "content-type": "application/json"})
    try:
        urllib.request.urlopen(req, timeout=60).read()
    except urllib.error.HTTPError as exc:
        return exc.code
for path in ("/v1/messages", "/v1/messages/batches"):
    code = post(path, {"model": "claude-sonnet-5-5", "max_tokens": 32,
                       "messages": [{"role": "user", "content": "say hi"}]})
sys.exit(f"gave up after a {code}")
'''


def test_a_request_the_meter_refused_last_is_the_agents_failure_not_the_providers(
        tmp_path: Path, make_task) -> None:
    """The provider overloads once (529); then the agent sends a request the meter refuses
    (an endpoint outside its allow-list) and gives up. Its newest failure is its own: the run
    fails, where the 529 before it used to make it infra."""
    make_task("t")
    agent = tmp_path / "agent.py"
    agent.write_text(REFUSED_LAST)
    cfg = tmp_path / "gate.toml"
    cfg.write_text(f'[agent]\nkind = "command"\nmodel = "claude-sonnet-5-5"\n'
                   f'command = "{sys.executable} {agent}"\n'
                   f'[suite]\ntasks = "{tmp_path / "suite"}"\n')
    with Simulator(faults=FaultConfig(rate_529=1.0)) as sim:
        p = _gate(cfg, tmp_path / "r.json", {"ANTHROPIC_BASE_URL": sim.base_url,
                                             "ANTHROPIC_API_KEY": "sk-ant-test-key-0000"})
    run = load_results(tmp_path / "r.json").runs[0]
    assert run.status == "failed", (run.status, run.reason, p.stderr)
    assert run.reason is not None and "gave up after a 403" in run.reason
    assert "meter refused POST /v1/messages/batches" in run.reason
