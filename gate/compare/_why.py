"""The verdict's one-line why: a few short reasons, taken once from the judge's decision.

The PR comment's first screen says them after the verdict (gate/report/_screen.py lays them
out, in order, as many as fit); the terminal prints them. Each reason is a few words a
reviewer can act on, never a test's wording: which metric moved and by how much, which tasks
collapsed, which agent setting changed (``max_turns 30 → 1``), what would let a blind design
block. :func:`why` reads them off a decided :class:`Comparison` (its verdict, its blocking
metrics, its reasons, its resolution, its tasks and agent changes): nothing is re-tested here.

A step of the judge that decides something these rules cannot see puts its own short reason
in ``Comparison.why`` before :func:`with_why` runs; those come first, in the order given.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from gate.compare._model import AgentChange, Comparison, MetricResult, TaskChange
from gate.core.metrics import BY_NAME

#: how long one reason may be (the first screen fits 80 columns, the verdict's words first)
MAX_REASON = 60
#: tasks named in the collapse reason before they are only counted, and their names' room
NAMED_TASKS = 2
NAMES_ROOM = 30
#: agent changes said one by one before they are only counted
NAMED_CHANGES = 2

MINUS = "\u2212"


def with_why(c: Comparison) -> Comparison:
    """``c`` with its why: the reasons a step of the judge gave first, then this module's."""
    return c.model_copy(update={"why": why(c)})


def why(c: Comparison) -> list[str]:
    """The short reasons of ``c``'s verdict, most telling first, each at most
    :data:`MAX_REASON` characters, none twice."""
    found = [*c.why, *_decision(c), *_collapsed(c.tasks), *_broken(c.tasks),
             *_agent(c.agent_changes)]
    out: list[str] = []
    for reason in (_cut(r) for r in found):
        if reason and reason not in out:
            out.append(reason)
    return out


def _decision(c: Comparison) -> list[str]:
    """What decided the verdict: the skill's effect (the most specific cause: the skill
    stopped helping) and the metrics that block (or would), the causes of an inconclusive
    verdict; on a pass, how the pass rate moved."""
    moved = [_moved(m) for m in c.metrics if m.blocks]
    if c.skill_effect is not None and c.skill_effect.blocks and c.skill_effect.change is not None:
        moved.insert(0, f"skill effect {_points(c.skill_effect.change)}")
    if c.verdict == "regression":
        return moved
    if c.verdict == "pass":
        rate = c.metric("pass_rate")
        within = [f"{_moved(m)} (within margin)" for m in c.metrics
                  if m.name != "pass_rate" and m.gating and m.significant and not m.blocks]
        return ([f"pass rate {_value(rate, rate.baseline)} → {_value(rate, rate.candidate)}"]
                if rate.delta is not None and rate.verdict != "unjudged" else []) + within
    causes = [_blind(c) if c.resolution is not None and r == c.resolution.statement
              else _stopped(r) or _short(r) for r in c.reasons
              if not r.startswith("would block: ")]
    return causes + [f"would block: {m}" for m in moved]


def _blind(c: Comparison) -> str:
    """What a design too small to block needs (compare's resolution: runs or tasks)."""
    res = c.resolution
    assert res is not None
    if res.runs_per_task is not None:
        return f"could not block: needs ≥ {res.runs_per_task} runs per task"
    if res.tasks is not None:
        return f"could not block: needs ≥ {res.tasks} tasks"
    return "could not block: too few runs and tasks"


#: compare's reason for an arm that stopped before its plan was done (``interruption_note``)
_STOPPED = re.compile(r"the (candidate|baseline) run was interrupted \((.*)\) with (\d+) "
                      r"planned runs? missing")


def _stopped(reason: str) -> str | None:
    """``this run stopped early (budget): 3 runs missing``."""
    m = _STOPPED.fullmatch(reason)
    if m is None:
        return None
    who = "this run" if m.group(1) == "candidate" else "the baseline"
    why, n = m.group(2).split(":", 1)[0], int(m.group(3))
    return f"{who} stopped early ({why}): {n} run{'s' if n != 1 else ''} missing"


def _collapsed(tasks: Sequence[TaskChange]) -> list[str]:
    """The tasks that passed in the baseline and never in this run, named when few."""
    gone = [t.task for t in tasks if t.status == "compared" and t.change == "newly_failing"]
    if not gone:
        return []
    if len(gone) == 1:
        return [f"{gone[0]} collapsed"]
    if len(gone) <= NAMED_TASKS and len(", ".join(gone)) <= NAMES_ROOM:
        return [f"{len(gone)} tasks collapsed: {', '.join(gone)}"]
    return [f"{len(gone)} tasks collapsed"]


def _broken(tasks: Sequence[TaskChange]) -> list[str]:
    """The tasks this run could not load (never "removed"), named when few."""
    gone = [t.task for t in tasks if t.status == "broken"]
    if not gone:
        return []
    if len(gone) <= NAMED_TASKS and len(", ".join(gone)) <= NAMES_ROOM:
        return [f"{len(gone)} task{'s' if len(gone) != 1 else ''} broken: {', '.join(gone)}"]
    return [f"{len(gone)} tasks broken"]


def _agent(changes: Sequence[AgentChange]) -> list[str]:
    """The agent's changes as ``key old → new`` (a digest said as the part that changed)."""
    said = [_change(x) for x in changes]
    if len(said) > NAMED_CHANGES:
        return [*said[:NAMED_CHANGES - 1], f"{len(said) - NAMED_CHANGES + 1} more agent changes"]
    return said


def _change(x: AgentChange) -> str:
    if x.digest or x.baseline is None or x.candidate is None:
        return f"{x.part} changed"
    base, new = x.baseline, x.candidate
    unit = " characters"
    if base.endswith(unit) and new.endswith(unit):  # the prompt, by its length
        base = base.removesuffix(unit)
    return f"{x.part} {base} → {new}"


def _moved(m: MetricResult) -> str:
    """``pass rate −100.0 pts``, ``cost per run +466.1 %``."""
    if m.delta is None:
        return m.label
    if BY_NAME[m.name].points:
        return f"{m.label} {_points(m.delta)}"
    return f"{m.label} {_signed(m.delta * 100)} %"


def _value(m: MetricResult, x: float | None) -> str:
    if x is None:
        return "n/a"
    return f"{x * 100:.1f} %" if BY_NAME[m.name].points else f"{x:g}"


def _points(x: float) -> str:
    return f"{_signed(x * 100)} pts"


def _signed(x: float) -> str:
    return f"{x:+.1f}".replace("-", MINUS)


_PARENS = re.compile(r" \([^()]*\)")


def _short(reason: str) -> str:
    """A reason of compare's in a few words: what comes before its detail (after ``: ``),
    without its parenthesised figures."""
    while (bare := _PARENS.sub("", reason)) != reason:
        reason = bare
    return reason.split(": ", 1)[0].strip()


def _cut(reason: str) -> str:
    reason = " ".join(reason.split())
    return reason if len(reason) <= MAX_REASON else reason[:MAX_REASON - 1].rstrip() + "…"
