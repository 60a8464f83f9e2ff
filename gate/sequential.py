"""Sequential PR runs: fewer runs per task on harmless PRs, the same false-block bound.

Run ``first`` replications (2) and compare at α/2: block if the pass-rate test says so,
pass if its p-value is above ``pass_p`` (0.25) — the PR is clearly not worse — and only
otherwise run ``more`` (3) replications and decide on all of them, again at α/2. The two looks
share α, so false blocks stay ≤ α; harmless PRs mostly stop after the first look (~2.5 runs
per task on average instead of 5). See docs/statistics.md.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from gate.compare import Comparison, compare
from gate.config import GateSettings
from gate.results import Results, RunResult
from gate.run import RunRequest, run_suite

Step = Literal["block", "pass", "continue"]


def decisive_p(c: Comparison) -> float | None:
    """The pass-rate p-value the decision rests on (the max test counts with a deep baseline)."""
    t = c.pass_rate_test
    if t is None:
        return None
    return min(t.p_sum, t.p_max) if t.deep_baseline else t.p_sum


def first_look(c: Comparison, pass_p: float) -> Step:
    """After the first runs (compared at α/2): stop with a verdict, or run more."""
    if c.verdict != "pass":
        return "block" if c.verdict == "regression" else "pass"  # inconclusive: no more spend
    p = decisive_p(c)
    return "pass" if p is None or p > pass_p else "continue"


@dataclass(frozen=True)
class SequentialOutcome:
    results: Results
    comparison: Comparison
    looks: int
    note: str


def run_sequential(req: RunRequest, baseline: Results, settings: GateSettings,
                   on_result: Callable[[RunResult], None] | None = None) -> SequentialOutcome:
    half = settings.model_copy(update={"alpha": settings.alpha / 2})
    first = dataclasses.replace(req, replications=settings.sequential_first,
                                sequential=[settings.sequential_first])
    results = run_suite(first, on_result)
    comparison = compare(baseline, results, half)
    step = first_look(comparison, settings.sequential_pass_p)
    p = decisive_p(comparison)
    p_text = f"p = {p:.3g}" if p is not None else "no pass-rate test"
    if step != "continue":
        return SequentialOutcome(results, comparison, 1, (
            f"Sequential run: {settings.sequential_first} runs per task were enough "
            f"({p_text}; block at ≤ {half.alpha:g}, stop at > {settings.sequential_pass_p:g})."))
    more = dataclasses.replace(req, replications=settings.sequential_more,
                               first_replication=settings.sequential_first,
                               keep_runs=list(results.runs),
                               sequential=[settings.sequential_first, settings.sequential_more])
    results = run_suite(more, on_result)
    comparison = compare(baseline, results, half)
    total = settings.sequential_first + settings.sequential_more
    return SequentialOutcome(results, comparison, 2, (
        f"Sequential run: the first {settings.sequential_first} runs per task were not "
        f"conclusive ({p_text}), so {settings.sequential_more} more ran; decided on all "
        f"{total} at α/2 = {half.alpha:g}."))
