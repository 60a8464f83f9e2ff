"""What a comparison could have detected: a gate that cannot say no never says yes.

Every test of the verdict is exact or a permutation test, so with few runs it has a floor: the
pass-rate test against a 3-run baseline with 3 runs of one task cannot go below p = 1/20 = 0.05
however badly the task fails, and a permutation test on that design has 20 labellings, so its
p-value is never below 0.05 either. Thresholds are 0.01 and 0.0015: such a comparison could not
block a task that collapses from 3/3 to 0/3, a seven-fold cost or a cache broken on every
request. Calling that "no regression" would be a silent pass.

:func:`resolution` works out, from the design alone (the runs each arm has per task, the
baseline's pass counts; never the candidate's outcomes), the smallest p-value each gating test
can reach and whether it is at or below its threshold. When one cannot, the comparison is
*blind* to it: a verdict that would have been a pass is inconclusive (exit 3), and the report
says which test, its floor, and how many runs per task (or tasks) would lift it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from gate.compare import _stats
from gate.compare._model import Comparison, MetricName, MetricResult, Resolution, TestReach
from gate.core.metrics import BY_NAME, PERMUTED

#: the most runs per task a suggested fix goes up to (beyond, add tasks)
MAX_SUGGESTED_RUNS = 50


def _effect(name: MetricName) -> str:
    return BY_NAME[name].effect


def _short(name: MetricName) -> str:
    return BY_NAME[name].short


def _pass_reach(b: np.ndarray, nb: np.ndarray, nc: np.ndarray, alpha: float,
                allowed: np.ndarray | None = None) -> tuple[float, float]:
    deep = _stats.is_deep(nb)
    return _stats.collapse_p(b, nb, nc, deep, allowed), alpha / 2 if deep else alpha


def _plan(b: np.ndarray, allowed: np.ndarray | None) -> list[tuple[int, int, int] | None] | None:
    """Per task, (the baseline's passes, lo, hi) of the plan's range: what the permutation
    floors count labellings with (gate/compare/_restricted.py); None without a plan."""
    if allowed is None:
        return None
    return [(int(x), int(lo), int(hi)) for x, (lo, hi) in zip(b.tolist(), allowed.tolist(),
                                                              strict=True)]


def _p(x: float) -> str:
    return f"{x:.2g}"


def resolution(b: np.ndarray, nb: np.ndarray, nc: np.ndarray, metrics: Sequence[MetricResult],
               *, alpha: float, metric_threshold: float, permutations: int,
               allowed: np.ndarray | None = None) -> Resolution:
    """What the compared tasks' design lets each gating metric detect (module docstring).

    ``b``, ``nb``, ``nc``: per compared task, the baseline's passes and valid runs and the
    candidate's valid runs (equal or not); ``allowed``: the plan's range of baseline passes
    per task when the candidate's runs were planned from them (the floors then count only
    the relabellings the plan allows). A metric that is not gating, not comparable or not
    measured (n/a) has no say; a rate's test (the cache-hit rate's) has none when the
    baseline's rate is below its margin (a drop that large is impossible: nothing to break,
    e.g. a prompt below the model's minimum cacheable length)."""
    by_name = {m.name: m for m in metrics}
    shapes = [(int(x), int(y)) for x, y in zip(nb.tolist(), nc.tolist(), strict=True)]
    tests: list[TestReach] = []
    pr = by_name.get("pass_rate")
    if pr is not None and pr.gating and len(b):
        if int(b.sum()) == 0:
            tests.append(TestReach(metric="pass_rate", min_p=None, threshold=None,
                                   reachable=True, effect=_effect("pass_rate"),
                                   note="the baseline passes no run: nothing to lose"))
        else:
            p, thr = _pass_reach(b, nb, nc, alpha, allowed)
            tests.append(TestReach(metric="pass_rate", min_p=p, threshold=thr,
                                   reachable=p <= thr * (1 + 1e-9),
                                   effect=_effect("pass_rate")))
    floor = _stats.min_permutation_p(shapes, permutations, _plan(b, allowed)) if shapes else 1.0
    for row in PERMUTED:
        name = row.name
        m = by_name.get(name)
        if m is None or not m.gating or not m.comparable or m.verdict == "n/a":
            continue
        if (row.kind == "ratio" and row.higher_is_better and m.margin is not None
                and m.baseline is not None and m.baseline < m.margin):
            tests.append(TestReach(
                metric=name, min_p=None, threshold=None, reachable=True, effect=row.effect,
                note=(f"the baseline's {row.label} is {m.baseline * 100:.1f} %, less "
                      f"than the {m.margin * 100:g} points a regression must lose: "
                      "nothing to break (a prompt below the model's minimum cacheable length "
                      "caches nothing)")))
            continue
        tests.append(TestReach(metric=name, min_p=floor, threshold=metric_threshold,
                               reachable=floor <= metric_threshold * (1 + 1e-9),
                               effect=row.effect))
    blind = [t.metric for t in tests if not t.reachable]
    runs, tasks = _fix(b, nb, nc, blind, alpha=alpha, metric_threshold=metric_threshold,
                       permutations=permutations, allowed=allowed) if blind else (None, None)
    return Resolution(detectable=not blind, statement=_statement(tests, blind, shapes, runs,
                                                                 tasks),
                      tests=tests, blind=blind, runs_per_task=runs, tasks=tasks,
                      fix=_fix_text(runs, tasks, shapes) if blind else None)


def _reaches(b: np.ndarray, nb: np.ndarray, nc: np.ndarray, blind: Sequence[MetricName], *,
             alpha: float, metric_threshold: float, permutations: int,
             allowed: np.ndarray | None = None) -> bool:
    shapes = [(int(x), int(y)) for x, y in zip(nb.tolist(), nc.tolist(), strict=True)]
    if "pass_rate" in blind:
        p, thr = _pass_reach(b, nb, nc, alpha, allowed)
        if p > thr * (1 + 1e-9):
            return False
    if any(m != "pass_rate" for m in blind):
        floor = _stats.min_permutation_p(shapes, permutations, _plan(b, allowed))
        return floor <= metric_threshold * (1 + 1e-9)
    return True


def _fix(b: np.ndarray, nb: np.ndarray, nc: np.ndarray, blind: Sequence[MetricName], *,
         alpha: float, metric_threshold: float, permutations: int,
         allowed: np.ndarray | None = None) -> tuple[int | None, int | None]:
    """The fewest runs per task (the same in both arms, the baseline's pass rates kept: a
    design no plan shaped, so no plan's range), and the fewest tasks (at today's runs per
    task, tasks like today's, each with its plan's range), that reach every blind test's
    threshold; None where no such number up to the limits exists."""
    rates = b / np.maximum(nb, 1)
    def reaches(b_: np.ndarray, nb_: np.ndarray, nc_: np.ndarray,
                allowed_: np.ndarray | None = None) -> bool:
        return _reaches(b_, nb_, nc_, blind, alpha=alpha, metric_threshold=metric_threshold,
                        permutations=permutations, allowed=allowed_)

    runs = None
    for k in range(1, MAX_SUGGESTED_RUNS + 1):
        kk = np.full(len(b), k, dtype=np.int64)
        if reaches(np.rint(rates * k).astype(np.int64), kk, kk):
            runs = k
            break
    tasks = None
    for n in range(len(b) + 1, 20 * max(1, len(b)) + 1):
        idx = np.arange(n) % len(b)
        if reaches(b[idx], nb[idx], nc[idx], None if allowed is None else allowed[idx]):
            tasks = n
            break
    return runs, tasks


def _fix_text(runs: int | None, tasks: int | None, shapes: Sequence[tuple[int, int]]) -> str:
    ways = []
    if runs is not None:
        ways.append(f"≥ {runs} runs per task in both arms ([suite] replications = {runs} and a "
                    "baseline as deep; each refresh of main pools more)")
    if tasks is not None:
        ways.append(f"≥ {tasks} tasks like these")
    if not ways:
        return "add tasks and runs per task"
    return " or ".join(ways)


def design_text(shapes: Sequence[tuple[int, int]]) -> str:
    """The design in words: "3 runs per task against a 20-run baseline on 4 tasks"; runs that
    differ between tasks as their range and mean ("2–6 runs per task (mean 3.4)")."""
    return _design(shapes)


def runs_text(shapes: Sequence[tuple[int, int]]) -> str:
    """The runs in words, without the tasks: "3 runs per task against a 20-run baseline",
    "2–6 runs per task (mean 3.4) against a 12–20-run baseline (mean 17.5)"."""
    cand, cand_mean = _spread([c for _, c in shapes])
    base, base_mean = _spread([b for b, _ in shapes])
    runs = f"{cand} run{'s' if cand != '1' else ''} per task{cand_mean}"
    return f"{runs} against a {base}-run baseline{base_mean}"


def _spread(values: Sequence[int]) -> tuple[str, str]:
    """("3", "") when every task has the same; ("2–6", " (mean 3.4)") when they differ."""
    if not values:
        return "0", ""
    lo, hi = min(values), max(values)
    if lo == hi:
        return str(lo), ""
    return f"{lo}–{hi}", f" (mean {float(np.mean(values)):.1f})"


def _design(shapes: Sequence[tuple[int, int]]) -> str:
    n = len(shapes)
    return f"{runs_text(shapes)} on {n} task{'s' if n != 1 else ''}"


def _statement(tests: Sequence[TestReach], blind: Sequence[MetricName],
               shapes: Sequence[tuple[int, int]], runs: int | None, tasks: int | None) -> str:
    groups: dict[tuple[float, float], list[TestReach]] = {}
    for t in tests:
        if (t.metric in blind or not blind) and t.min_p is not None and t.threshold is not None:
            groups.setdefault((t.min_p, t.threshold), []).append(t)
    parts = [f"{', '.join(_short(t.metric) for t in ts)} p ≥ {_p(mp)} (blocks at ≤ {thr:g})"
             for (mp, thr), ts in groups.items()]
    if not blind:
        notes = "".join(f" {_short(t.metric)[:1].upper()}{_short(t.metric)[1:]}: {t.note}."
                        for t in tests if t.note)
        return (f"Resolution: with {_design(shapes)}, every gating test could have blocked"
                + (f": the smallest reachable {'; '.join(parts)}." if parts else ".") + notes)
    return (f"this comparison could not have detected a regression: with {_design(shapes)}, "
            f"even the most extreme outcome (every run failing, cost doubled, the cache "
            f"broken) gives {'; '.join(parts)}. It needs {_fix_text(runs, tasks, shapes)}")


def resolution_with_runs(c: Comparison, candidate_runs: int | Mapping[str, int], *,
                         allowed: Mapping[str, tuple[int, int]] | None = None
                         ) -> Resolution | None:
    """What ``c``'s compared tasks could detect if the candidate had ``candidate_runs`` valid
    runs of each (one count for every task, or each task's own: a plan's
    ``RunPlan.through(looks)``), at the thresholds ``c`` was judged with (its settings) and
    against the same baseline: a design question (the sequential looks size their second look
    with it), never one of the candidate's outcomes. ``allowed``: when those runs are a plan
    made from this baseline's outcomes, its ranges (``RunPlan.allowed()``): the floors are
    then the tests' given the plan, as the verdict's are (docs/statistics.md §2a)."""
    tasks = [t for t in c.tasks if t.status == "compared"]
    if not tasks:
        return None
    if not isinstance(candidate_runs, int):
        if missing := [t.task for t in tasks if t.task not in candidate_runs]:
            raise ValueError(f"no runs given for the compared task {missing[0]}")
        per_task = [int(candidate_runs[t.task]) for t in tasks]
    else:
        per_task = [candidate_runs] * len(tasks)
    b = np.array([t.baseline_passed for t in tasks], dtype=np.int64)
    nb = np.array([t.baseline_runs for t in tasks], dtype=np.int64)
    nc = np.array(per_task, dtype=np.int64)
    bounds = None
    if allowed is not None:
        bounds = np.array([allowed.get(t.task, (0, t.baseline_runs)) for t in tasks],
                          dtype=np.int64).reshape(-1, 2)
    s = c.settings
    return resolution(b, nb, nc, c.metrics, alpha=float(s["alpha"]),  # type: ignore[arg-type]
                      metric_threshold=float(s["metric_alpha"]) / 2,  # type: ignore[arg-type]
                      permutations=int(s["permutations"]),  # type: ignore[call-overload]
                      allowed=bounds)
