"""Results and transcripts made by hand for the report's tests, with hostile text to escape."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from gate.cli import main
from gate.core.results import (
    AgentInfo,
    Results,
    RunResult,
    RunUsage,
    SuiteInfo,
    TaskInfo,
    new_results,
)

HOSTILE = '<script>alert(1)</script></script><img src=x onerror="alert(2)"><!-- &amp;'


def _run(task: str, rep: int, status: str, *, reason: str | None = None,
         notes: str | None = None, turns: int = 4, cost: float = 0.003,
         transcript: str | None = None) -> RunResult:
    return RunResult(
        task=task, replication=rep, status=status, reason=reason, turns=turns,  # type: ignore[arg-type]
        usage=RunUsage(input_tokens=10, output_tokens=50, cache_creation_input_tokens=100,
                       cache_read_input_tokens=900),
        cost_usd=cost, duration_s=1.0, notes=notes, task_digest=f"d-{task}",
        transcript=transcript if transcript is not None else f"x.transcripts/{task}-r{rep}.jsonl")


def _results(runs: list[RunResult], model: str = "claude-sonnet-5-5 (simulator)") -> Results:
    tasks = sorted({r.task for r in runs})
    return new_results(model=model, agent=AgentInfo(kind="builtin", fingerprint="sha256:f"),
                       suite=SuiteInfo(digest="s", tasks={t: TaskInfo(digest=f"d-{t}")
                                                          for t in tasks}),
                       commit="abc123", runs=runs)


def _transcript(folder: Path, name: str, events: list[dict[str, Any]]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text("".join(json.dumps(e) + "\n" for e in events))


TOOL_EVENTS: list[dict[str, Any]] = [
    {"type": "model", "turn": 1, "stop_reason": "tool_use",
     "usage": {"input_tokens": 3, "output_tokens": 20},
     "content": [{"type": "text", "text": "Let me look."},
                 {"type": "tool_use", "id": "t1", "name": "bash", "input": {"command": "ls"}}]},
    {"type": "tool", "name": "bash", "input": {"command": "ls"}, "output": "README.md\n",
     "is_error": False},
    {"type": "final", "message": "done", "failure": None, "infra_error": None},
    {"type": "verify", "returncode": 0, "timed_out": False, "output": "ok\n"},
]


def _report(*args: str | Path) -> tuple[int, str, str]:
    res = CliRunner().invoke(main, ["report", *(str(a) for a in args)])
    return res.exit_code, res.stdout, res.stderr
