"""Sequential PR runs: fewer runs per task on harmless PRs, the same false-block bound.

The plan (gate/compare/_plan.py) gives each task its runs in each look (``sequential_looks``,
3 by default: 2 + 2 + 3 for a task that passes at least half the time, 1 + 1 + 1 below half,
1 + 0 + 1 never passed), made once from the baseline before the first look runs and recorded
in the results file: every look runs it, and nothing the PR does changes it. Each look is
judged on all the runs so far, every test at the look's share of its level
(:func:`gate.compare.look_share`: α/4, α/4, α/2 for the pass rate, and the same shares of
metric_alpha for turns, cost and cache hits: :func:`gate.compare.judge` does it for any file
that records sequential looks). After each look but the last:

* **block** when a test blocks;
* **stop** (no regression) when the pass-rate p-value is above the look's stop
  (``GateSettings.stop_p``: 0.2, then 0.08) and no gating metric has moved past its margin
  with p ≤ that stop — the PR is clearly not worse;
* otherwise **look again**: each task's planned runs of the next look.

The last look decides. The shares sum to one (Bonferroni), so false blocks stay within the
levels whatever the looks decide. Harmless PRs mostly stop after the first look.
(:func:`second_look_runs` keeps the sizing before plans, which grew a small suite's second look
from the baseline's pass counts, for the benchmarks that compare with it.)
docs/statistics.md §5 and §5a have the measured rates.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from gate.compare import (
    Comparison,
    RunPlan,
    decisive_p,
    judge,
    look_share,
    plain_runs,
    planned_runs_text,
    resolution_with_runs,
)
from gate.core.config import GateSettings
from gate.core.results import Results, RunResult
from gate.execution.run import PlanFrom, RunRequest, run_suite

Step = Literal["block", "pass", "continue"]

#: the most replications a second look adds to make a small suite's tests able to block
MAX_MORE = 18


def _only_blind(c: Comparison) -> bool:
    """Inconclusive for the design's reasons only: the runs so far could not have blocked
    anything, or a metric past its margin could not reliably be blocked (unclear)."""
    r = c.resolution
    if c.verdict != "inconclusive" or r is None or not c.reasons:
        return False
    design = set(r.unclear_reasons) | ({r.statement} if not r.detectable else set())
    return all(x in design for x in c.reasons)


def _metric_unclear(c: Comparison, pass_p: float) -> bool:
    """A gating metric moved past its margin in the harmful direction, with p ≤ ``pass_p``, but
    does not block (yet): more runs decide it."""
    return any(m.name != "pass_rate" and m.gating and m.comparable and m.exceeds_margin
               and not m.blocks and m.p_value is not None and m.p_value <= pass_p
               for m in c.metrics)


def first_look(c: Comparison, pass_p: float) -> Step:
    """After a look before the last (judged at its share of the levels): stop with a
    verdict, or run the next look."""
    if c.verdict == "regression":
        return "block"
    if c.verdict == "inconclusive":
        # could not have seen anything yet: more runs can fix that; any other reason (infra,
        # too few tasks compared) would not change with more spend
        return "continue" if _only_blind(c) else "pass"
    p = decisive_p(c)
    if (p is not None and p <= pass_p) or _metric_unclear(c, pass_p):
        return "continue"
    return "pass"


def second_look_runs(c: Comparison, settings: GateSettings) -> int:
    """The sizing of the second look before plans (the benchmarks' "today"): ``sequential_more``,
    or on a small suite as many as it takes (up to :data:`MAX_MORE`) for every gating test to be
    able to block at the total against this baseline. It reads the baseline's pass counts, so
    execution no longer uses it: the plan's second look is what runs."""
    first, more = settings.sequential_first, settings.sequential_more
    for extra in range(more, max(more, MAX_MORE) + 1):
        reach = resolution_with_runs(c, first + extra)
        if reach is None or reach.detectable:
            return extra
    return max(more, MAX_MORE)


@dataclass(frozen=True)
class SequentialOutcome:
    results: Results
    comparison: Comparison
    looks: int
    note: str


def runs_text(per_task: dict[str, int], unit: str = " runs per task") -> str:
    """"2 runs per task" (``unit`` after a count every task shares), or when the plan spreads
    the runs "1–3 runs per task (mean 1.7, 25 in all)": the judge's words for the looks."""
    return planned_runs_text(per_task, unit)


def run_sequential(req: RunRequest, baseline: Results, settings: GateSettings,
                   on_result: Callable[[RunResult], None] | None = None,
                   on_start: Callable[[Results, int], None] | None = None) -> SequentialOutcome:
    """Run the looks (module docstring) of the plan made from ``baseline`` (the one the looks
    are judged against: the tests condition on it) and ``settings``; ``on_result`` /
    ``on_start`` go to each look's ``run_suite`` (``on_start`` once per look, before its
    first run: what it prepares is in memory before any agent runs)."""
    first = dataclasses.replace(
        req, plan=None, look=0, sequential=None,
        plan_from=PlanFrom(baseline, "baseline", sequential=True, settings=settings))
    results = run_suite(first, on_result, on_start=on_start)
    assert results.plan is not None
    plan = RunPlan.from_record(results.plan)
    for look in range(1, plan.looks + 1):
        last = look == plan.looks
        # the looks are recorded: each is judged at its share of the levels; the baseline
        # gate's runs decide (skill conditions beside the suite run whole with the first
        # look, kept by the later ones). A look before the last decides on what the
        # simulator measures: a pass rate it cannot judge is said by the verdict on all the
        # runs (gate ci judges them again), never decided by more of them
        comparison = (judge(baseline, results, settings) if last else
                      judge(baseline, plain_runs(results), settings, sim_unjudged="pass"))
        if last or first_look(comparison, settings.stop_p(look - 1)) != "continue":
            return SequentialOutcome(results, comparison, look,
                                     look_note(comparison, plan, look, settings))
        results = run_suite(dataclasses.replace(
            req, plan=plan, plan_from=None, look=look, sequential=None,
            keep_runs=list(results.runs)), on_result, on_start=on_start)
    raise AssertionError("a plan has at least one look")


def look_note(c: Comparison, plan: RunPlan, look: int, settings: GateSettings) -> str:
    """The log's line on how the looks ended, after look ``look`` (1-based) of ``plan``."""
    p = decisive_p(c)
    p_text = f"p = {p:.3g}" if p is not None else "no pass-rate test"
    level = settings.alpha * look_share(plan.looks, look)
    if look < plan.looks:
        return (f"Sequential run: {runs_text(plan.through(look))} in {look} of {plan.looks} "
                f"looks were enough ({p_text}; block at ≤ {level:g}, stop at > "
                f"{settings.stop_p(look - 1):g}).")
    return (f"Sequential run: the first {runs_text(plan.through(look - 1))} were not "
            f"conclusive, so {runs_text(plan.look(look - 1), '')} more ran in the last look; "
            f"decided on all {runs_text(plan.through(look), '')} at "
            f"α/{round(1 / look_share(plan.looks, look))} = {level:g}.")
