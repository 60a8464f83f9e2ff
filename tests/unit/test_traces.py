"""Compact traces (gate/core/traces.py): derived from a transcript, redacted, bounded; the sidecar
pooled with the baseline; the baseline's common path and where a run leaves it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from gate.core.results import RunResult, RunUsage
from gate.core.traces import (
    ANSWER,
    ARG_CHARS,
    CALLS_PER_TURN,
    PER_POOL,
    RESULT_CHARS,
    SIDECAR_BYTES,
    STOPPED,
    TRACE_BYTES,
    Trace,
    consensus,
    divergence,
    parse_sidecar,
    per_turn,
    pooled_sidecar,
    program,
    run_trace,
    sidecar_rel,
    trace_from_events,
)
from gate.secrets import Redactor

SECRET = "sk-ant-unit-SECRET-0123456789"


def _run(task: str = "t", rep: int = 0, status: str = "failed", **extra: Any) -> RunResult:
    return RunResult(task=task, replication=rep, status=status, reason=extra.pop("reason", None),
                     turns=2, usage=RunUsage(input_tokens=1, output_tokens=1,
                                             cache_creation_input_tokens=0,
                                             cache_read_input_tokens=0),
                     cost_usd=0, duration_s=0, notes=extra.pop("notes", None), **extra)


def _turn(n: int, *commands: str, usage: tuple[int, int, int, int] = (1, 2, 3, 4),
          stop: str = "tool_use") -> dict[str, Any]:
    return {"type": "model", "turn": n, "stop_reason": stop if commands else "end_turn",
            "usage": {"input_tokens": usage[0], "cache_creation_input_tokens": usage[1],
                      "cache_read_input_tokens": usage[2], "output_tokens": usage[3]},
            "content": [{"type": "text", "text": "thinking aloud"}] + [
                {"type": "tool_use", "id": f"t{n}{i}", "name": "bash",
                 "input": {"command": c}} for i, c in enumerate(commands)]}


def _tool(output: str, error: bool = False) -> dict[str, Any]:
    return {"type": "tool", "name": "bash", "input": {}, "output": output, "is_error": error}


def test_a_trace_keeps_moves_usage_outcome_and_verify_tail() -> None:
    events = [
        {"type": "setup", "returncode": 0, "output": ""},
        _turn(1, "set -euo pipefail\nls -la"), _tool("a.txt\nb.txt"),
        _turn(2, "timeout 120 python3 -m pytest -q", "cat a.txt"), _tool("1 failed", True),
        _tool("hello"),
        _turn(3, usage=(5, 0, 900, 7)),
        {"type": "final", "message": "I fixed it.", "failure": None},
        {"type": "verify", "returncode": 1, "output": "\n".join(f"line {i}" for i in range(20))},
    ]
    t = trace_from_events(events, _run(notes="used sed"), redact=Redactor())
    assert [c.name for turn in t.turns for c in turn.calls] == ["bash", "bash", "bash"]
    assert t.turns[0].calls[0].arg == "ls -la"  # the preamble is not the move
    assert t.turns[1].calls[0].result == "1 failed" and t.turns[1].calls[0].error
    assert t.turns[1].calls[1].result == "hello" and not t.turns[1].calls[1].error
    assert (t.turns[2].input, t.turns[2].write, t.turns[2].read, t.turns[2].output) == \
        (5, 0, 900, 7)
    assert t.steps() == ["bash ls", "bash python3", "bash cat", ANSWER]
    assert t.final == "I fixed it." and t.notes == "used sed"
    assert t.verify.splitlines() == [f"line {i}" for i in range(15, 20)]


def test_programs_are_what_the_command_runs() -> None:
    assert program("set -e\n# look\nFOO=1 sudo timeout 30 grep -r x .") == "grep"
    assert program("/usr/bin/env python3 -c 'x'") == "python3"
    assert program("echo 'unterminated") == "echo"
    assert program("") == ""


def test_a_run_that_runs_out_of_turns_ends_stopped() -> None:
    t = trace_from_events([_turn(1, "ls"), _tool("x"),
                           {"type": "final", "message": "", "failure": "max_turns (1) reached"}],
                          _run(), redact=Redactor())
    assert t.steps() == ["bash ls", STOPPED]


def test_secrets_never_reach_a_trace() -> None:
    events = [_turn(1, f"curl -H 'x-api-key: {SECRET}' https://x"), _tool(f"key={SECRET}"),
              {"type": "final", "message": f"the key is {SECRET}"},
              {"type": "verify", "returncode": 0, "output": SECRET}]
    t = trace_from_events(events, _run(reason=f"bad {SECRET}"), redact=Redactor([SECRET]))
    text = t.model_dump_json()
    assert SECRET not in text and "[REDACTED]" in text


def test_a_trace_is_bounded_per_field_and_per_run() -> None:
    many = [_turn(1, *[f"cat {'x' * 500} file{i}" for i in range(CALLS_PER_TURN + 3)])]
    many += [_tool("y" * 10_000) for _ in range(CALLS_PER_TURN + 3)]
    for n in range(2, 300):
        many += [_turn(n, f"echo {n} {'z' * 300}"), _tool("o" * 5000)]
    many += [{"type": "final", "message": "m" * 100_000}]
    t = trace_from_events(many, _run(), redact=Redactor())
    assert len(t.model_dump_json()) <= TRACE_BYTES
    assert t.omitted > 0 and t.n_turns == 299
    assert t.turns[0].n == 1 and t.turns[-1].n == 299  # the start and the end are kept
    assert len(t.final) <= 300
    first = t.turns[0]
    assert len(first.calls) == CALLS_PER_TURN and first.more_calls == 3
    assert all(len(c.arg) <= ARG_CHARS and len(c.result or "") <= RESULT_CHARS
               for turn in t.turns for c in turn.calls)
    # the steps stop where turns were dropped: no claim about the middle
    assert t.steps()[-1] not in (ANSWER, STOPPED)


def test_run_trace_reads_only_the_transcripts_folder(tmp_path: Path) -> None:
    results = tmp_path / "r.json"
    folder = tmp_path / "r.transcripts"
    folder.mkdir()
    (folder / "t-r0.jsonl").write_text(json.dumps(_turn(1)) + "\nnot json\n")
    outside = tmp_path / "secret.jsonl"
    outside.write_text(json.dumps(_turn(1, "rm -rf /")))
    assert run_trace(_run(transcript=str(folder / "t-r0.jsonl")), results) is not None
    # a results file naming another path is read from the folder by name only
    assert run_trace(_run(transcript=str(outside)), results) is None
    (folder / "link.jsonl").symlink_to(outside)
    assert run_trace(_run(transcript="link.jsonl"), results) is None
    assert run_trace(_run(transcript="../secret.txt"), results) is None


def test_consensus_follows_the_majority_and_stops_where_it_splits() -> None:
    runs = [["bash ls", "bash cat", "bash sed", ANSWER],
            ["bash ls", "bash cat", "bash sed", ANSWER],
            ["bash ls", "bash grep", "bash sed", ANSWER],
            ["bash find", "bash cat", "bash sed", ANSWER]]
    path = consensus(runs)
    # step 2: 2 of the 3 runs still on the path said cat — 2 of 4 is half: kept
    assert path.keys == ["bash ls", "bash cat", "bash sed", ANSWER]
    assert path.support == [3, 2, 2, 2] and path.runs == 4
    split = consensus([["a", "b"], ["a", "c"], ["a", "d"]])
    assert split.keys == ["a"]  # no move past step 1 is shared by half
    assert consensus([]).keys == []


def test_divergence_is_the_first_step_off_the_common_path() -> None:
    path = consensus([["bash ls", "bash sed", ANSWER]] * 3)
    d = divergence(path, ["bash ls", "bash cat", "bash sed", ANSWER])
    assert (d.step, d.baseline, d.support, d.runs, d.this) == (2, "bash sed", 3, 3, "bash cat")
    assert divergence(path, ["bash ls", STOPPED]).step == 2
    assert divergence(path, ["bash ls", "bash sed", ANSWER]).step is None
    assert divergence(path, ["bash ls"]).step is None  # cut short: no claim


def test_per_turn_medians_while_half_the_runs_reach_the_turn() -> None:
    def tr(*usages: tuple[int, int, int, int]) -> Trace:
        return trace_from_events([_turn(i + 1, "ls", usage=u) for i, u in enumerate(usages)],
                                 _run(), redact=Redactor())

    rows = per_turn([tr((1, 100, 0, 5), (1, 10, 100, 5)), tr((1, 300, 0, 5)),
                     tr((1, 200, 0, 5), (1, 20, 200, 5), (1, 9, 9, 9))])
    assert rows == [(1, 200, 0, 5), (1, 15, 150, 5)]


def test_the_sidecar_keeps_the_pooled_runs_traces_newest_first_and_bounded() -> None:
    from gate.core.results import AgentInfo, SuiteInfo, TaskInfo, new_results

    def trace(task: str, refresh: str, rep: int, result: str = "out") -> Trace:
        t = trace_from_events([_turn(1, "ls"), _tool(result)], _run(task, rep),
                              refresh=refresh, redact=Redactor())
        return t

    runs = [_run("a", i, refresh="new") for i in range(3)] + [_run("a", 3, refresh="old")]
    baseline = new_results(model="m", agent=AgentInfo(kind="k", fingerprint="f"),
                           suite=SuiteInfo(digest="d", tasks={"a": TaskInfo(digest="x")}),
                           commit=None, runs=runs)
    new = [trace("a", "new", i) for i in range(3)]
    old = [trace("a", "old", 0), trace("a", "gone", 0), trace("a", "new", 0)]
    kept = parse_sidecar(pooled_sidecar(baseline, new, old))
    # the runs the baseline no longer holds are dropped; a duplicate counts once
    assert [(t.refresh, t.replication) for t in kept] == [("new", 0), ("new", 1), ("new", 2),
                                                         ("old", 0)]
    assert all(c.result is None for t in kept for turn in t.turns for c in turn.calls)
    # a run with no model turn (the oracle, a command agent) leaves nothing to compare
    silent = trace_from_events([{"type": "oracle", "returncode": 0}], _run("a", 2),
                               refresh="new", redact=Redactor())
    assert parse_sidecar(pooled_sidecar(baseline, [silent], [])) == []
    many = [trace("a", "new", i) for i in range(PER_POOL + 5)]
    assert len(parse_sidecar(pooled_sidecar(baseline, many, []))) == PER_POOL
    huge = [trace("a", "new", i).model_copy(update={"final": "f" * 300, "verify": "v" * 400})
            for i in range(PER_POOL)]
    text = pooled_sidecar(baseline, huge, [])
    assert len(text.encode()) <= SIDECAR_BYTES
    assert parse_sidecar("not json\n" + text + "{}\n") == parse_sidecar(text)


def test_the_sidecar_sits_next_to_the_baseline() -> None:
    assert sidecar_rel("baseline.json") == "baseline.traces.jsonl"
    assert sidecar_rel("main/ci/base.json") == "main/ci/base.traces.jsonl"
    assert sidecar_rel("baseline") == "baseline.traces.jsonl"
