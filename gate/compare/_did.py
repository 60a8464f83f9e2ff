"""The skill-effect check: did a skill stop helping? (docs/statistics.md §9)

A skill's *effect* on a task is its pass rate under the ``target`` condition (the task's target
skill offered) minus its pass rate under ``control`` (no skills), both measured in the same run.
A pull request that touches a skill is blocked when that effect **fell** significantly against
the baseline's effect for the same conditions: a difference-in-differences,

    (PR target − PR control) − (baseline target − baseline control),

which is blind to whatever moves both conditions alike (the provider's bad hour, a change of
the prompt both share) and sees what the skill itself lost.

**The test: exact, stratified by task, paired by replication.** A run's conditions run side by
side (``gate run --condition``: the conditions of one (task, replication) are scheduled
together), so each (task, replication) gives a *pair* and its difference
D = pass(target) − pass(control) ∈ {−1, 0, +1}. If nothing changed, the PR's pairs of a task
are exchangeable with the baseline's: given the task's pooled multiset of differences (n₊ ones,
n₀ zeros, n₋ minus-ones), the sum of the PR's k differences is the sum of k draws without
replacement (multivariate hypergeometric), whatever the task's unknown probabilities. The
statistic S = Σ_tasks Σ_PR pairs D is exactly distributed as the convolution of those per-task
laws, and p = P(S ≤ observed). This is the sum test of §2 (which it becomes with one condition)
applied to differences; like it, the false-block rate is ≤ the test's level by construction.
Pairing gains power whenever the two conditions of a replication are positively correlated
(same minutes of the provider, and in the simulator the same draw) and costs nothing when they
are not.

Pairs are matched by (refresh, replication): a pooled baseline's runs keep the replication they
had in their refresh (``source_replication``, :mod:`gate.pool.baseline`), so a target run is only
ever paired with the control run of its own refresh. Runs without a partner (an infra error, a
condition missing in a refresh) are left out of the test but counted in the rates.

**The intervals** are for reading: each arm's effect gets the stratified Newcombe interval of
§2 (target vs control as the two arms), and the change the MOVER combination of the two; the
test decides. **α** is shared with the pass-rate test (:func:`gate.compare.judge`).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from functools import lru_cache
from math import comb

import numpy as np

from gate.compare import _stats
from gate.compare._model import SkillConditionRow, SkillEffect, SkillEffectTask
from gate.core.config import STANDARD_CONDITION_NAMES
from gate.core.results import Results, RunResult, valid_runs

TARGET, CONTROL = "target", "control"

PairKey = tuple[str | None, int]  # (refresh, replication in that refresh)


def pair_key(run: RunResult) -> PairKey:
    """Where a run sits among its refresh's replications: a pooled run keeps the replication
    it had in its own results file (``source_replication``), an unpooled run has its own."""
    extra = run.model_extra or {}
    source = extra.get("source_replication")
    rep = source if isinstance(source, int) and not isinstance(source, bool) else run.replication
    return run.refresh, rep


def _by_condition(results: Results) -> dict[tuple[str, str], list[RunResult]]:
    """Runs of the file's tasks that ran under a named condition, by (task, condition)."""
    out: dict[tuple[str, str], list[RunResult]] = defaultdict(list)
    for r in results.runs:
        if r.condition is not None and r.task in results.suite.tasks:
            out[(r.task, r.condition)].append(r)
    return out


def conditions_of(results: Results) -> set[str]:
    """The conditions the file's runs ran under."""
    return {r.condition for r in results.runs if r.condition is not None}


def has_skill_effect(results: Results) -> bool:
    """Whether the file has runs of both conditions the check compares."""
    return {TARGET, CONTROL} <= conditions_of(results)


def differences(target: Iterable[RunResult], control: Iterable[RunResult]) -> list[int]:
    """pass(target) − pass(control) of every (refresh, replication) with a valid run of both."""
    t = {pair_key(r): r for r in target if r.valid}
    c = {pair_key(r): r for r in control if r.valid}
    return [int(t[k].status == "passed") - int(c[k].status == "passed")
            for k in sorted(t.keys() & c.keys(), key=repr)]


@lru_cache(maxsize=4096)
def _task_pmf(plus: int, zero: int, minus: int, k: int) -> tuple[float, ...]:
    """The law of the sum of ``k`` draws without replacement from ``plus`` ones, ``zero``
    zeros and ``minus`` minus-ones, on −k … k (index s + k)."""
    weights = [0] * (2 * k + 1)
    for x in range(min(plus, k) + 1):
        for y in range(min(minus, k - x) + 1):
            z = k - x - y
            if z <= zero:
                weights[x - y + k] += comb(plus, x) * comb(minus, y) * comb(zero, z)
    total = comb(plus + zero + minus, k)
    return tuple(w / total for w in weights)


def did_test(candidate: Sequence[Sequence[int]],
             baseline: Sequence[Sequence[int]]) -> tuple[float, list[float]]:
    """One-sided exact p-value that the candidate's differences are lower, stratified by task
    (``candidate[i]``, ``baseline[i]``: task i's pair differences), and each task's own."""
    dist = np.ones(1)
    offset = 0
    observed = 0
    per_task: list[float] = []
    for cd, bd in zip(candidate, baseline, strict=True):
        k = len(cd)
        if k == 0:
            continue
        pooled = [*cd, *bd]
        pmf = np.array(_task_pmf(pooled.count(1), pooled.count(0), pooled.count(-1), k))
        s = int(sum(cd))
        per_task.append(float(min(1.0, pmf[: s + k + 1].sum())))
        dist = np.convolve(dist, pmf)
        offset -= k
        observed += s
    if offset == 0:
        return 1.0, per_task
    return float(min(1.0, dist[: observed - offset + 1].sum())), per_task


def _rate(runs: Sequence[RunResult]) -> tuple[int, int]:
    valid = valid_runs(runs)
    return sum(1 for r in valid if r.status == "passed"), len(valid)


def _same_task(baseline: Results, candidate: Results, task: str) -> bool:
    b, c = baseline.suite.tasks.get(task), candidate.suite.tasks.get(task)
    return b is not None and c is not None and b.digest == c.digest


def _mover(d_c: float, lo_c: float, hi_c: float, d_b: float, lo_b: float,
           hi_b: float) -> tuple[float, float, float]:
    """The difference of two independent estimates with its MOVER interval (Zou & Donner)."""
    d = d_c - d_b
    low = d - float(np.hypot(d_c - lo_c, hi_b - d_b))
    high = d + float(np.hypot(hi_c - d_c, d_b - lo_b))
    return d, max(-2.0, low), min(2.0, high)


def _counts(runs: Mapping[tuple[str, str], list[RunResult]], tasks: Sequence[str],
            cond: str) -> tuple[np.ndarray, np.ndarray]:
    pairs = [_rate(runs[(t, cond)]) for t in tasks]
    return (np.array([p for p, _ in pairs], dtype=np.int64),
            np.array([n for _, n in pairs], dtype=np.int64))


def _row(condition: str, tasks: list[str],
         b_runs: Mapping[tuple[str, str], list[RunResult]] | None,
         c_runs: Mapping[tuple[str, str], list[RunResult]], level: float,
         control: str) -> SkillConditionRow:
    """One condition's row; ``b_runs`` None: the baseline does not hold it (shown, not
    compared)."""
    row: dict[str, object] = {"condition": condition, "tasks": len(tasks),
                              "gating": condition == TARGET and b_runs is not None}
    effects: dict[str, tuple[float, float, float]] = {}
    for who, runs in (("baseline", b_runs), ("candidate", c_runs)):
        if runs is None:
            continue
        x, nx = _counts(runs, tasks, condition)
        row.update({f"{who}_passed": int(x.sum()), f"{who}_runs": int(nx.sum()),
                    f"{who}_rate": float(np.mean(x / nx))})
        if condition != control:
            x0, n0 = _counts(runs, tasks, control)
            d, lo, hi = effects[who] = _stats.pass_rate_ci(x0, n0, x, nx, level)
            row.update({f"{who}_effect": d, f"{who}_ci_low": lo, f"{who}_ci_high": hi})
    if len(effects) == 2:
        d, lo, hi = _mover(*effects["candidate"], *effects["baseline"])
        row.update(change=d, change_ci_low=lo, change_ci_high=hi)
    return SkillConditionRow.model_validate(row)


def _order(conditions: Iterable[str], control: str) -> list[str]:
    rank = {c: i for i, c in enumerate(STANDARD_CONDITION_NAMES)}
    rest = sorted((c for c in conditions if c != control),
                  key=lambda c: (rank.get(c, len(rank)), c))
    return [control, *rest]


def skill_effect(baseline: Results, candidate: Results, *, alpha: float,
                 ci_level: float = 0.95, target: str = TARGET,
                 control: str = CONTROL) -> SkillEffect | None:
    """The skill-effect check of ``candidate`` against ``baseline`` at level ``alpha`` (this
    test's share of α), or None when the candidate ran no ``control`` condition (nothing to
    measure an effect against). When the baseline lacks the two conditions, the candidate's
    conditions are shown and nothing is tested."""
    b_runs, c_runs = _by_condition(baseline), _by_condition(candidate)
    mine = conditions_of(candidate)
    if control not in mine or len(mine) < 2:
        return None
    compared = {target, control} <= conditions_of(baseline) and target in mine
    shared = (conditions_of(baseline) & mine) if compared else mine
    rule = (f"one-sided exact test on (target − control) pairs, stratified by task: blocks at "
            f"p ≤ {alpha:g}")

    def valid(runs: Mapping[tuple[str, str], list[RunResult]], task: str, cond: str) -> bool:
        return any(r.valid for r in runs.get((task, cond), []))

    c_tasks = sorted({t for t, _ in c_runs})
    tasks = ([t for t in c_tasks if (t, control) in b_runs and _same_task(baseline, candidate, t)]
             if compared else c_tasks)
    arms = (b_runs, c_runs) if compared else (c_runs,)
    rows: list[SkillConditionRow] = []
    for cond in _order(shared, control):
        have = [t for t in tasks if all(valid(runs, t, x) for runs in arms
                                        for x in {cond, control})]
        if have:
            rows.append(_row(cond, have, b_runs if compared else None, c_runs, ci_level,
                             control))
    if not compared:
        why = (f"this run has no {target} condition" if target not in mine else
               f"the baseline holds no {target} and {control} runs")
        return SkillEffect(
            target=target, control=control, conditions=rows, tasks=[], threshold=alpha,
            rule=rule, note=(f"{why}, so the skill's effect is shown, not tested; the main "
                             "refresh keeps the conditions it runs"))
    per_task: list[SkillEffectTask] = []
    cd_all: list[list[int]] = []
    bd_all: list[list[int]] = []
    for t in tasks:
        cd = differences(c_runs.get((t, target), []), c_runs.get((t, control), []))
        bd = differences(b_runs.get((t, target), []), b_runs.get((t, control), []))
        if not cd or not bd:
            continue
        cd_all.append(cd)
        bd_all.append(bd)
        per_task.append(SkillEffectTask(
            task=t, baseline_pairs=len(bd), candidate_pairs=len(cd),
            baseline_effect=sum(bd) / len(bd), candidate_effect=sum(cd) / len(cd),
            p_value=1.0))
    gating = next((r for r in rows if r.condition == target), None)
    if not per_task or gating is None:
        return SkillEffect(
            target=target, control=control, conditions=rows, tasks=[], threshold=alpha,
            rule=rule, note=(f"no task has {target} and {control} runs of the same "
                             "replication in both arms: the skill's effect was not tested"))
    p, p_tasks = did_test(cd_all, bd_all)
    per_task = [t.model_copy(update={"p_value": q})
                for t, q in zip(per_task, p_tasks, strict=True)]
    significant = p <= alpha
    return SkillEffect(
        target=target, control=control, conditions=rows, tasks=per_task,
        baseline_effect=gating.baseline_effect, candidate_effect=gating.candidate_effect,
        change=gating.change, change_ci_low=gating.change_ci_low,
        change_ci_high=gating.change_ci_high, ci_level=ci_level, p_value=p, threshold=alpha,
        significant=significant, blocks=significant, rule=rule)


def _points(x: float | None) -> str:
    return "n/a" if x is None else f"{x * 100:+.1f} pts".replace("-", "−")


def skill_effect_reason(s: SkillEffect) -> str:
    """One line for the verdict's reasons: the effect's drop, with its numbers."""
    p = "p < 0.0001" if (s.p_value or 0) < 1e-4 else f"p = {s.p_value:.2g}"
    ci = ""
    if s.change_ci_low is not None and s.change_ci_high is not None and s.ci_level:
        ci = (f", {s.ci_level * 100:g} % CI {s.change_ci_low * 100:+.1f} to "
              f"{s.change_ci_high * 100:+.1f}").replace("-", "−")
    return (f"skill effect ({s.target} − {s.control}) {_points(s.baseline_effect)} → "
            f"{_points(s.candidate_effect)} (change {_points(s.change)}{ci}, {p})")
