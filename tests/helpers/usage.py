"""One check the metering tests share: a client's own account of its usage is what the gate
billed, token for token (Claude Code's final JSON line; the builtin agent's transcript)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from gate.results import RunResult

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
