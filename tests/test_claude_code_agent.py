"""Claude Code as a `command` agent, metered by the gate, against the simulator.

Opt-in: runs only where a `claude` binary is found ($GATE_CLAUDE_BIN, then PATH). Install it
from the npm registry with `npm install --prefix DIR @anthropic-ai/claude-code` and point
GATE_CLAUDE_BIN at DIR/node_modules/.bin/claude.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from gate.config import load_config
from gate.cost import ModelPrice, Rates, request_cost
from gate.run import RunRequest, run_suite
from gate.usage import Usage

REPO = Path(__file__).resolve().parents[1]
CLAUDE = os.environ.get("GATE_CLAUDE_BIN") or shutil.which("claude")

pytestmark = [
    pytest.mark.claude_code,
    pytest.mark.skipif(not CLAUDE or not Path(CLAUDE).exists(),
                       reason="Claude Code not installed (set GATE_CLAUDE_BIN or put `claude` "
                              "on PATH; npm package @anthropic-ai/claude-code)"),
]


def test_claude_code_usage_agrees_with_the_meter(tmp_path: Path) -> None:
    command = (
        f'IS_SANDBOX=1 CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 "{CLAUDE}" '
        '-p "$(cat "$GATE_PROMPT_FILE")" --output-format json --dangerously-skip-permissions'
    )
    cfg = load_config(REPO / "gate.toml")
    cfg = cfg.model_copy(update={"agent": cfg.agent.model_copy(
        update={"kind": "command", "command": command})})
    res = run_suite(RunRequest(config=cfg, output=tmp_path / "r.json",
                               task_ids=["fix-slugify-whitespace"], replications=1, jobs=1,
                               sim=True))
    (run,) = res.runs
    assert run.status == "passed", run.reason
    events = [json.loads(line) for line in Path(run.transcript or "").read_text().splitlines()]
    reported = json.loads(next(e for e in events if e["type"] == "command")["stdout"])
    u = reported["usage"]
    assert (run.usage.input_tokens, run.usage.output_tokens,
            run.usage.cache_creation_input_tokens, run.usage.cache_read_input_tokens) == (
        u["input_tokens"], u["output_tokens"], u["cache_creation_input_tokens"],
        u["cache_read_input_tokens"])
    assert run.turns == reported["num_turns"]
    # Claude Code prices a model it does not know at Sonnet 4 rates ($3 / $15): the same
    # accounting under those rates reproduces its own figure.
    sonnet4 = ModelPrice(Rates(3.0, 3.75, 6.0, 0.30, 15.0))
    assert request_cost(sonnet4, Usage(**run.usage.model_dump())) == pytest.approx(
        reported["total_cost_usd"], rel=1e-6)
