"""The intervals the views show beside the verdict: each arm's metrics (gate/core/metrics.py) and
each task's pass rate, computed here so a page never shows an interval of its own making.

The verdict's own numbers (the pass-rate difference's interval, every p-value) are in the
:class:`~gate.compare.Comparison`; these describe each arm on its own, over the tasks the
comparison compared (every task one vote, as the comparison defines the metrics): a stratified
Wilson interval for the pass rate, and a bootstrap over runs within tasks for the others (a
mean's per task-run mean, a ratio's pooled rate), with the bootstrap of a change between the
arms. A metric some run does not record has no value or interval here. Pure functions of
results; the bootstrap is seeded, so a page renders the same twice.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from gate.compare._rate_ci import arm_limits_given, given_plan_limits
from gate.compare._stats import wilson
from gate.core.metrics import BY_NAME, METRICS, PERMUTED, Metric
from gate.core.results import Results, RunResult, runs_by_task, valid_runs

BOOTSTRAP = 1000  # resamples for the intervals of the metrics other than the pass rate
Interval = tuple[float, float]


@dataclass(frozen=True)
class ArmStats:
    """One arm's metrics over the given tasks, each with an interval."""

    values: dict[str, float | None]
    intervals: dict[str, Interval | None]
    # bootstrap draws of each metric other than the pass rate (a ratio's: its rate)
    draws: dict[str, np.ndarray] = field(repr=False)


@dataclass(frozen=True)
class TaskInterval:
    """One task's pass rate in one arm: valid runs, passes, and its Wilson interval."""

    passed: int
    runs: int
    interval: Interval | None  # None: no valid run
    given_plan: bool = False  # the interval is given the plan's range of the count


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


def _columns(runs: Sequence[RunResult], rows: Sequence[Metric]) -> np.ndarray:
    """A row per run: the pass (1/0), then ``rows``' samples side by side."""
    return np.array([[float(r.status == "passed"), *(x for m in rows for x in m.sample(r) or ())]
                     for r in runs], dtype=float).reshape(len(runs), -1)


def _resampled_means(s: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """``BOOTSTRAP`` resamples (with replacement) of the rows of ``s``, each row's column means:
    the draws ``s[idx].mean(axis=1)`` gives, counted instead of gathered (each resample's
    row counts times ``s``), about three times faster and equal to the last bits."""
    m = len(s)
    idx = rng.integers(0, m, size=(BOOTSTRAP, m))
    counts = np.bincount((idx + np.arange(BOOTSTRAP)[:, None] * m).ravel(),
                         minlength=BOOTSTRAP * m).reshape(BOOTSTRAP, m)
    return (counts @ s) / m


def arm_stats(runs_by_task: Mapping[str, Sequence[RunResult]], tasks: Sequence[str],
              level: float, seed: int) -> ArmStats:
    """An arm's metrics over ``tasks`` with their intervals (stratified Wilson for the pass
    rate; ``BOOTSTRAP`` resamples of runs within tasks for the others)."""
    rng = np.random.default_rng(seed)
    runs = [valid_runs(runs_by_task.get(t, [])) for t in tasks]
    rows = [m for m in PERMUTED if all(m.sample(r) is not None for rs in runs for r in rs)]
    samples = [_columns(rs, rows) for rs in runs if rs]  # a task of infra errors: no sample
    names = [m.name for m in METRICS]
    values: dict[str, float | None] = dict.fromkeys(names)
    intervals: dict[str, Interval | None] = dict.fromkeys(names)
    if not samples:
        return ArmStats(values, intervals, {})
    n = len(samples)
    means = np.array([s.mean(axis=0) for s in samples])  # (tasks, columns)
    draws = np.zeros((BOOTSTRAP, means.shape[1]))
    for s in samples:
        draws += _resampled_means(s, rng)
    draws /= n
    lo_q, hi_q = (1 - level) / 2 * 100, (1 + level) / 2 * 100

    def interval(x: np.ndarray) -> Interval:
        lo, hi = np.percentile(x, [lo_q, hi_q])
        return float(lo), float(hi)

    rate = float(means[:, 0].mean())
    n_eff = 1.0 / float(np.sum(1.0 / (n * n) / np.array([len(s) for s in samples])))
    values["pass_rate"] = rate
    intervals["pass_rate"] = wilson(rate * n_eff, n_eff, level)
    kept: dict[str, np.ndarray] = {}
    col = 1
    for m in rows:
        if m.kind == "mean":
            values[m.name] = float(means[:, col].mean())
            kept[m.name] = draws[:, col]
            intervals[m.name] = interval(kept[m.name])
        elif means[:, col + 1].sum() > 0:
            values[m.name] = float(means[:, col].sum() / means[:, col + 1].sum())
            with np.errstate(invalid="ignore", divide="ignore"):
                hit = draws[:, col] / draws[:, col + 1]
            kept[m.name] = hit
            intervals[m.name] = interval(hit[np.isfinite(hit)])
        col += 1 if m.kind == "mean" else 2
    return ArmStats(values, intervals, kept)


def change_interval(name: str, b: ArmStats, c: ArmStats, level: float) -> Interval | None:
    """A bootstrap interval of the change of a metric (gate/core/metrics.py) from the two arms'
    independent draws: relative for a mean, in points for a ratio."""
    if name not in b.draws or name not in c.draws:
        return None
    with np.errstate(invalid="ignore", divide="ignore"):
        if BY_NAME[name].kind == "ratio":
            x = c.draws[name] - b.draws[name]
        else:
            x = c.draws[name] / b.draws[name] - 1
    x = x[np.isfinite(x)]
    if not len(x):
        return None
    lo, hi = np.percentile(x, [(1 - level) / 2 * 100, (1 + level) / 2 * 100])
    return float(lo), float(hi)


Given = Mapping[str, tuple[int, int]]


def _cuts(passed: int, runs: int, given: tuple[int, int] | None) -> bool:
    """Whether a plan's range of baseline passes cuts this task's count (and fits it)."""
    return (given is not None and (given[0] > 0 or given[1] < runs)
            and given[0] <= passed <= given[1] <= runs)


def task_interval(runs: Sequence[RunResult], level: float,
                  given: tuple[int, int] | None = None) -> TaskInterval:
    """A task's pass rate and its interval: Wilson, or given the plan's range of its baseline
    passes (``given``, when the PR's runs were planned from them and the range cuts the count)
    the exact interval of a count known to lie in it (docs/statistics.md §2a)."""
    ok = valid_runs(runs)
    passed = sum(r.status == "passed" for r in ok)
    if not ok:
        return TaskInterval(passed, 0, None)
    if given is not None and _cuts(passed, len(ok), given):
        return TaskInterval(passed, len(ok), given_plan_limits(passed, len(ok), *given, level),
                            given_plan=True)
    return TaskInterval(passed, len(ok), wilson(passed, len(ok), level))


def _given_plan(arm: ArmStats, per_task: Sequence[TaskInterval],
                given: Sequence[tuple[int, int] | None], level: float) -> ArmStats:
    """The baseline arm with its pass rate's interval given the plan (the MOVER sum of the
    tasks' intervals, :func:`gate.compare._rate_ci.arm_limits_given`), when the plan's ranges
    cut some task's count; as it was otherwise."""
    kept = [(t, g) for t, g in zip(per_task, given, strict=True) if t.runs]
    if not kept:
        return arm
    b = np.array([t.passed for t, _ in kept], dtype=np.int64)
    n = np.array([t.runs for t, _ in kept], dtype=np.int64)
    ranges = np.array([g if g is not None and _cuts(t.passed, t.runs, g) else (0, t.runs)
                       for t, g in kept], dtype=np.int64)
    limits = arm_limits_given(b, n, ranges, level)  # None: no range cuts a task
    if limits is None:
        return arm
    return replace(arm, intervals={**arm.intervals, "pass_rate": limits})


def intervals(results: Results, baseline: Results | None = None,
              tasks: Sequence[str] | None = None, *, level: float = 0.95,
              seed: int = 0, given: Given | None = None) -> Intervals:
    """The intervals of ``results`` (and ``baseline``) over ``tasks`` (default: the tasks of
    ``results``' suite); the page passes the tasks its comparison compared. ``given``: when
    the candidate's runs were planned from this baseline's outcomes (the comparison's plan
    conditioned its tests), each task's range of baseline passes: the baseline's intervals
    are then given the plan too."""
    stat_tasks = list(tasks) if tasks is not None else sorted(results.suite.tasks)
    c_by = runs_by_task(results.runs)
    b_by = runs_by_task(baseline.runs) if baseline is not None else {}
    c = arm_stats(c_by, stat_tasks, level, seed)
    b = arm_stats(b_by, stat_tasks, level, seed + 1) if baseline is not None else None
    ids = set(results.suite.tasks) | (set(baseline.suite.tasks) if baseline else set())
    # a range is on the task's plain baseline runs: a task whose runs here hold a skill
    # condition's too keeps its Wilson interval
    ranges = {t: g for t, g in (given or {}).items()
              if all(r.condition is None for r in b_by.get(t, []))}
    per_task = {t: {"candidate": task_interval(c_by.get(t, []), level),
                    **({"baseline": task_interval(b_by.get(t, []), level, ranges.get(t))}
                       if baseline is not None else {})} for t in sorted(ids)}
    if b is not None and ranges:
        b = _given_plan(b, [per_task[t]["baseline"] if t in per_task else task_interval([], level)
                            for t in stat_tasks],
                        [ranges.get(t) for t in stat_tasks], level)
    changes = {m.name: (change_interval(m.name, b, c, level)
                        if b is not None and m.kind != "pass" else None) for m in METRICS}
    return Intervals(level, stat_tasks, c, b, per_task, changes)
