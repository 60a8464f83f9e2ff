"""The history of ``main``: one JSON line per refresh, a core format beside the baseline
(``gate.pool.baseline``); the trend the PR comment and main's step summary show is drawn by the
report (``gate.report.trend_markdown``) from :func:`trend_entries`.

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
from gate.core.results import Results


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
    atomic_write_text(path, dump_history(entries))
    return entries


def dump_history(entries: list[HistoryEntry]) -> str:
    """The history file's text: one JSON line per entry."""
    return "".join(e.model_dump_json(exclude_none=True) + "\n" for e in entries)


def trend_entries(entries: list[HistoryEntry], last: int = 20) -> list[HistoryEntry]:
    """The latest runs of the newest agent fingerprint: a line across a model change would
    compare different agents."""
    if not entries:
        return []
    fp = entries[-1].fingerprint
    return [e for e in entries if e.fingerprint == fp and e.pass_rate is not None][-last:]
