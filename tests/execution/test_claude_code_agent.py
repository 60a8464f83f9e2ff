"""Claude Code as a `command` agent, metered by the gate, against the simulator.

Runs where a `claude` binary is found ($GATE_CLAUDE_BIN, then PATH); `.ci/run` installs it from
the npm registry and requires it (the `claude_bin` fixture). Locally:
`npm install --prefix DIR @anthropic-ai/claude-code`, then point GATE_CLAUDE_BIN at
DIR/node_modules/.bin/claude.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gate.core.config import load_config
from gate.core.cost import ModelPrice, Rates, request_cost
from gate.execution.run import RunRequest, run_suite
from gate.usage import Usage

REPO = Path(__file__).resolve().parents[2]

pytestmark = [pytest.mark.claude_code, pytest.mark.slow]


def test_claude_code_usage_agrees_with_the_meter(tmp_path: Path, claude_bin: str) -> None:
    command = (
        f'IS_SANDBOX=1 CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 "{claude_bin}" '
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
    # what Claude Code says it was billed is what the meter saw billed (``usage`` is measured:
    # warm-prefix-v1 counts the run's first write of its shared prefix as a read)
    billed = run.billed_usage or run.usage
    assert (billed.input_tokens, billed.output_tokens, billed.cache_creation_input_tokens,
            billed.cache_read_input_tokens) == (
        u["input_tokens"], u["output_tokens"], u["cache_creation_input_tokens"],
        u["cache_read_input_tokens"])
    measured = run.usage
    assert measured.input_tokens + measured.cache_creation_input_tokens \
        + measured.cache_read_input_tokens == billed.input_tokens \
        + billed.cache_creation_input_tokens + billed.cache_read_input_tokens
    assert run.turns == reported["num_turns"]
    # Claude Code prices a model it does not know at Sonnet 4 rates ($3 / $15): the same
    # accounting of what was billed, under those rates, reproduces its own figure.
    sonnet4 = ModelPrice(Rates(3.0, 3.75, 6.0, 0.30, 15.0))
    assert request_cost(sonnet4, Usage(**billed.model_dump())) == pytest.approx(
        reported["total_cost_usd"], rel=1e-6)
