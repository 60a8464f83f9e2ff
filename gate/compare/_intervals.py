"""The intervals the views show beside the verdict: each arm's four metrics and each task's
pass rate, computed here so a page never shows an interval of its own making.

The verdict's own numbers (the pass-rate difference's interval, every p-value) are in the
:class:`~gate.compare.Comparison`; these describe each arm on its own, over the tasks the
comparison compared (every task one vote, as the comparison defines the metrics): a stratified
Wilson interval for the pass rate, and a bootstrap over runs within tasks for mean turns,
cost per task-run and the cache-hit rate, with the bootstrap of a change between the arms.
Pure functions of results; the bootstrap is seeded, so a page renders the same twice.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from gate.compare._stats import wilson
from gate.results import Results, RunResult, runs_by_task, valid_runs

BOOTSTRAP = 1000  # resamples for the turns, cost and cache-hit intervals
METRICS = ("pass_rate", "turns", "cost", "cache_hit_rate")
Interval = tuple[float, float]


@dataclass(frozen=True)
class ArmStats:
    """One arm's four metrics over the given tasks, each with an interval."""

    values: dict[str, float | None]
    intervals: dict[str, Interval | None]
    draws: dict[str, np.ndarray] = field(repr=False)  # bootstrap draws of turns/cost/read/prompt


@dataclass(frozen=True)
class TaskInterval:
    """One task's pass rate in one arm: valid runs, passes, and its Wilson interval."""

    passed: int
    runs: int
    interval: Interval | None  # None: no valid run


@dataclass(frozen=True)
class Intervals:
    """Every interval a report shows: per arm (``baseline`` is None without a baseline),
    per task and arm, and the bootstrap interval of each metric's change."""

    level: float
    tasks: list[str]  # the tasks the arm statistics are over
    candidate: ArmStats
    baseline: ArmStats | None
    per_task: dict[str, dict[str, TaskInterval]]  # task -> "candidate"/"baseline" -> ...
    changes: dict[str, Interval | None]


def arm_stats(runs_by_task: Mapping[str, Sequence[RunResult]], tasks: Sequence[str],
              level: float, seed: int) -> ArmStats:
    """An arm's metrics over ``tasks`` with their intervals (stratified Wilson for the pass
    rate; ``BOOTSTRAP`` resamples of runs within tasks for the others)."""
    rng = np.random.default_rng(seed)
    samples = [np.array([[r.turns, r.cost_usd, r.usage.cache_read_input_tokens,
                          r.usage.input_tokens + r.usage.cache_creation_input_tokens
                          + r.usage.cache_read_input_tokens, r.status == "passed"]
                         for r in valid_runs(runs_by_task.get(t, []))], dtype=float) for t in tasks]
    samples = [s for s in samples if len(s)]
    if not samples:
        return ArmStats(dict.fromkeys(METRICS), dict.fromkeys(METRICS), {})
    n = len(samples)
    means = np.array([s.mean(axis=0) for s in samples])  # (tasks, 5)
    draws = np.zeros((BOOTSTRAP, 5))
    for s in samples:
        idx = rng.integers(0, len(s), size=(BOOTSTRAP, len(s)))
        draws += s[idx].mean(axis=1)
    draws /= n
    lo_q, hi_q = (1 - level) / 2 * 100, (1 + level) / 2 * 100

    def interval(x: np.ndarray) -> Interval:
        lo, hi = np.percentile(x, [lo_q, hi_q])
        return float(lo), float(hi)

    rate = float(means[:, 4].mean())
    n_eff = 1.0 / float(np.sum(1.0 / (n * n) / np.array([len(s) for s in samples])))
    values: dict[str, float | None] = {"pass_rate": rate, "turns": float(means[:, 0].mean()),
                                       "cost": float(means[:, 1].mean()), "cache_hit_rate": None}
    intervals: dict[str, Interval | None] = {
        "pass_rate": wilson(rate * n_eff, n_eff, level),
        "turns": interval(draws[:, 0]), "cost": interval(draws[:, 1]), "cache_hit_rate": None}
    if means[:, 3].sum() > 0:
        values["cache_hit_rate"] = float(means[:, 2].sum() / means[:, 3].sum())
        with np.errstate(invalid="ignore", divide="ignore"):
            hit = draws[:, 2] / draws[:, 3]
        intervals["cache_hit_rate"] = interval(hit[np.isfinite(hit)])
    return ArmStats(values, intervals, {"turns": draws[:, 0], "cost": draws[:, 1],
                                        "read": draws[:, 2], "prompt": draws[:, 3]})


def change_interval(name: str, b: ArmStats, c: ArmStats, level: float) -> Interval | None:
    """A bootstrap interval of the change in turns or cost (relative) or cache hits
    (points), from the two arms' independent draws."""
    if not b.draws or not c.draws:
        return None
    with np.errstate(invalid="ignore", divide="ignore"):
        if name == "cache_hit_rate":
            x = c.draws["read"] / c.draws["prompt"] - b.draws["read"] / b.draws["prompt"]
        else:
            x = c.draws[name] / b.draws[name] - 1
    x = x[np.isfinite(x)]
    if not len(x):
        return None
    lo, hi = np.percentile(x, [(1 - level) / 2 * 100, (1 + level) / 2 * 100])
    return float(lo), float(hi)


def task_interval(runs: Sequence[RunResult], level: float) -> TaskInterval:
    ok = valid_runs(runs)
    passed = sum(r.status == "passed" for r in ok)
    return TaskInterval(passed, len(ok), wilson(passed, len(ok), level) if ok else None)


def intervals(results: Results, baseline: Results | None = None,
              tasks: Sequence[str] | None = None, *, level: float = 0.95,
              seed: int = 0) -> Intervals:
    """The intervals of ``results`` (and ``baseline``) over ``tasks`` (default: the tasks of
    ``results``' suite); the page passes the tasks its comparison compared."""
    stat_tasks = list(tasks) if tasks is not None else sorted(results.suite.tasks)
    c_by = runs_by_task(results.runs)
    b_by = runs_by_task(baseline.runs) if baseline is not None else {}
    c = arm_stats(c_by, stat_tasks, level, seed)
    b = arm_stats(b_by, stat_tasks, level, seed + 1) if baseline is not None else None
    ids = set(results.suite.tasks) | (set(baseline.suite.tasks) if baseline else set())
    per_task = {t: {"candidate": task_interval(c_by.get(t, []), level),
                    **({"baseline": task_interval(b_by.get(t, []), level)}
                       if baseline is not None else {})} for t in sorted(ids)}
    changes = {m: (change_interval(m, b, c, level) if b is not None and m != "pass_rate"
                   else None) for m in METRICS}
    return Intervals(level, stat_tasks, c, b, per_task, changes)
