"""Compact traces: what one run did, small enough to keep next to the baseline.

A run's transcript (``<results stem>.transcripts/<task>-r<n>.jsonl``) holds everything; a
*trace* keeps what a reviewer needs to see why a run differs from main's: each turn's tool
calls (the tool's name and a short summary of its input), the turn's usage (input, cache
write, cache read, output tokens) and stop reason, the run's outcome, its final message and the
tail of verify's output. The PR's traces also keep a short tail of each tool call's result;
the baseline's sidecar does not.

Redacted: every string passes the gate's :class:`~gate.secrets.Redactor` (the transcript was
already redacted when written; this is the second lock). Bounded, per run and per file:

- a tool call's input summary ≤ :data:`ARG_CHARS`, its result tail ≤ :data:`RESULT_CHARS`,
  ≤ :data:`CALLS_PER_TURN` calls per turn (the rest counted); the final message ≤
  :data:`FINAL_CHARS`, verify's tail ≤ :data:`VERIFY_LINES` lines / :data:`VERIFY_CHARS`, the
  tails of the files the verifier left (Harbor's ``/logs/verifier``) ≤ :data:`VERIFIER_FILES`
  files of :data:`VERIFIER_FILE_CHARS`;
- a run's trace ≤ :data:`TRACE_BYTES` of JSON: turns are dropped from the middle (the first
  and the last kept) and counted in ``omitted``;
- the sidecar (``baseline.traces.jsonl`` next to ``baseline.json``): traces of the pooled
  baseline's runs only, the newest :data:`PER_POOL` per task (and skill condition), and at most
  :data:`SIDECAR_BYTES` in all (fewer per task until it fits); runs with no model turn are
  not kept. Read back bounded at
  :data:`SIDECAR_LIMIT`; a line that is not a trace is skipped.

The sidecar is JSON Lines, not gzip: git stores every blob zlib-compressed and deltas one
refresh's file against the last, so a plain text file costs about what a gzipped one would and
stays readable in a diff.
"""

from __future__ import annotations

import json
import os
import re
import shlex
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from gate._files import KiB, MiB, read_head
from gate.core.results import Results, RunResult, transcripts_dir
from gate.secrets import Redactor

ARG_CHARS = 80
RESULT_CHARS = 160
CALLS_PER_TURN = 8
FINAL_CHARS = 300
VERIFY_LINES = 5
VERIFY_CHARS = 400
VERIFIER_FILES = 4  # files the verifier left, kept per run (their tails)
VERIFIER_FILE_CHARS = 600
TEXT_CHARS = 200  # reason, notes, failure
TRACE_BYTES = 8 * KiB
PER_POOL = 10
SIDECAR_BYTES = 2 * MiB
SIDECAR_LIMIT = 4 * MiB
TRANSCRIPT_LIMIT = 8 * MiB  # bytes of one transcript read

#: the sidecar's name next to the baseline: ``baseline.json`` → ``baseline.traces.jsonl``
SIDECAR_SUFFIX = ".traces.jsonl"

# `set -e`-style lines the simulator and people put before the command that does the work
_PREAMBLE = re.compile(r"^\s*(set|shopt)\s|^\s*#|^\s*$")
_ASSIGN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
# programs that run the next word: the step is what they run
_WRAPPERS = frozenset({"sudo", "env", "command", "exec", "time", "nohup", "timeout", "nice"})


class _Model(BaseModel):
    model_config = ConfigDict(extra="ignore")


class Call(_Model):
    """One tool call: the tool, what it was given (in brief), what came back (PR side only)."""

    name: str
    arg: str = ""
    result: str | None = None
    error: bool = False


class Turn(_Model):
    """One model request and the tool calls it made."""

    n: int
    stop: str | None = None
    input: int = 0
    write: int = 0  # cache_creation_input_tokens
    read: int = 0  # cache_read_input_tokens
    output: int = 0
    calls: list[Call] = []
    more_calls: int = 0  # calls past CALLS_PER_TURN, counted


class Trace(_Model):
    """One run in brief."""

    task: str
    replication: int = 0
    condition: str | None = None
    refresh: str | None = None  # the created_at of the results file the run came from
    commit: str | None = None
    status: str = "failed"
    reason: str | None = None
    notes: str | None = None
    turns: list[Turn] = []
    omitted: int = 0  # turns dropped from the middle to fit TRACE_BYTES
    omitted_at: int = 0  # index in ``turns`` where they were dropped
    final: str = ""
    failure: str | None = None  # the agent's own account of why it stopped (max_turns, …)
    verify: str = ""  # the tail of verify's output
    # the tails of the files the verifier left for people (Harbor's /logs/verifier:
    # test-stdout.txt, ctrf.json ...), by name
    verifier_files: dict[str, str] = {}

    @property
    def pool(self) -> tuple[str, str | None]:
        return self.task, self.condition

    @property
    def n_turns(self) -> int:
        return len(self.turns) + self.omitted

    def steps(self) -> list[str]:
        """The run's moves as comparable keys: each tool call (:func:`step_key`), then how it
        ended (``answer`` or ``stopped``). Turns dropped to fit end the sequence there."""
        keys: list[str] = []
        for i, turn in enumerate(self.turns):
            if self.omitted and i == self.omitted_at:
                return keys  # what happened in between is not known: no ending either
            keys += [step_key(c) for c in turn.calls]
        keys.append(self.ending())
        return keys

    def ending(self) -> str:
        why = f"{self.failure or ''} {self.reason or ''}"
        if "max_turns" in why or "stopped by the meter" in why or "timeout" in why:
            return STOPPED
        if self.turns and not self.turns[-1].calls:
            return ANSWER
        return STOPPED if self.turns else ANSWER


ANSWER = "(final answer)"
STOPPED = "(stopped)"


def program(command: str) -> str:
    """The program a shell command runs first: ``set -e\\ncat a.txt`` → ``cat``."""
    for line in command.splitlines():
        if _PREAMBLE.match(line):
            continue
        try:
            words = shlex.split(line, comments=True)
        except ValueError:
            words = line.split()
        words = [w for w in words if not _ASSIGN.match(w)]
        while words and os.path.basename(words[0]) in _WRAPPERS:
            words = words[1:]
            while words and words[0][:1] in "-0123456789":  # timeout 120, nice -n 5
                words = words[1:]
        if words:
            return os.path.basename(words[0])[:40]
    return ""


def step_key(call: Call) -> str:
    """What a step *is*, for comparing runs: the tool's name, and for a shell command the
    program it runs (``bash ls`` and ``bash cat`` are different moves; arguments are not)."""
    prog = program(call.arg) if call.arg and not call.arg.startswith("{") else ""
    return f"{call.name} {prog}" if prog else call.name


def _clip(text: str, limit: int) -> str:
    text = text.strip()
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _tail(text: str, limit: int) -> str:
    text = text.strip()
    return text if len(text) <= limit else "…" + text[-(limit - 1):].lstrip()


def _summary(value: object) -> str:
    """A tool call's input in brief: a command's first working line (and how many more), a
    path, or ``key=value`` pairs."""
    if isinstance(value, Mapping):
        cmd = value.get("command")
        if isinstance(cmd, str):
            lines = [ln for ln in cmd.splitlines() if not _PREAMBLE.match(ln)]
            head = lines[0].strip() if lines else cmd.strip()
            extra = f" (+{len(lines) - 1} lines)" if len(lines) > 1 else ""
            return head + extra if len(head) + len(extra) <= ARG_CHARS else \
                _clip(head, ARG_CHARS - len(extra)) + extra
        for key in ("path", "file_path", "file", "url", "query", "pattern"):
            if isinstance(value.get(key), str):
                return f"{key}={value[key]}"
        return " ".join(f"{k}={v if isinstance(v, str) else json.dumps(v, default=str)}"
                        for k, v in list(value.items())[:4])
    return value if isinstance(value, str) else json.dumps(value, default=str)


def _int(usage: object, key: str) -> int:
    v = usage.get(key) if isinstance(usage, Mapping) else None
    return v if isinstance(v, int) and not isinstance(v, bool) and v >= 0 else 0


def trace_from_events(events: Iterable[Mapping[str, Any]], run: RunResult, *,
                      refresh: str | None = None, results: bool = True,
                      redact: Redactor | None = None) -> Trace:
    """A run's trace from its transcript's events (the runner's JSONL, parsed)."""
    red = redact or Redactor.from_environ()
    turns: list[Turn] = []
    final, failure, verify = "", None, ""
    vfiles: dict[str, str] = {}
    answered = 0
    for ev in events:
        kind = ev.get("type")
        if kind == "model":
            usage = ev.get("usage")
            n = ev.get("turn")
            turn = Turn(n=n if isinstance(n, int) and not isinstance(n, bool)
                        else len(turns) + 1,
                        stop=_clip(str(ev.get("stop_reason")), 40)
                        if ev.get("stop_reason") is not None else None,
                        input=_int(usage, "input_tokens"), output=_int(usage, "output_tokens"),
                        write=_int(usage, "cache_creation_input_tokens"),
                        read=_int(usage, "cache_read_input_tokens"))
            content = ev.get("content")
            for block in content if isinstance(content, list) else []:
                if not (isinstance(block, Mapping) and block.get("type") == "tool_use"):
                    continue
                if len(turn.calls) >= CALLS_PER_TURN:
                    turn.more_calls += 1
                    continue
                turn.calls.append(Call(name=_clip(red(str(block.get("name") or "?")), 40),
                                       arg=_clip(red(_summary(block.get("input"))), ARG_CHARS)))
            turns.append(turn)
            answered = 0
        elif kind == "tool" and turns:
            # the result of the latest turn's next call (calls past CALLS_PER_TURN: none)
            if answered < len(turns[-1].calls):
                call = turns[-1].calls[answered]
                if results:
                    call.result = _tail(red(str(ev.get("output") or "")), RESULT_CHARS)
                call.error = bool(ev.get("is_error"))
            answered += 1
        elif kind == "final":
            final = _clip(red(str(ev.get("message") or "")), FINAL_CHARS)
            failure = _clip(red(str(ev.get("failure"))), TEXT_CHARS) \
                if ev.get("failure") else None
        elif kind == "verify":
            out = str(ev.get("output") or "")
            lines = [ln for ln in out.strip().splitlines() if ln.strip()][-VERIFY_LINES:]
            verify = _tail(red("\n".join(lines)), VERIFY_CHARS)
            files = ev.get("files")
            kept = sorted(files.items())[:VERIFIER_FILES] if isinstance(files, Mapping) else []
            vfiles = {_clip(red(str(name)), 80): _tail(red(str(text)), VERIFIER_FILE_CHARS)
                      for name, text in kept}
    trace = Trace(task=run.task, replication=run.replication, condition=run.condition,
                  refresh=refresh or run.refresh, commit=run.commit, status=run.status,
                  reason=_clip(red(run.reason), TEXT_CHARS) if run.reason else None,
                  notes=_clip(red(run.notes), TEXT_CHARS) if run.notes else None,
                  turns=turns, final=final, failure=failure, verify=verify,
                  verifier_files=vfiles)
    return fit(trace)


def fit(trace: Trace, limit: int = TRACE_BYTES) -> Trace:
    """``trace`` within ``limit`` bytes of JSON: turns dropped from the middle (about two
    thirds of those kept from the start, how it set out; the rest from the end, how it
    finished), and counted."""
    if len(trace.model_dump_json()) <= limit:
        return trace
    turns = trace.turns

    def keep(k: int) -> Trace:
        head = (2 * k + 2) // 3
        kept = turns[:head] + (turns[len(turns) - (k - head):] if k > head else [])
        return trace.model_copy(update={"turns": kept, "omitted": trace.n_turns - k,
                                        "omitted_at": head})

    lo, hi = 0, len(turns) - 1  # the most turns that fit
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if len(keep(mid).model_dump_json()) <= limit:
            lo = mid
        else:
            hi = mid - 1
    return keep(lo)


def read_events(path: Path, limit: int = TRANSCRIPT_LIMIT) -> list[dict[str, Any]] | None:
    """A transcript's JSON lines (a regular file only, no symlink, bounded; None when there is
    no such file); unreadable lines are skipped."""
    data = read_head(path, limit)
    if data is None:
        return None
    events = []
    for line in data.decode("utf-8", errors="replace").splitlines():
        try:
            obj = json.loads(line)
        except (ValueError, RecursionError):
            continue
        if isinstance(obj, dict):
            events.append(obj)
    return events


def run_trace(run: RunResult, results_path: Path, *, refresh: str | None = None,
              results: bool = True, redact: Redactor | None = None) -> Trace | None:
    """The trace of ``run`` from its transcript beside ``results_path``, read by the recorded
    file's name only (a results file cannot point the gate at another file); None without
    one."""
    if not run.transcript:
        return None
    name = Path(run.transcript.replace("\\", "/")).name
    if not name.endswith(".jsonl") or name.startswith("."):
        return None
    events = read_events(transcripts_dir(results_path) / name)
    if events is None:
        return None
    return trace_from_events(events, run, refresh=refresh, results=results, redact=redact)


def landed_trace(run: RunResult, *, redact: Redactor | None = None) -> Trace | None:
    """The trace of a run the gate itself just ran (its transcript at the path the runner
    recorded in memory), read as the run lands: nothing is read once the suite is over."""
    if not run.transcript:
        return None
    events = read_events(Path(run.transcript))
    return None if events is None else trace_from_events(events, run, redact=redact)


def results_traces(results: Results, results_path: Path, *,
                   redact: Redactor | None = None) -> list[Trace]:
    """Every run's trace that has a transcript beside ``results_path`` (stored results: a
    re-judged or merged run's)."""
    red = redact or Redactor.from_environ()
    return [t for run in results.runs
            if (t := run_trace(run, results_path, redact=red)) is not None]


# ---- the sidecar --------------------------------------------------------------------------


def sidecar_rel(baseline_rel: str) -> str:
    """``baseline.json`` → ``baseline.traces.jsonl`` (any other name: ``+ .traces.jsonl``)."""
    stem = baseline_rel[: -len(".json")] if baseline_rel.endswith(".json") else baseline_rel
    return stem + SIDECAR_SUFFIX


def parse_sidecar(text: str | None) -> list[Trace]:
    """The traces of a sidecar's text (bounded; lines that are not traces are skipped)."""
    if not text:
        return []
    out = []
    for line in text[:SIDECAR_LIMIT].splitlines():
        try:
            out.append(Trace.model_validate_json(line))
        except (ValidationError, ValueError):
            continue
    return out


def pooled_sidecar(baseline: Results, new: Sequence[Trace], old: Sequence[Trace]) -> str:
    """The sidecar for the pooled ``baseline``: the traces of its runs (matched by task,
    condition and refresh), the newest :data:`PER_POOL` per task, at most
    :data:`SIDECAR_BYTES` in all. A run whose transcript records no model turn (the oracle,
    a command agent that logs none) leaves nothing to compare with and is not kept."""
    wanted = {(r.task, r.condition, r.refresh) for r in baseline.runs}
    pools: dict[tuple[str, str | None], list[Trace]] = {}
    seen: set[tuple[str, str | None, str | None, int]] = set()
    for t in [*new, *old]:  # the new ones first: the newest are kept
        ident = (t.task, t.condition, t.refresh, t.replication)
        if (t.task, t.condition, t.refresh) not in wanted or ident in seen or not t.n_turns:
            continue
        seen.add(ident)
        pools.setdefault(t.pool, []).append(t.model_copy(update={"turns": [
            turn.model_copy(update={"calls": [c.model_copy(update={"result": None})
                                              for c in turn.calls]}) for turn in t.turns]}))
    keep = PER_POOL
    while True:
        lines = [t.model_dump_json(exclude_defaults=True) for key in sorted(
            pools, key=lambda k: (k[0], k[1] or "")) for t in pools[key][:keep]]
        text = "".join(line + "\n" for line in lines)
        if len(text.encode()) <= SIDECAR_BYTES or keep <= 1:
            return text if len(text.encode()) <= SIDECAR_BYTES else ""
        keep -= 1


# ---- comparing runs ---------------------------------------------------------------------


@dataclass(frozen=True)
class Consensus:
    """The baseline's most common path: at each step the move most of its runs that followed
    the path so far made, while at least half of all its runs share it."""

    keys: list[str]
    support: list[int]  # runs that made each step
    runs: int


def consensus(sequences: Sequence[Sequence[str]]) -> Consensus:
    alive = [list(s) for s in sequences]
    n = len(alive)
    keys: list[str] = []
    support: list[int] = []
    i = 0
    while alive:
        counts = Counter(s[i] for s in alive if len(s) > i)
        if not counts:
            break
        key, k = counts.most_common(1)[0]
        if 2 * k < n:
            break
        keys.append(key)
        support.append(k)
        if key in (ANSWER, STOPPED):
            break
        alive = [s for s in alive if len(s) > i and s[i] == key]
        i += 1
    return Consensus(keys, support, n)


@dataclass(frozen=True)
class Divergence:
    """Where one run leaves the baseline's common path: ``step`` (1-based), the baseline's
    move there and how many of its runs made it, and this run's move. ``step`` None: the run
    follows the whole common path."""

    step: int | None
    baseline: str = ""
    support: int = 0
    runs: int = 0
    this: str = ""


def divergence(path: Consensus, run: Sequence[str]) -> Divergence:
    for i, key in enumerate(path.keys):
        if i >= len(run):  # the run's trace is cut before here: no claim
            return Divergence(None, runs=path.runs)
        if run[i] != key:
            return Divergence(i + 1, key, path.support[i], path.runs, run[i])
    return Divergence(None, runs=path.runs)


def per_turn(traces: Sequence[Trace], max_turns: int = 40) -> list[tuple[int, int, int, int]]:
    """Median (input, cache write, cache read, output) tokens per turn over ``traces``, turn 1
    first, while at least half of them reach that turn (turns dropped to fit are not
    counted)."""
    out: list[tuple[int, int, int, int]] = []
    for i in range(max_turns):
        rows = [t.turns[i] for t in traces if i < len(t.turns)
                and not (t.omitted and i >= t.omitted_at)]
        if not rows or 2 * len(rows) < len(traces):
            break
        out.append((_median([r.input for r in rows]), _median([r.write for r in rows]),
                    _median([r.read for r in rows]), _median([r.output for r in rows])))
    return out


def _median(xs: list[int]) -> int:
    s = sorted(xs)
    m = len(s) // 2
    return s[m] if len(s) % 2 else (s[m - 1] + s[m]) // 2
