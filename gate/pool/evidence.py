"""The comment's evidence: what the PR's runs did beside what main's runs did, and where they
part ways.

Per regressed task (its pass rate fell): the PR's failing runs in brief — their last tool calls
and results, final message, verify's tail, behaviour notes — beside the baseline's passing
runs' common path of moves, with the first step where a failing run leaves it called out.

*Where they part* is defined against the baseline's **common path**
(:func:`gate.core.traces.consensus`):
the sequence of moves (a tool call's name, and for a shell command the program it runs; then
how the run ended) that at least half of the baseline's passing runs share, step by step. A
failing run parts ways at the first step where its move differs; the task's line names the
step most of its failing runs part at. Arguments are not compared (a path or a number differs
between runs that do the same thing); a run whose trace was cut before the step makes no claim.

For a turns, cost or cache-hit regression: the tasks that moved most, their median tokens per
turn (input, cache write, cache read, output) baseline beside PR, and, when the PR's runs write
the prompt cache on every turn while main's read it, the turn where that starts.

Bounded: at most :data:`MAX_TASKS` tasks, :data:`MAX_RUNS` runs each, :data:`MAX_STEPS` moves per
path, :data:`MAX_TURN_ROWS` turns per table, and :data:`BUDGET` characters in all (fewer tasks
and runs until it fits). Every untrusted string goes through the report's escaping
(:func:`gate.report._escape.md`): it renders as one line of literal text.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from markupsafe import Markup

from gate.compare import Comparison, TaskChange
from gate.core.results import Results, RunResult, valid_runs
from gate.core.traces import ANSWER, STOPPED, Consensus, Trace, consensus, divergence, per_turn
from gate.report import code_span, count, dollars, md, rate
from gate.usage import Usage

MAX_TASKS = 5
MAX_RUNS = 2
MAX_STEPS = 12
MAX_TURN_ROWS = 12
LAST_CALLS = 3
MOVERS = 5
BUDGET = 20_000


@dataclass
class RunBrief:
    replication: int
    turns: int
    ending: Markup
    path_line: Markup
    parted: str  # where this run left the baseline's path, or ""
    calls: list[dict[str, Any]]
    final: Markup
    verify: Markup
    notes: Markup | None


@dataclass
class TaskEvidence:
    task: str
    counts: str  # "3/3 → 0/3"
    parted: Markup | None  # the task's line: where its failing runs part ways
    baseline: Markup | None  # the baseline's passing runs' common path
    baseline_note: str | None  # why there is nothing to compare with
    runs: list[RunBrief] = field(default_factory=list)


@dataclass
class Mover:
    task: str
    turns: str
    cost: str
    cache: str
    parted: Markup | None = None
    table: list[dict[str, str]] = field(default_factory=list)
    cache_note: Markup | None = None


@dataclass
class Evidence:
    tasks: list[TaskEvidence]
    metrics: list[str]  # the regressed usage metrics, by label
    movers: list[Mover]
    missing: str | None  # why the baseline's side is missing, for every task
    hidden: int = 0

    def __bool__(self) -> bool:
        return bool(self.tasks or self.movers)


def move(key: str) -> Markup:
    """A step key as the comment shows it: ``bash ls`` → `` `bash` (`ls`) ``."""
    if key in (ANSWER, STOPPED):
        return Markup(md(key.strip("()")))
    name, _, prog = key.partition(" ")
    return Markup(f"{code_span(name, 40)} ({code_span(prog, 40)})" if prog
                  else code_span(name, 40))


def path_line(keys: Sequence[str], support: Sequence[int] | None = None) -> Markup:
    shown = [move(k) for k in keys[:MAX_STEPS]]
    if len(keys) > MAX_STEPS:
        shown.append(Markup(f"… {len(keys) - MAX_STEPS} more"))
    return Markup(" → ").join(shown) if shown else Markup("no tool calls")


def _pool(traces: Sequence[Trace], t: TaskChange) -> list[Trace]:
    cond = getattr(t, "condition", None)
    return [x for x in traces if x.task == t.task and (cond is None or x.condition == cond)]


def _runs(results: Results, t: TaskChange) -> list[RunResult]:
    cond = getattr(t, "condition", None)
    return [r for r in results.runs if r.task == t.task and (cond is None or r.condition == cond)]


def _parted_line(path: Consensus, pr: Sequence[Trace], whose: str) -> Markup | None:
    """Where most of ``pr`` leave ``path``: one sentence."""
    if not path.keys or not pr:
        return None
    found = [divergence(path, x.steps()) for x in pr]
    parts = Counter((d.step, d.baseline, d.support, d.this) for d in found if d.step)
    if not parts:
        return Markup(f"{whose} follow the baseline's common path ({len(path.keys)} "
                      f"step{'s' if len(path.keys) != 1 else ''}) all the way: the runs "
                      "differ in their arguments or their tokens, not in their moves.")
    (step, base, support, this), k = parts.most_common(1)[0]
    verb = "ended" if this in (ANSWER, STOPPED) else "called"
    bverb = "ended" if base in (ANSWER, STOPPED) else "called"
    return Markup(f"**They part at step {step}:** the baseline's runs {bverb} {move(base)} "
                  f"({support} of {path.runs}); {whose} {verb} {move(this)} "
                  f"({k} of {len(pr)}).")


def _brief(trace: Trace, path: Consensus | None) -> RunBrief:
    d = divergence(path, trace.steps()) if path and path.keys else None
    parted = f"parts at step {d.step}" if d and d.step else ""
    calls = []
    flat = [(turn.n, c) for turn in trace.turns for c in turn.calls]
    for n, c in flat[-LAST_CALLS:]:
        calls.append({"turn": Markup(str(n)), "name": code_span(c.name, 40),
                      "arg": md(c.arg, 100), "error": c.error,
                      "result": md(c.result if c.result is not None else "", 160)})
    ending = trace.failure or trace.reason or ("answered" if trace.ending() == ANSWER
                                              else "stopped")
    moves = path_line(trace.steps()) if trace.n_turns else Markup("no model turn recorded")
    return RunBrief(trace.replication, trace.n_turns, md(ending, 120), moves,
                    parted, calls, md(trace.final, 300) if trace.final else Markup(""),
                    md(" ⏎ ".join(trace.verify.splitlines()), 400) if trace.verify
                    else Markup(""), md(trace.notes, 200) if trace.notes else None)


def task_evidence(t: TaskChange, pr: Sequence[Trace], base: Sequence[Trace],
                  base_missing: str | None) -> TaskEvidence:
    mine = [x for x in _pool(pr, t) if x.status == "failed"]
    theirs = _pool(base, t)
    passing = [x for x in theirs if x.status == "passed"]
    counts = f"{t.baseline_passed}/{t.baseline_runs} → {t.candidate_passed}/{t.candidate_runs}"
    note = base_missing
    path = None
    if not base_missing and not passing:
        note = ("the traces kept next to the baseline hold no passing run of this task"
                if theirs else "the traces kept next to the baseline hold no run of this task")
    if passing:
        path = consensus([x.steps() for x in passing])
    ev = TaskEvidence(t.task, counts, None, None, note)
    if path is not None:
        turns = sorted(x.n_turns for x in passing)
        ev.baseline = Markup(f"{path_line(path.keys)} — the common path of {path.runs} passing "
                             f"run{'s' if path.runs != 1 else ''} (median "
                             f"{count(turns[len(turns) // 2], 'turn')})")
        ev.parted = _parted_line(path, mine, "this PR's failing runs")
    first = sorted(mine, key=lambda x: (divergence(path, x.steps()).step is None
                                        if path else False, x.replication))
    ev.runs = [_brief(x, path) for x in first[:MAX_RUNS]]
    return ev


def _mean(xs: Sequence[float]) -> float | None:
    return sum(xs) / len(xs) if xs else None


def _hit(runs: Sequence[RunResult]) -> float | None:
    return sum((r.usage for r in runs), Usage()).cache_hit_rate


def _fmt(x: float | None, kind: str) -> str:
    if x is None:
        return "—"
    if kind == "cost":
        return dollars(x)
    if kind == "cache":
        return rate(x)
    return f"{x:.1f}"


def _tok(x: int) -> str:
    return f"{x:,}"


def cache_note(base: list[tuple[int, int, int, int]], pr: list[tuple[int, int, int, int]]
               ) -> Markup | None:
    """Where the PR's runs start writing the prompt cache on every turn while main's read it."""
    if len(pr) < 2:
        return None
    rewrites = [w > r for _, w, r, _ in pr]
    first = next((i for i in range(len(pr)) if rewrites[i] and (
        i >= len(base) or base[i][2] > base[i][1])), None)
    if first is None:
        return None
    _, w, r, _ = pr[first]
    bw, br = (base[first][1], base[first][2]) if first < len(base) else (0, 0)
    if all(rewrites):
        head = ("**Cache writes on every turn from turn 1:** the prompt's prefix changes "
                "between requests, so nothing written can be read back (a timestamp or other "
                "per-request text early in the system prompt or the tools does this).")
    else:
        head = (f"**From turn {first + 1} the PR's runs write the prompt cache again** "
                "where the baseline's read it.")
    return Markup(f"{head} They part at turn {first + 1}: the baseline's runs wrote "
                  f"{_tok(bw)} and read {_tok(br)} tokens; this PR's runs wrote {_tok(w)} and "
                  f"read {_tok(r)}.")


def movers(c: Comparison, pr: Results, base: Results, pr_traces: Sequence[Trace],
           base_traces: Sequence[Trace]) -> tuple[list[str], list[Mover]]:
    """The regressed usage metrics, and the tasks that moved most on them."""
    regressed = [m for m in c.metrics if m.name in ("turns", "cost", "cache_hit_rate")
                 and m.verdict == "regression"]
    if not regressed:
        return [], []
    key = regressed[0].name
    rows = []
    for t in c.tasks:
        if t.status != "compared":
            continue
        b, p = valid_runs(_runs(base, t)), valid_runs(_runs(pr, t))
        if not b or not p:
            continue
        bt, pt = _mean([r.turns for r in b]), _mean([r.turns for r in p])
        bc, pc = _mean([r.cost_usd for r in b]), _mean([r.cost_usd for r in p])
        bh, ph = _hit(b), _hit(p)
        if key == "turns":
            score = (pt or 0) - (bt or 0)
        elif key == "cost":
            score = ((pc or 0) - (bc or 0)) / bc if bc else (pc or 0)
        else:
            score = (bh or 0) - (ph or 0)
        rows.append((score, t, (bt, pt), (bc, pc), (bh, ph)))
    rows.sort(key=lambda x: (-x[0], x[1].task))
    out = []
    for i, (_, t, turns, cost, hit) in enumerate(rows[:MOVERS]):
        mover = Mover(t.task, f"{_fmt(turns[0], 'turns')} → {_fmt(turns[1], 'turns')}",
                      f"{_fmt(cost[0], 'cost')} → {_fmt(cost[1], 'cost')}",
                      f"{_fmt(hit[0], 'cache')} → {_fmt(hit[1], 'cache')}")
        if i < MAX_RUNS:  # the top movers in detail
            mine, theirs = _pool(pr_traces, t), _pool(base_traces, t)
            passing = [x for x in theirs if x.status == "passed"] or list(theirs)
            if passing and mine:
                path = consensus([x.steps() for x in passing])
                mover.parted = _parted_line(path, mine, "this PR's runs")
            bp, pp = per_turn(theirs), per_turn(mine)
            mover.cache_note = cache_note(bp, pp) if mine else None
            for n in range(min(max(len(bp), len(pp)), MAX_TURN_ROWS)):
                mover.table.append({"turn": str(n + 1),
                                    "baseline": _usage(bp[n]) if n < len(bp) else "—",
                                    "candidate": _usage(pp[n]) if n < len(pp) else "—"})
        out.append(mover)
    return [m.label for m in regressed], out


def _usage(row: tuple[int, int, int, int]) -> str:
    i, w, r, o = row
    return f"{_tok(i)} · {_tok(w)} · {_tok(r)} · {_tok(o)}"


def regressed_tasks(c: Comparison) -> list[TaskChange]:
    """Tasks whose pass rate fell, the clearest first."""
    worse = [t for t in c.tasks if t.status == "compared" and t.change in ("newly_failing",
                                                                          "worse")]
    return sorted(worse, key=lambda t: (t.p_value if t.p_value is not None else 1.0, t.task))


def build(c: Comparison, pr: Results, base: Results, pr_traces: Sequence[Trace],
          base_traces: Sequence[Trace] | None, *, base_missing: str | None = None) -> Evidence:
    """The evidence for ``c``: every task whose pass rate fell (whatever the verdict: a task
    that went from passing to failing is worth a look even when the suite as a whole passes),
    and the movers of a regressed usage metric; empty when there are none. ``base_traces``
    None: none were kept next to the baseline, and ``base_missing`` says why."""
    missing = base_missing if base_traces is None else None
    tasks = [task_evidence(t, pr_traces, base_traces or [], missing)
             for t in regressed_tasks(c)]
    labels, moved = movers(c, pr, base, pr_traces, base_traces or [])
    return Evidence(tasks, labels, moved, missing)


def render(ev: Evidence) -> Markup | None:
    """The evidence section of the comment, within :data:`BUDGET` characters."""
    from gate.report import template_env

    if not ev:
        return None
    template = template_env().get_template("evidence.md.j2")
    n_tasks, n_movers = len(ev.tasks), len(ev.movers)
    while True:
        shown = Evidence(ev.tasks[:MAX_TASKS][:n_tasks], ev.metrics, ev.movers[:n_movers],
                         ev.missing, hidden=len(ev.tasks) - min(n_tasks, MAX_TASKS))
        text = template.render(ev=shown)
        if len(text) <= BUDGET or (n_tasks <= 1 and n_movers <= 1):
            return Markup(text) if len(text) <= BUDGET else None
        if n_tasks > 1:
            n_tasks -= 1
        else:
            n_movers -= 1
