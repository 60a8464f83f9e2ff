"""The history of ``main``: one JSON line per refresh, and the trend the PR comment shows.

Drift (docs/statistics.md) is why the record of main's runs is kept: it shows reviewers where
the suite has been heading, and each line keeps main's verdict against its own baseline (an
A/A check), so the real false-block rate can be measured. JSONL, so a refresh only appends.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, ValidationError

from gate._files import HISTORY_LIMIT, atomic_write_text, read_text
from gate.results import Results

if TYPE_CHECKING:
    from gate.compare import Comparison


class HistoryEntry(BaseModel):
    """One main-branch run, summarised."""

    model_config = ConfigDict(extra="allow")

    created_at: str
    commit: str | None = None
    model: str = ""
    fingerprint: str = ""
    suite_digest: str = ""
    passed: int = 0
    total: int = 0
    errors: int = 0
    pass_rate: float | None = None
    mean_turns: float | None = None
    cost_usd: float = 0.0
    cache_hit_rate: float | None = None
    verdict: str | None = None  # main against its previous baseline (A/A)
    run_url: str | None = None


def entry_for(results: Results, *, verdict: str | None, run_url: str | None) -> HistoryEntry:
    s = results.summary
    return HistoryEntry(
        created_at=results.created_at, commit=results.commit, model=results.model,
        fingerprint=results.agent.fingerprint, suite_digest=results.suite.digest,
        passed=s.passed, total=s.total, errors=s.errors, pass_rate=s.pass_rate,
        mean_turns=s.mean_turns, cost_usd=s.cost_usd, cache_hit_rate=s.cache_hit_rate,
        verdict=verdict, run_url=run_url,
    )


def parse_history(text: str) -> list[HistoryEntry]:
    """Entries of a history file; a damaged line is skipped, not fatal (it is only a trend)."""
    out: list[HistoryEntry] = []
    for line in text.splitlines():
        if not line.strip():
            continue
        try:
            out.append(HistoryEntry.model_validate(json.loads(line)))
        except (ValueError, ValidationError):
            continue
    return out


def append_history(path: Path, entry: HistoryEntry, keep: int = 200) -> list[HistoryEntry]:
    """Append ``entry``, keeping the newest ``keep`` lines; written atomically."""
    entries = parse_history(read_text(path, HISTORY_LIMIT, "history")) if path.exists() else []
    entries = [*entries, entry][-keep:]
    atomic_write_text(path, "".join(e.model_dump_json(exclude_none=True) + "\n"
                                    for e in entries))
    return entries


def trend_entries(entries: list[HistoryEntry], last: int = 20) -> list[HistoryEntry]:
    """The latest runs of the newest agent fingerprint: a line across a model change would
    compare different agents."""
    if not entries:
        return []
    fp = entries[-1].fingerprint
    return [e for e in entries if e.fingerprint == fp and e.pass_rate is not None][-last:]


def trend_markdown(entries: list[HistoryEntry], last: int = 20) -> str | None:
    """A Mermaid chart (GitHub renders it) of main's pass rate, for main's step summary.
    None when there is too little to draw."""
    same = trend_entries(entries, last)
    if len(same) < 2:
        return None
    labels = ", ".join(f'"{(e.commit or "?")[:7]}"' for e in same)
    rates = ", ".join(f"{100 * (e.pass_rate or 0):.0f}" for e in same)
    costs = [e.cost_usd for e in same]
    lines = [
        "```mermaid",
        "xychart-beta",
        f'    title "main: pass rate of the last {len(same)} runs (%)"',
        f"    x-axis [{labels}]",
        '    y-axis "pass rate %" 0 --> 100',
        f"    line [{rates}]",
        "```",
        "",
        f"Latest main run: {_pct(same[-1].pass_rate)} passed ({same[-1].passed}/"
        f"{same[-1].total}), cost ${costs[-1]:.4f}; range over these runs "
        f"{_pct(min(e.pass_rate or 0 for e in same))}–{_pct(max(e.pass_rate or 0 for e in same))}.",
    ]
    return "\n".join(lines)


def _pct(v: float | None) -> str:
    return "n/a" if v is None else f"{100 * v:.0f}%"


MIN_AA_CHECKS = 10


def drift_guard(entries: list[HistoryEntry], *, fingerprint: str, alpha: float,
                candidate_pass_rate: float | None) -> tuple[bool, str | None]:
    """Should a pass-rate regression stand, given what main's own A/A checks show?

    A shock that hits every task of a run at once (the provider having a bad hour) breaks the
    exchangeability the exact test rests on. Main measures the real false-block rate: each
    refresh is judged against its own baseline. When those A/A checks (same agent, at least
    ``MIN_AA_CHECKS``) block more than 2α of the time, the suite is drifting, and a pass-rate
    regression must also fall below main's lowest recent pass rate — outside what main has
    shown on its own — to block. Returns (stands, note); note is None when the guard is off.
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


def apply_drift_guard(comparison: Comparison, entries: list[HistoryEntry], *, fingerprint: str,
                      alpha: float) -> tuple[Comparison, str | None]:
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
