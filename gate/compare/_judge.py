"""The verdict, with the gate's policy on top of the test: one function for every caller.

``gate compare`` and ``gate ci`` both call :func:`judge`, so the same two results files, the
same ``[gate]`` settings and the same history give the same verdict, locally and in CI. Pure:
the history is passed in, never read here.

Policy beyond :func:`compare`:

- **Sequential runs** (``Results.schedule.sequential``): the looks share α, so the runs are
  judged at α/2 — whoever judges the file (docs/statistics.md).
- **Drift guard**: a pass-rate regression no worse than main's own A/A checks show is
  reported, not blocking, when main is drifting (:mod:`gate.compare._drift`).

What the policy did is in ``Comparison.notes``, so every report says it.
"""

from __future__ import annotations

from collections.abc import Sequence

from gate.compare._compare import compare
from gate.compare._drift import HistoryPoint, apply_drift_guard
from gate.compare._model import Comparison
from gate.config import GateSettings
from gate.results import Results


def judge(base: Results, pr: Results, settings: GateSettings,
          history: Sequence[HistoryPoint] = ()) -> Comparison:
    """Compare ``pr`` with ``base`` under ``settings`` and apply the gate's verdict policy."""
    looks = pr.schedule.sequential if pr.schedule is not None else None
    notes: list[str] = []
    if looks:
        half = settings.model_copy(update={"alpha": settings.alpha / 2})
        comparison = compare(base, pr, half)
        notes.append(sequential_note(comparison, looks, settings))
    else:
        comparison = compare(base, pr, settings)
    comparison, drift = apply_drift_guard(comparison, history,
                                          fingerprint=pr.agent.fingerprint,
                                          alpha=settings.alpha)
    if drift:
        notes.append(drift)
    return comparison.model_copy(update={"notes": [*comparison.notes, *notes]}) \
        if notes else comparison


def decisive_p(c: Comparison) -> float | None:
    """The pass-rate p-value the decision rests on (the max test counts with a deep baseline)."""
    t = c.pass_rate_test
    if t is None:
        return None
    return min(t.p_sum, t.p_max) if t.deep_baseline else t.p_sum


def sequential_note(c: Comparison, looks: Sequence[int], settings: GateSettings) -> str:
    """What the sequential design decided, from the looks the results file records."""
    half = settings.alpha / 2
    if len(looks) == 1:
        p = decisive_p(c)
        p_text = f"p = {p:.3g}" if p is not None else "no pass-rate test"
        return (f"Sequential run: {looks[0]} runs per task were enough ({p_text}; block at "
                f"≤ {half:g}, stop at > {settings.sequential_pass_p:g}).")
    return (f"Sequential run: the first {looks[0]} runs per task were not conclusive, so "
            f"{sum(looks[1:])} more ran; decided on all {sum(looks)} at α/2 = {half:g}.")
