"""The history of ``main``: one JSON line per refresh, and the trend the PR comment shows.

Drift (docs/statistics.md) is why the record of main's runs is kept: it shows reviewers where
the suite has been heading, and each line keeps main's verdict against its own baseline (an
A/A check), so the real false-block rate can be measured (the drift guard that reads it is
verdict policy: :mod:`gate.compare._drift`). JSONL, so a refresh only appends.
"""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError

from gate._files import HISTORY_LIMIT, atomic_write_text, read_text
from gate.results import Results


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
