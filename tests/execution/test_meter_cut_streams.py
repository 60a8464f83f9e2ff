"""A stream the agent cuts: counted from what passed, never at ``message_start``'s one token.

A real client (a raw socket, as a hostile agent would hold it) reads a real simulator stream
through the real meter and goes away with a reset: right after the last content delta (before
``message_delta`` carried the output), in the middle of the content, or before the stream
began. The meter closes the upstream at once (reading on would have the provider generate and
bill up to ``max_tokens`` for nobody), estimates the output from the content it relayed (about
4 characters a token) and marks it estimated; with nothing to count from, the run is not fully
metered by the agent's doing, and fails. In-process against the meter, then through
``gate run`` with a command agent.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import requests

from gate.core.cost import price_table
from gate.core.results import load_results
from gate.meter import MeterProxy, RunMeter
from gate.sim import Latency, Simulator, read_ledger
from tests.helpers.process import gate

MODEL = "claude-sonnet-5-5"
BODY = {"model": MODEL, "max_tokens": 300, "stream": True,
        "messages": [{"role": "user", "content": "say hi"}]}

# the client: POSTs BODY to $ANTHROPIC_BASE_URL over a raw socket, reads events until it has
# seen $CUT content deltas (0: none, not even the response's head), then resets the
# connection; prints the characters of content it read, writes hello.txt and exits 0
CLIENT = r'''
import json, os, socket, struct, sys, time
base, key = os.environ["ANTHROPIC_BASE_URL"], os.environ["ANTHROPIC_API_KEY"]
cut = int(os.environ["CUT"])
host, port = base.split("//")[1].split("/")[0].split(":")
path = "/" + base.split("/", 3)[3] + "/v1/messages" if base.count("/") > 2 else "/v1/messages"
body = json.dumps(json.loads(os.environ["BODY"])).encode()
sock = socket.create_connection((host, int(port)))
sock.sendall((f"POST {path} HTTP/1.1\r\nhost: {host}\r\nx-api-key: {key}\r\n"
              "anthropic-version: 2023-06-01\r\ncontent-type: application/json\r\n"
              f"content-length: {len(body)}\r\n\r\n").encode() + body)
seen, chars, buf = 0, 0, b""
if cut == 0:
    time.sleep(0.5)  # the meter has forwarded it; the upstream has not answered yet
while seen < cut:
    data = sock.recv(65536)
    if not data:
        sys.exit("the stream ended before the cut")
    buf += data
    while b"\n" in buf:
        line, buf = buf.split(b"\n", 1)
        if line.startswith(b"data:") and b'"content_block_delta"' in line:
            seen += 1
            delta = json.loads(line[5:])["delta"]
            chars += len(delta.get("text") or delta.get("partial_json") or "")
sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
sock.close()
print(json.dumps({"deltas": seen, "chars": chars}))
time.sleep(1.5)  # the meter notices on its next write to the reset connection
open("hello.txt", "w").write("hi\n")
'''


def _deltas() -> list[str]:
    """The content deltas of the simulator's answer to BODY, read straight from it."""
    with Simulator() as sim:
        r = requests.post(f"{sim.base_url}/v1/messages", json=BODY, stream=True, timeout=10,
                          headers={"x-api-key": "k", "anthropic-version": "2023-06-01"})
        lines = r.raw.read().decode().split("\n")
    events = [json.loads(ln[5:]) for ln in lines if ln.startswith("data:")]
    return [e["delta"]["text"] for e in events if e["type"] == "content_block_delta"]


@pytest.fixture(scope="module")
def deltas() -> list[str]:
    found = _deltas()
    assert len(found) >= 4, found  # enough to cut before the last one
    return found


@pytest.fixture
def sim() -> Iterator[Simulator]:
    # slow output (each delta waits for its tokens): the client's reset reaches the meter
    # before the next event does, as with the real API between generated tokens
    with Simulator(latency=Latency(tokens_per_second=25)) as s:
        yield s


def _cut(run_url: str, token: str, cut: int, cwd: Path) -> dict[str, int]:
    env = {**os.environ, "ANTHROPIC_BASE_URL": run_url, "ANTHROPIC_API_KEY": token,
           "CUT": str(cut), "BODY": json.dumps(BODY)}
    out = subprocess.run([sys.executable, "-c", CLIENT], env=env, capture_output=True,
                         text=True, timeout=60, cwd=cwd)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def _wait_ended(meter_run: RunMeter, timeout: float = 10) -> None:
    end = time.monotonic() + timeout
    while not meter_run.requests and time.monotonic() < end:
        time.sleep(0.05)


def test_a_stream_cut_right_after_the_last_content_delta_is_estimated_from_what_passed(
        sim: Simulator, deltas: list[str], tmp_path: Path) -> None:
    with MeterProxy(sim.base_url, "sk-ant-upstream", price_table()) as meter:
        run = meter.open_run("t-r0")
        read = _cut(run.base_url, run.token, len(deltas), tmp_path)
        _wait_ended(run)
        (req,) = run.requests
    assert read["chars"] == sum(map(len, deltas))
    assert req.billed and req.error == "client went away mid-stream" and req.by == "agent"
    assert req.estimated
    # every content delta passed: about 4 characters a token of them, never message_start's 1
    assert req.usage.output_tokens == -(-read["chars"] // 4)
    assert req.usage.input_tokens > 0 and req.cost_usd > 0
    totals = run.measured()
    assert (totals.turns, totals.estimated, totals.unmetered) == (1, 1, None)


def test_a_stream_cut_mid_content_closes_the_upstream(sim: Simulator, deltas: list[str],
                                                      tmp_path: Path) -> None:
    """Cut after the second delta: what passed is counted, and the upstream is closed, not
    read on (the simulator's ledger: it never finished the answer)."""
    with MeterProxy(sim.base_url, "sk-ant-upstream", price_table()) as meter:
        run = meter.open_run("t-r0")
        read = _cut(run.base_url, run.token, 2, tmp_path)
        _wait_ended(run)
        (req,) = run.requests
    assert req.estimated and req.by == "agent"
    assert -(-read["chars"] // 4) <= req.usage.output_tokens < -(-sum(map(len, deltas)) // 4)
    end = time.monotonic() + 10
    while time.monotonic() < end and not read_ledger(sim.ledger_path):
        time.sleep(0.1)
    (entry,) = read_ledger(sim.ledger_path)
    assert entry["fault"] == "client_disconnected", entry  # the simulator was cut off
    assert entry["usage"]["output_tokens"] == 1  # it never reached its message_delta


# -- through gate run --------------------------------------------------------------------


MakeTask = Callable[..., Path]


def _config(tmp_path: Path, make_task: MakeTask) -> Path:
    make_task("t")
    agent = tmp_path / "agent.py"
    agent.write_text(CLIENT)
    cfg = tmp_path / "gate.toml"
    cfg.write_text(f'[agent]\nkind = "command"\nmodel = "{MODEL}"\n'
                   f'command = "{sys.executable} {agent}"\nenv = ["CUT", "BODY"]\n'
                   f'[suite]\ntasks = "{tmp_path / "suite"}"\n')
    return cfg


def _run(cfg: Path, out: Path, base_url: str, cut: int) -> subprocess.CompletedProcess[str]:
    return gate("run", "--config", cfg, "-k", "1", "-o", out, timeout=240,
                env={"ANTHROPIC_BASE_URL": base_url, "ANTHROPIC_API_KEY": "sk-ant-test-0000",
                     "CUT": str(cut), "BODY": json.dumps(BODY)})


@pytest.mark.slow
def test_gate_run_records_a_cut_stream_as_estimated(tmp_path: Path, make_task: MakeTask,
                                                    sim: Simulator,
                                                    deltas: list[str]) -> None:
    cfg = _config(tmp_path, make_task)
    p = _run(cfg, tmp_path / "r.json", sim.base_url, len(deltas))
    run = load_results(tmp_path / "r.json").runs[0]
    assert run.status == "passed", (run.reason, p.stderr)
    assert run.usage.output_tokens == -(-sum(map(len, deltas)) // 4)
    assert run.estimated is not None and "estimated" in run.estimated
    c = gate("compare", tmp_path / "r.json", tmp_path / "r.json", "--config", cfg)
    assert "1 run of this PR had a model stream cut short" in c.stdout, c.stdout
    html = tmp_path / "report.html"
    gate("report", tmp_path / "r.json", "--html", html, "--config", cfg)
    assert "metering: output tokens of 1 model stream(s) cut short are estimated" in \
        html.read_text(), "the HTML report does not show the run's estimate"


@pytest.mark.slow
def test_gate_run_fails_a_run_whose_agent_cut_a_stream_before_it_began(
        tmp_path: Path, make_task: MakeTask) -> None:
    """The agent resets its connection while the upstream is still thinking: the upstream
    bills the request once it starts, and nothing passed to count it from. The meter used to
    drop the request without a trace (a pass with 0 turns)."""
    cfg = _config(tmp_path, make_task)
    with Simulator(latency=Latency(fixed_ms=1500)) as sim:
        p = _run(cfg, tmp_path / "r.json", sim.base_url, 0)
        time.sleep(1.5)
        answered = [e for e in read_ledger(sim.ledger_path) if e.get("status") == 200]
    assert answered, read_ledger(sim.ledger_path)  # the upstream began it: billed input
    run = load_results(tmp_path / "r.json").runs[0]
    assert run.status == "failed", (run.status, run.reason, p.stderr)
    assert run.reason is not None and "cut a model stream before it began" in run.reason
    assert p.returncode == 0, p.stderr
