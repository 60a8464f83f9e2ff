"""One check the metering tests share: a client's own account of its usage is what the gate
billed, token for token (Claude Code's final JSON line; the builtin agent's transcript)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from gate.core.results import RunResult
from gate.sim import ledger_totals
from gate.usage import Usage

FIELDS = ("input_tokens", "output_tokens", "cache_creation_input_tokens",
          "cache_read_input_tokens")


def transcript_events(run: RunResult) -> list[dict[str, Any]]:
    return [json.loads(line) for line in Path(run.transcript or "").read_text().splitlines()]


def claude_code_reported(run: RunResult) -> dict[str, Any]:
    """Claude Code's own final JSON (``--output-format json``), as the run's transcript kept
    its stdout; asserts that what it says it was billed is what the meter billed, and that its
    turns are the run's."""
    events = transcript_events(run)
    reported: dict[str, Any] = json.loads(
        next(e for e in events if e["type"] == "command")["stdout"])
    billed = run.billed_usage or run.usage
    assert tuple(getattr(billed, f) for f in FIELDS) == tuple(
        reported["usage"][f] for f in FIELDS)
    assert run.turns == reported["num_turns"]
    return reported


def builtin_metered_exactly(runs: Sequence[RunResult], ledger: str | Path) -> None:
    """What the simulator served (its ledger) is what the gate billed, and each builtin run's
    own transcript, turn by turn, says the same; the runs' shared prefix was read from cache."""
    served = ledger_totals(ledger)
    billed = sum((r.billed_usage or r.usage for r in runs), Usage())
    for field in FIELDS:
        assert getattr(billed, field) == getattr(served, field), field
    for run in runs:
        turns = [e for e in transcript_events(run) if e["type"] == "model"]
        said = sum((Usage.from_api(e["usage"]) for e in turns), Usage())
        gate = run.billed_usage or run.usage
        assert tuple(getattr(said, f) for f in FIELDS) == tuple(getattr(gate, f) for f in FIELDS)
        assert run.turns == len(turns)
    assert sum(r.usage.cache_read_input_tokens for r in runs) > 0
