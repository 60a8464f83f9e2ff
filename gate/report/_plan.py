"""How the runs were spread: the plan's lines, the same words in every view (the comment's
details, ``gate compare``'s text and terminal, the HTML page). The plan and its check are
gate/compare/_plancheck.py; a view only lays these lines out."""

from __future__ import annotations

from gate.compare import Comparison, PlanSpread

_SOURCE = {
    "baseline": "made from this baseline",
    "independent": "made from the committed baseline, not from the arm it is tested against",
    "none": "no baseline: every task the same",
}


def _looks(looks: list[int]) -> str:
    return "+".join(map(str, looks))


def plan_summary(s: PlanSpread) -> str:
    """The details' title: runs in the looks that ran, and the rule."""
    ran = sum(s.runs_in_look[:s.looks_run])
    looks = f" in {s.looks_run} look{'s' if s.looks_run != 1 else ''}" if s.looks_run > 1 else ""
    return f"{ran} run{'s' if ran != 1 else ''} planned{looks} ({s.rule} v{s.version})"


def plan_lines(c: Comparison) -> list[str]:
    """The plan's spread (tasks × runs per look, by band), where it came from, and what the
    tests made of it; none for a file without a plan. Plain text: each view escapes it."""
    s = c.plan
    if s is None:
        return []
    first, *rest = s.groups
    unit = "runs" if sum(first.looks) != 1 else "run"
    groups = [f"{first.tasks} task{'s' if first.tasks != 1 else ''} × {_looks(first.looks)} "
              f"{unit} ({first.why})",
              *(f"{g.tasks} × {_looks(g.looks)} ({g.why})" for g in rest)]
    looks = ", ".join(f"{n} runs in look {i}" if i == 1 else f"{n} in look {i}"
                      for i, n in enumerate(s.runs_in_look, 1))
    ran = (f"; {s.looks_run} of {len(s.runs_in_look)} looks ran"
           if len(s.runs_in_look) > 1 else "")
    spread = (f"Runs per task by the plan ({s.rule} v{s.version}, {_SOURCE.get(s.source, s.source)}"
              f"): {', '.join(groups)}; {looks}{ran}.")
    if s.conditioned:
        tests = ("The pass-rate tests condition on the plan: each p-value counts only the "
                 "relabellings of the runs under which the baseline gives the same plan, and "
                 "the pass-rate interval is the one given the plan.")
    elif s.reads_outcomes:
        tests = ("The plan read this baseline's pass rates; the pass-rate tests here do not "
                 "condition on it.")
    else:
        tests = ("The plan read no outcome of the runs the tests compare: the tests need not "
                 "condition on it.")
    return [spread, tests, *([f"{s.conditions}."] if s.conditions else [])]
