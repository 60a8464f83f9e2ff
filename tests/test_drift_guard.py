"""The drift guard: main's own A/A checks decide whether a pass-rate regression needs more."""

from __future__ import annotations

from gate.github._history import MIN_AA_CHECKS, HistoryEntry, drift_guard


def _entries(n: int, blocked: int, rates: list[float], fp: str = "fp") -> list[HistoryEntry]:
    return [HistoryEntry(created_at=f"2026-11-{i + 1:02d}", fingerprint=fp,
                         pass_rate=rates[i % len(rates)],
                         verdict="regression" if i < blocked else "pass") for i in range(n)]


def test_quiet_main_leaves_the_verdict_alone() -> None:
    stands, note = drift_guard(_entries(20, 0, [0.8]), fingerprint="fp", alpha=0.01,
                               candidate_pass_rate=0.7)
    assert stands and note is None


def test_too_few_checks_leave_the_verdict_alone() -> None:
    stands, note = drift_guard(_entries(MIN_AA_CHECKS - 1, 5, [0.8]), fingerprint="fp",
                               alpha=0.01, candidate_pass_rate=0.7)
    assert stands and note is None


def test_drifting_main_needs_the_pr_below_its_floor() -> None:
    drifting = _entries(20, 3, [0.85, 0.75, 0.8])  # 15 % A/A blocks > 2 %
    stands, note = drift_guard(drifting, fingerprint="fp", alpha=0.01, candidate_pass_rate=0.78)
    assert not stands and note is not None and "not blocking" in note and "75.0%" in note
    stands, note = drift_guard(drifting, fingerprint="fp", alpha=0.01, candidate_pass_rate=0.6)
    assert stands and note is not None and "regression stands" in note


def test_only_the_same_agent_counts() -> None:
    other = _entries(20, 10, [0.9], fp="other")
    stands, note = drift_guard(other, fingerprint="fp", alpha=0.01, candidate_pass_rate=0.5)
    assert stands and note is None
