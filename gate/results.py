"""The results file (schema v1). ``baseline.json`` uses the same schema.

Required fields are exactly the documented schema v1; everything else is optional so that a file
holding only the required fields loads, and newer writers can add fields older readers keep.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from gate import __version__
from gate._files import atomic_write_json, load_json_model
from gate.usage import Usage

Status = Literal["passed", "failed", "error"]


class _Open(BaseModel):
    model_config = ConfigDict(extra="allow")


class RunUsage(Usage):
    """Per-run usage: the four API fields are required in the file, the TTL split is not."""

    input_tokens: int
    output_tokens: int
    cache_creation_input_tokens: int
    cache_read_input_tokens: int


class RunResult(_Open):
    """One (task, replication). A failed or errored run is still a result."""

    task: str
    replication: int = Field(ge=0)
    status: Status
    reason: str | None
    turns: int = Field(ge=0)
    usage: RunUsage
    cost_usd: float = Field(ge=0)
    duration_s: float = Field(ge=0)
    notes: str | None
    # optional extras
    task_digest: str | None = None
    score: dict[str, object] | None = None
    condition: str | None = None
    commit: str | None = None
    created_at: str | None = None
    # in a pooled baseline: the ``created_at`` of the results file (the refresh) it came from
    refresh: str | None = None
    transcript: str | None = None
    # Metering ``warm-prefix-v1`` (``Results.schedule.metering``): ``usage`` and ``cost_usd``
    # are *measured* (each run starts with its shared prefix warm); ``billed_usage`` is what
    # the API billed and ``overhead_usd`` the cache-write premium the warm start left out
    # (suite overhead: ``cost_usd + overhead_usd`` is what the run really cost). Absent in
    # older files, whose ``usage`` and ``cost_usd`` are as billed.
    billed_usage: RunUsage | None = None
    overhead_usd: float | None = None


class AgentInfo(_Open):
    kind: str
    fingerprint: str
    parts: dict[str, str] = Field(default_factory=dict)


class TaskInfo(_Open):
    digest: str
    difficulty: str | None = None


class SuiteInfo(_Open):
    digest: str
    tasks: dict[str, TaskInfo]


class Schedule(_Open):
    """How the runs of a results file were scheduled and measured.

    Schedule fields (replications, jobs, sequential looks, order) may differ freely between
    the two arms of a comparison; ``metering`` may not (docs/statistics.md). Shards, skill
    conditions and A/B arms are recorded when the runs have them.
    """

    replications: int | None = None  # runs per task in the file
    jobs: int | None = None  # runs at once
    sequential: list[int] | None = None  # replications run per look, when sequential
    metering: str | None = None  # how usage and cost are measured, e.g. "warm-prefix-v1"
    shard: str | None = None
    conditions: list[str] | None = None
    arm: str | None = None


class Summary(_Open):
    passed: int
    failed: int
    errors: int
    total: int
    pass_rate: float | None
    mean_turns: float | None
    cost_usd: float
    cache_hit_rate: float | None
    # the warm starts' cache-write premium (suite overhead, never in ``cost_usd``) and the
    # runs' total spend, ``cost_usd + overhead_usd``; absent in older files
    overhead_usd: float | None = None
    spend_usd: float | None = None


class Results(_Open):
    schema_version: Literal[1]
    gate_version: str
    created_at: str
    commit: str | None
    model: str
    agent: AgentInfo
    suite: SuiteInfo
    runs: list[RunResult]
    summary: Summary
    schedule: Schedule | None = None  # absent in files written before it was recorded

    @property
    def metering(self) -> str | None:
        """The metering definition of the runs (None: an older file, usage as billed)."""
        return self.schedule.metering if self.schedule is not None else None


def summarize(runs: Iterable[RunResult]) -> Summary:
    """Summary fields. ``total`` excludes infra errors; cost and tokens include them (billed).

    ``cost_usd``, ``tokens`` and ``cache_hit_rate`` are measured; ``overhead_usd`` (the warm
    starts' cache-write premium, suite overhead) is on its own, and ``spend_usd`` is what the
    runs really cost (``cost_usd + overhead_usd``).
    """
    runs = list(runs)
    valid = [r for r in runs if r.status != "error"]
    passed = sum(1 for r in valid if r.status == "passed")
    usage = sum((r.usage for r in runs), Usage())
    overhead = sum(r.overhead_usd or 0.0 for r in runs)
    extra: dict[str, object] = {
        "tokens": usage.model_dump(),
        "billed_tokens": sum((r.billed_usage or r.usage for r in runs), Usage()).model_dump(),
        "duration_s": round(sum(r.duration_s for r in runs), 3)}
    return Summary(
        passed=passed,
        failed=len(valid) - passed,
        errors=len(runs) - len(valid),
        total=len(valid),
        pass_rate=passed / len(valid) if valid else None,
        mean_turns=sum(r.turns for r in valid) / len(valid) if valid else None,
        cost_usd=round(sum(r.cost_usd for r in runs), 6),
        cache_hit_rate=usage.cache_hit_rate,
        overhead_usd=round(overhead, 6),
        spend_usd=round(sum(r.cost_usd for r in runs) + overhead, 6),
        **extra,
    )


def now_iso() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def new_results(
    *, model: str, agent: AgentInfo, suite: SuiteInfo, commit: str | None,
    runs: list[RunResult] | None = None, schedule: Schedule | None = None, **extra: object,
) -> Results:
    runs = list(runs or [])
    return Results(
        schema_version=1, gate_version=__version__, created_at=now_iso(),
        commit=commit, model=model, agent=agent, suite=suite, runs=runs,
        summary=summarize(runs), schedule=schedule, **extra,
    )


def write_results(path: str | os.PathLike[str], results: Results) -> None:
    """Recompute the summary and write atomically."""
    results.summary = summarize(results.runs)
    atomic_write_json(path, results.model_dump(mode="json", exclude_none=False))


def load_results(path: str | os.PathLike[str], what: str = "results file") -> Results:
    return load_json_model(path, Results, what)
