"""Main's drift guard: verdict policy, so it lives with the verdict.

Drift (docs/statistics.md) is a shock that hits every task of a run at once (the provider
having a bad hour); it breaks the exchangeability the exact test rests on. Main measures the
real false-block rate by judging each refresh against its own baseline (an A/A check, kept in
the history file). The history is an input here, never read here: ``gate ci`` reads the base
branch's copy, ``gate compare --history FILE`` a file, and both reach the same verdict.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from gate.compare._model import Comparison


class HistoryPoint(Protocol):
    """What the guard reads of one main-branch run (``gate.core.history.HistoryEntry`` is one)."""

    @property
    def fingerprint(self) -> str: ...

    @property
    def verdict(self) -> str | None: ...

    @property
    def pass_rate(self) -> float | None: ...


MIN_AA_CHECKS = 10


def drift_guard(entries: Sequence[HistoryPoint], *, fingerprint: str, alpha: float,
                candidate_pass_rate: float | None) -> tuple[bool, str | None]:
    """Should a pass-rate regression stand, given what main's own A/A checks show?

    When main's A/A checks (same agent, at least ``MIN_AA_CHECKS``) block more than 2α of the
    time, the suite is drifting, and a pass-rate regression must also fall below main's lowest
    recent pass rate — outside what main has shown on its own — to block. Returns
    (stands, note); note is None when the guard is off.
    """
    same = [e for e in entries if e.fingerprint == fingerprint]
    checks = [e for e in same if e.verdict in ("pass", "regression")][-50:]
    if len(checks) < MIN_AA_CHECKS:
        return True, None
    blocked = sum(1 for e in checks if e.verdict == "regression")
    if blocked / len(checks) <= 2 * alpha:
        return True, None
    recent = [e.pass_rate for e in same if e.pass_rate is not None][-20:]
    floor = min(recent) if recent else None
    head = (f"Drift guard: main's own A/A checks blocked {blocked} of its last {len(checks)} "
            f"refreshes (more than 2α = {2 * alpha:g}), so the provider or the suite is "
            "drifting; a pass-rate regression must also fall below main's lowest recent pass "
            f"rate")
    if floor is None or candidate_pass_rate is None:
        return True, f"{head}, and there is none to compare with: the test's verdict stands."
    if candidate_pass_rate < floor:
        return True, (f"{head} ({floor:.1%}). This PR's {candidate_pass_rate:.1%} does: the "
                      "regression stands.")
    return False, (f"{head} ({floor:.1%}). This PR's {candidate_pass_rate:.1%} does not: "
                   "the pass-rate regression is reported, not blocking.")


def apply_drift_guard(comparison: Comparison, entries: Sequence[HistoryPoint], *,
                      fingerprint: str, alpha: float) -> tuple[Comparison, str | None]:
    """The comparison after main's drift guard, and the note explaining it (None: no say).

    Only a regression that rests on pass rate alone is subject to it; turns, cost and cache-hit
    regressions block on their own."""
    if comparison.verdict != "regression":
        return comparison, None
    if [m.name for m in comparison.metrics if m.blocks] != ["pass_rate"]:
        return comparison, None
    pr = comparison.metric("pass_rate")
    stands, note = drift_guard(entries, fingerprint=fingerprint, alpha=alpha,
                               candidate_pass_rate=pr.candidate)
    if stands:
        return comparison, note
    return comparison.model_copy(update={
        "verdict": "pass", "exit_code": 0,
        "headline": "No regression (drift guard): " + comparison.headline}), note
