"""Past its margin, and the test too weak to say: "⚠️ unclear", never "ok".

A gating metric (turns, cost, cache-hit rate) blocks when its change passes the margin *and*
its permutation test is significant. On a small suite the test is often too weak for a change
of the margin's size: ``{{ now }}`` in a short prompt moved cost +47 % (p = 0.19) and the
cache-hit rate 33.5 % → 0 % (p = 0.017) on four tasks, and both read "ok". The resolution rule
(:mod:`gate.compare._resolution`) already refuses a pass when a test could not block *at all*;
this extends it to "could not *reliably* block the margin":

    a gating metric whose point estimate is past its margin, whose test did not block, reads
    "unclear" when the test's power against a change of exactly the margin's size, at this
    design, is below :data:`RELIABLE` (80 %).

**The power figure** (:func:`margin_power`) is the one-sided power of the aggregate statistic
at the metric's threshold, in the normal approximation of its within-task permutation law:
the statistic is Σ_i (mean_i^PR − mean_i^base) (for a ratio, the per-run rates weighted by the
tasks' share of the denominator), whose permutation variance is Σ_i s_i² (1/n_i^B + 1/n_i^PR)
exactly; s_i² is task i's variance within the arms (pooled over both, so the shift itself does
not inflate it). A change of the margin's size moves the statistic by margin × Σ_i μ_i^base
(a mean; relative margin) or by the margin's points (a ratio). Power = Φ(δ/se − z_(1−thr)), and
0 when the design's floor (:func:`gate.compare._stats.min_permutation_p`, over the tasks
whose runs did not all measure the same) is above the threshold. It uses the arms' spread,
never the PR's mean: a design property given the noise.

The runs that would settle it are computed the same way: the fewest runs per task in both arms
(a baseline already deeper keeps its depth) at which the power against a change as large as
the one seen (never less than the margin) reaches :data:`RELIABLE`.

Exit code: :data:`EXIT` (docs/statistics.md §4b has the measured A/A rate that decides it).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from statistics import NormalDist

import numpy as np

from gate.compare import _resolution, _stats
from gate.compare._model import MetricName, MetricResult, Resolution
from gate.core.metrics import BY_NAME, Metric
from gate.core.results import RunResult, valid_runs

#: power at the margin below which a past-margin metric is "unclear"
RELIABLE = 0.8
#: the exit code of a comparison unclear and otherwise a pass. 0: measured at the defaults,
#: unchanged agents read "unclear" more often than 1 % (docs/statistics.md §4b), so a red
#: check would fail harmless PRs; the headline and the row still say it, never "No regression"
EXIT = 0
#: the most runs per task a suggestion goes up to
MAX_RUNS = 50

_NORMAL = NormalDist()


def _task_columns(base: np.ndarray, cand: np.ndarray, kind: str
                  ) -> tuple[np.ndarray, np.ndarray, float, float]:
    """(baseline values, candidate values, the task's level, its weight) for one task: a
    mean's samples, or a ratio's per-run rates with the baseline's mean denominator."""
    if kind == "ratio":
        def rates(a: np.ndarray) -> np.ndarray:
            den = a[:, 1]
            return np.where(den > 0, a[:, 0] / np.maximum(den, 1e-300), 0.0)
        return rates(base), rates(cand), 1.0, float(base[:, 1].mean()) if len(base) else 0.0
    return base[:, 0], cand[:, 0], float(base[:, 0].mean()) if len(base) else 0.0, 1.0


def _within_var(b: np.ndarray, c: np.ndarray) -> float | None:
    df = len(b) + len(c) - 2
    if df <= 0:
        return None
    ss = float(((b - b.mean()) ** 2).sum()) if len(b) else 0.0
    ss += float(((c - c.mean()) ** 2).sum()) if len(c) else 0.0
    return ss / df


def margin_power(tasks: Sequence[tuple[np.ndarray, np.ndarray]], kind: str, margin: float,
                 threshold: float, permutations: int,
                 runs: Sequence[tuple[int, int]] | None = None,
                 plan: Sequence[tuple[int, int, int] | None] | None = None) -> float | None:
    """The power of the metric's test against a change of exactly ``margin`` (module
    docstring). ``tasks``: per task, the baseline's and the PR's samples (a row per run, the
    metric's columns; runs per task may differ); ``runs``: the (baseline, PR) runs per task
    to compute it for (default: as observed); ``plan``: per task, (the baseline's passes, lo,
    hi) of the plan's range when the PR's runs were planned from them (the floor then counts
    only the labellings the plan allows; the spread's normal approximation is the
    unrestricted one). None when no task has two runs to measure the spread from."""
    shapes = list(runs) if runs is not None else [(len(b), len(c)) for b, c in tasks]
    cols = [_task_columns(b, c, kind) for b, c in tasks]
    # a task whose runs all measured the same adds a constant to every relabelling: the
    # labellings that count (the test's floor) are the other tasks' (a prompt too short to
    # cache on two of four tasks leaves the cache-hit test two tasks' labellings)
    keep = [np.ptp(np.concatenate([b, c])) > 1e-12 * max(1.0, abs(float(b.mean())))
            for b, c, _, _ in cols]
    moving = [s for s, k in zip(shapes, keep, strict=True) if k]
    moving_plan = None if plan is None else [p for p, k in zip(plan, keep, strict=True) if k]
    if not moving or (_stats.min_permutation_p(moving, permutations, moving_plan)
                      > threshold * (1 + 1e-9)):
        return 0.0
    var = [_within_var(b, c) for b, c, _, _ in cols]
    known = [(v, lvl) for v, (_, _, lvl, _) in zip(var, cols, strict=True) if v is not None]
    if not known:
        return None
    # a task with one run in all has no spread of its own: the others' relative spread
    cv2 = (sum(v for v, _ in known) / max(sum(lvl ** 2 for _, lvl in known), 1e-300)
           if kind == "mean" else sum(v for v, _ in known) / len(known))
    weights = np.array([w for *_, w in cols], dtype=float)
    weights = weights / weights.sum() if kind == "ratio" and weights.sum() > 0 else weights
    se2 = 0.0
    for (nb, nc), v, (_, _, lvl, _), w in zip(shapes, var, cols, weights, strict=True):
        s2 = v if v is not None else (cv2 * lvl ** 2 if kind == "mean" else cv2)
        se2 += (w ** 2) * s2 * (1 / nb + 1 / nc)
    shift = margin * (sum(lvl for _, _, lvl, _ in cols) if kind == "mean" else 1.0)
    if se2 <= 0:
        return 1.0 if shift > 0 else 0.0
    return _NORMAL.cdf(shift / math.sqrt(se2) - _NORMAL.inv_cdf(1 - threshold))


def runs_to_settle(tasks: Sequence[tuple[np.ndarray, np.ndarray]], kind: str, change: float,
                   threshold: float, permutations: int) -> int | None:
    """The fewest runs per task in both arms (a deeper baseline keeps its depth) at which
    :func:`margin_power` of a change of size ``change`` reaches :data:`RELIABLE`; None
    beyond :data:`MAX_RUNS`."""
    for k in range(1, MAX_RUNS + 1):
        shapes = [(max(len(b), k), k) for b, _ in tasks]
        p = margin_power(tasks, kind, change, threshold, permutations, shapes)
        if p is not None and p >= RELIABLE:
            return k
    return None


def _samples(runs: Sequence[RunResult], row: Metric) -> np.ndarray:
    width = 2 if row.kind == "ratio" else 1
    return np.array([row.sample(r) or (0.0,) * width for r in runs],
                    dtype=float).reshape(len(runs), width)


def _plan_of(b_valid: Mapping[str, Sequence[RunResult]],
             allowed: Mapping[str, tuple[int, int]] | None
             ) -> list[tuple[int, int, int] | None] | None:
    """Per task of ``b_valid``, (the baseline's passes, lo, hi) of the plan's range, or None
    where the plan did not read the task's outcomes; None without a plan."""
    if allowed is None:
        return None
    out: list[tuple[int, int, int] | None] = []
    for t, runs in b_valid.items():
        lo, hi = allowed.get(t, (0, len(runs)))
        out.append((sum(1 for r in runs if r.status == "passed"), lo, hi))
    return out


def unclear_metrics(metrics: Sequence[MetricResult], blind: Sequence[MetricName],
                    b_valid: Mapping[str, Sequence[RunResult]],
                    c_valid: Mapping[str, Sequence[RunResult]], *, permutations: int,
                    allowed: Mapping[str, tuple[int, int]] | None = None
                    ) -> dict[MetricName, tuple[float, int | None]]:
    """The gating metrics past their margin, not blocking, whose test could not reliably
    block a change of the margin's size: name → (power at the margin, runs per task that
    would settle it). ``b_valid`` / ``c_valid``: the compared tasks' valid runs;
    ``allowed``: the plan's range of baseline passes per task, if the PR's runs were planned
    from them."""
    plan = _plan_of(b_valid, allowed)
    out: dict[MetricName, tuple[float, int | None]] = {}
    for m in metrics:
        row = BY_NAME[m.name]
        if (row.kind == "pass" or not m.gating or not m.comparable or m.verdict != "ok"
                or not m.exceeds_margin or m.name in blind or m.margin is None
                or m.threshold is None):
            continue
        tasks = [(_samples(b_valid[t], row), _samples(c_valid[t], row)) for t in b_valid]
        power = margin_power(tasks, row.kind, m.margin, m.threshold, permutations, plan=plan)
        if power is None or power < RELIABLE:
            # settled: the test would block a change as large as the one seen (never less
            # than the margin) 80 % of the time
            seen = max(m.margin, abs(m.delta or 0.0))
            out[m.name] = (0.0 if power is None else power,
                           runs_to_settle(tasks, row.kind, seen, m.threshold, permutations))
    return out


def unclear_reason(m: MetricResult, power: float, runs: int | None, design: str) -> str:
    """One line: the metric, its change past the margin, the power and what would settle it."""
    row = BY_NAME[m.name]
    assert m.delta is not None and m.margin is not None
    change = (f"{m.delta * 100:+.1f} pts" if row.points else f"{m.delta * 100:+.0f} %")
    margin = (f"−{m.margin * 100:g} pts" if row.higher_is_better else f"+{m.margin * 100:g} %")
    settle = (f"≥ {runs} runs per task in both arms would settle it (block a change this "
              f"large {RELIABLE * 100:.0f} % of the time)" if runs is not None
              else f"more than {MAX_RUNS} runs per task, or more tasks, would settle it")
    p = f"p = {m.p_value:.2g}" if m.p_value is not None else "p n/a"
    return (f"{m.label} {change} ({p}) is past its {margin} margin, but with {design} its "
            f"test blocks a change of the margin's size only {power * 100:.0f} % of the time; "
            f"{settle}")


def with_unclear(metrics: list[MetricResult], resolution: Resolution | None,
                 b_runs: Mapping[str, list[RunResult]], c_runs: Mapping[str, list[RunResult]],
                 compared: Sequence[str], *, permutations: int,
                 allowed: Mapping[str, tuple[int, int]] | None = None
                 ) -> tuple[list[MetricResult], Resolution | None]:
    """The metrics past their margin whose test could not reliably block the margin marked
    "unclear", and the resolution saying so (what :func:`gate.compare.compare` calls);
    ``allowed`` as :func:`unclear_metrics` takes it."""
    if resolution is None:
        return metrics, resolution
    b_valid = {t: valid_runs(b_runs[t]) for t in compared}
    c_valid = {t: valid_runs(c_runs[t]) for t in compared}
    found = unclear_metrics(metrics, resolution.blind, b_valid, c_valid,
                            permutations=permutations, allowed=allowed)
    if not found:
        return metrics, resolution
    design = _resolution.design_text([(len(b_valid[t]), len(c_valid[t])) for t in compared])
    marked = [m.model_copy(update={"verdict": "unclear"}) if m.name in found else m
              for m in metrics]
    runs = [r for _, r in found.values()]
    return marked, resolution.model_copy(update={
        "unclear": list(found), "power_at_margin": {k: v[0] for k, v in found.items()},
        "unclear_runs": None if None in runs else max(r for r in runs if r is not None),
        "unclear_reasons": [unclear_reason(m, *found[m.name], design)
                            for m in marked if m.name in found]})
