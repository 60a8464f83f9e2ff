"""A skill's effect: two conditions of one results file (``gate run --condition``), paired by
task (docs/skills.md, docs/statistics.md).

The conditions of a run share its tasks and its schedule (their runs are interleaved), so each
task is its own stratum and the comparison uses only tasks both conditions ran:

- **pass rate**: Δ = mean over tasks of (rate under B − rate under A), with the gate's
  stratified Newcombe interval; significance by the gate's exact stratified (conditional)
  test, two-sided: 2 · min(P(Σ passes of B ≤ observed), P(Σ passes of B ≥ observed)), each
  side exact given every task's total passes.
- **turns, cost, tokens, prompt tokens per request, wall time**: the suite-level ratio
  Σ_i mean_i^B / Σ_i mean_i^A; its interval by a bootstrap stratified by task and condition
  (runs resampled within each), its two-sided p-value by the gate's within-task permutation
  (condition labels shuffled inside each task).
- **what the skill adds to every prompt**: prompt tokens (input + cache writes + cache reads)
  per model request under each condition, and, when the run recorded it, the size of the
  skills block the agent put in its system prompt.

Several treatments against one reference share α (Bonferroni): each comparison is judged at
α / m and its interval at level 1 − (1 − ci_level) / m.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict

from gate._files import printable
from gate.compare import _stats
from gate.core.config import GateSettings
from gate.core.results import Results, RunResult, runs_by_task, valid_runs
from gate.errors import BadInput

EffectVerdict = Literal["helps", "hurts", "no significant effect", "not measured"]

BOOTSTRAP = 4000
FEW_RUNS = 5  # fewer valid runs of a task under a condition: the bootstrap is too narrow
PERMUTATIONS = 4000
SEED = 20261201


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True)


class ConditionRow(_Frozen):
    """One condition over the whole file: the per-condition table (a leaderboard)."""

    condition: str
    tasks: int
    runs: int  # valid runs (infra errors are counted apart, as in the gate)
    errors: int
    passed: int
    pass_rate: float | None  # task-equal weight, over the tasks it ran
    mean_turns: float | None
    mean_cost_usd: float | None
    mean_tokens: float | None
    mean_prompt_per_request: float | None
    mean_duration_s: float | None
    skills: list[str]  # the skills its runs had (the union over tasks)


class MetricEffect(_Frozen):
    """One resource metric: per-task-run means under A and B (tasks equally weighted), the
    ratio B/A − 1 with its interval and two-sided p-value."""

    name: str
    label: str
    a: float
    b: float
    change: float  # relative: 0.25 = +25 %
    ci_low: float
    ci_high: float
    p_value: float
    significant: bool


class TaskEffect(_Frozen):
    task: str
    a_passed: int
    a_runs: int
    b_passed: int
    b_runs: int
    delta: float | None  # pass-rate difference, B − A
    a_turns: float | None
    b_turns: float | None
    a_cost_usd: float | None
    b_cost_usd: float | None
    b_skills: list[str]


class Effect(_Frozen):
    """Condition B against condition A (the reference) in one results file."""

    a: str
    b: str
    tasks: int  # tasks both ran (with a valid run under each)
    only_one: list[str]  # tasks one of the two did not run (not applicable) or all errors
    delta: float | None
    ci_low: float | None
    ci_high: float | None
    ci_level: float
    p_value: float | None
    alpha: float  # the level this comparison is judged at (after the Bonferroni split)
    significant: bool
    verdict: EffectVerdict
    metrics: list[MetricEffect]
    skills_block_bytes: dict[str, int] | None  # per condition, when recorded (builtin agent)
    per_task: list[TaskEffect]
    summary: str


class EffectReport(_Frozen):
    results: str
    model: str
    reference: str
    conditions: list[ConditionRow]
    effects: list[Effect]
    comparisons: int
    notes: list[str]


_METRICS = (  # (name, label, column)
    ("turns", "turns", 0),
    ("cost", "cost (USD)", 1),
    ("tokens", "tokens", 2),
    ("prompt_per_request", "prompt tokens per request", 3),
    ("duration", "wall time (s)", 4),
)


def _tokens(r: RunResult) -> float:
    u = r.usage
    return float(u.input_tokens + u.output_tokens + u.cache_creation_input_tokens
                 + u.cache_read_input_tokens)


def _prompt_per_request(r: RunResult) -> float:
    u = r.usage
    prompt = u.input_tokens + u.cache_creation_input_tokens + u.cache_read_input_tokens
    return prompt / r.turns if r.turns else 0.0


def _row(r: RunResult) -> list[float]:
    # a run that did not record its duration (a hand-made file): not a number, never 0
    duration = r.duration_s if r.duration_s is not None else float("nan")
    return [float(r.turns), r.cost_usd, _tokens(r), _prompt_per_request(r), duration]


def _mean(xs: Sequence[float]) -> float | None:
    return float(np.mean(xs)) if xs else None


def _by(results: Results) -> dict[str, dict[str, list[RunResult]]]:
    """condition → task → runs."""
    out: dict[str, list[RunResult]] = {}
    for r in results.runs:
        if r.condition is not None:
            out.setdefault(r.condition, []).append(r)
    return {cond: runs_by_task(runs) for cond, runs in out.items()}


def _record(results: Results) -> dict[str, Any]:
    rec = (results.model_extra or {}).get("conditions")
    return rec if isinstance(rec, dict) else {}


def _skills_of(rec: dict[str, Any], condition: str, task: str | None = None) -> list[str]:
    sets = (rec.get(condition) or {}).get("skills") or {}
    if not isinstance(sets, dict):
        return []
    if task is not None:
        got = sets.get(task) or []
        return [str(s) for s in got] if isinstance(got, list) else []
    return sorted({str(s) for v in sets.values() if isinstance(v, list) for s in v})


def condition_table(results: Results) -> list[ConditionRow]:
    """Every condition of the file, in the order the run named them."""
    by = _by(results)
    rec = _record(results)
    order = list((results.schedule.conditions if results.schedule else None) or [])
    order += sorted(c for c in by if c not in order)
    rows = []
    for c in order:
        tasks = by.get(c, {})
        runs = [r for rs in tasks.values() for r in rs]
        valid = valid_runs(runs)
        rates = [sum(r.status == "passed" for r in v) / len(v)
                 for v in (valid_runs(rs) for rs in tasks.values()) if v]
        rows.append(ConditionRow(
            condition=c, tasks=len(tasks), runs=len(valid), errors=len(runs) - len(valid),
            passed=sum(r.status == "passed" for r in valid),
            pass_rate=_mean(rates), mean_turns=_mean([float(r.turns) for r in valid]),
            mean_cost_usd=_mean([r.cost_usd for r in valid]),
            mean_tokens=_mean([_tokens(r) for r in valid]),
            mean_prompt_per_request=_mean([_prompt_per_request(r) for r in valid if r.turns]),
            mean_duration_s=_mean([r.duration_s for r in valid if r.duration_s is not None]),
            skills=_skills_of(rec, c)))
    return rows


def _bootstrap_ratio(a: list[np.ndarray], b: list[np.ndarray], level: float,
                     rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """(low, high) per column of Σ_i mean_i^B / Σ_i mean_i^A − 1, runs resampled within
    each (task, condition)."""
    cols = a[0].shape[1]
    sum_a, sum_b = np.zeros((BOOTSTRAP, cols)), np.zeros((BOOTSTRAP, cols))
    for xa, xb in zip(a, b, strict=True):
        for x, acc in ((xa, sum_a), (xb, sum_b)):
            idx = rng.integers(0, len(x), size=(BOOTSTRAP, len(x)))
            acc += x[idx].mean(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(sum_a > 0, sum_b / np.maximum(sum_a, 1e-300) - 1.0, 0.0)
    tail = (1 - level) / 2
    return np.quantile(ratio, tail, axis=0), np.quantile(ratio, 1 - tail, axis=0)


def _permutation_p(a: list[np.ndarray], b: list[np.ndarray]) -> np.ndarray:
    """Two-sided p per column: |log(Σ mean^B / Σ mean^A)| at least as large as observed, over
    relabellings of the condition labels within each task (the gate's permutation engine)."""
    tasks = [_stats.TaskSamples(baseline=x, candidate=y) for x, y in zip(a, b, strict=True)]
    cols = a[0].shape[1]
    sum_a = np.zeros((PERMUTATIONS + 1, cols))
    sum_b = np.zeros((PERMUTATIONS + 1, cols))
    for base, cand in _stats.relabelled_arm_sums(tasks, SEED, PERMUTATIONS):
        sum_a += base
        sum_b += cand
    with np.errstate(divide="ignore", invalid="ignore"):
        stat = np.abs(np.log(np.maximum(sum_b, 1e-300) / np.maximum(sum_a, 1e-300)))
    obs = stat[0]
    tol = _stats._REL_TOL * np.maximum(1.0, np.abs(obs))
    hits = (stat[1:] >= obs - tol).sum(axis=0)
    p = (1 + hits) / (PERMUTATIONS + 1)
    both_zero = (sum_a[0] <= 0) & (sum_b[0] <= 0)
    return np.where(both_zero, 1.0, p)


def effect(results: Results, a: str, b: str, settings: GateSettings,
           comparisons: int = 1) -> Effect:
    """Condition ``b`` against the reference ``a`` (both must be in ``results``)."""
    by = _by(results)
    rec = _record(results)
    alpha = settings.alpha / comparisons
    level = 1 - (1 - settings.ci_level) / comparisons
    ta, tb = by.get(a, {}), by.get(b, {})
    shared = sorted(t for t in set(ta) & set(tb) if valid_runs(ta[t]) and valid_runs(tb[t]))
    only = sorted((set(ta) | set(tb)) - set(shared))
    per_task = []
    for t in sorted(set(ta) | set(tb)):
        ra, rb = valid_runs(ta.get(t, [])), valid_runs(tb.get(t, []))
        sa = sum(r.status == "passed" for r in ra)
        sb = sum(r.status == "passed" for r in rb)
        per_task.append(TaskEffect(
            task=t, a_passed=sa, a_runs=len(ra), b_passed=sb, b_runs=len(rb),
            delta=sb / len(rb) - sa / len(ra) if ra and rb else None,
            a_turns=_mean([float(r.turns) for r in ra]),
            b_turns=_mean([float(r.turns) for r in rb]),
            a_cost_usd=_mean([r.cost_usd for r in ra]),
            b_cost_usd=_mean([r.cost_usd for r in rb]),
            b_skills=_skills_of(rec, b, t)))
    block = _block_bytes(rec, (a, b), shared)
    if not shared:
        return Effect(a=a, b=b, tasks=0, only_one=only, delta=None, ci_low=None, ci_high=None,
                      ci_level=level, p_value=None, alpha=alpha, significant=False,
                      verdict="not measured", metrics=[], skills_block_bytes=block,
                      per_task=per_task,
                      summary=f"{b} vs {a}: no task has valid runs under both")
    va = [valid_runs(ta[t]) for t in shared]
    vb = [valid_runs(tb[t]) for t in shared]
    pa = np.array([sum(r.status == "passed" for r in v) for v in va], dtype=np.int64)
    na = np.array([len(v) for v in va], dtype=np.int64)
    pb = np.array([sum(r.status == "passed" for r in v) for v in vb], dtype=np.int64)
    nb = np.array([len(v) for v in vb], dtype=np.int64)
    delta, lo, hi = _stats.pass_rate_ci(pa, na, pb, nb, level)
    p_down = float(_stats.sum_test(pa, na, pb, nb)[0])  # B passes as few as observed, or fewer
    p_up = float(_stats.sum_test(pb, nb, pa, na)[0])  # A as few: B as many, or more
    p = min(1.0, 2 * min(p_down, p_up))
    significant = p <= alpha
    verdict: EffectVerdict = ("no significant effect" if not significant
                              else "helps" if delta > 0 else "hurts")
    xa = [np.array([_row(r) for r in v], dtype=np.float64) for v in va]
    xb = [np.array([_row(r) for r in v], dtype=np.float64) for v in vb]
    rng = np.random.default_rng(SEED)
    low, high = _bootstrap_ratio(xa, xb, level, rng)
    pvals = _permutation_p(xa, xb)
    n = len(shared)
    mean_a = sum(x.mean(axis=0) for x in xa) / n
    mean_b = sum(x.mean(axis=0) for x in xb) / n
    metrics = []
    for name, label, col in _METRICS:
        ma, mb = float(mean_a[col]), float(mean_b[col])
        metrics.append(MetricEffect(
            name=name, label=label, a=ma, b=mb, change=mb / ma - 1.0 if ma > 0 else 0.0,
            ci_low=float(low[col]), ci_high=float(high[col]), p_value=float(pvals[col]),
            significant=bool(pvals[col] <= alpha)))
    summary = (f"{b} vs {a} on {n} task{'s' if n != 1 else ''}: pass rate "
               f"{delta * 100:+.1f} points ({level * 100:g} % CI {lo * 100:+.1f} to "
               f"{hi * 100:+.1f}, p = {_p(p)}): {verdict}")
    return Effect(a=a, b=b, tasks=n, only_one=only, delta=delta, ci_low=lo, ci_high=hi,
                  ci_level=level, p_value=p, alpha=alpha, significant=significant,
                  verdict=verdict, metrics=metrics, skills_block_bytes=block,
                  per_task=per_task, summary=summary)


def _block_bytes(rec: dict[str, Any], conditions: Sequence[str],
                 tasks: Sequence[str]) -> dict[str, int] | None:
    """Mean size of the skills block in the system prompt per condition over ``tasks``, when
    the run recorded it."""
    out = {}
    for c in conditions:
        sizes = (rec.get(c) or {}).get("skills_block_bytes")
        if not isinstance(sizes, dict):
            return None
        got = [int(sizes[t]) for t in tasks if isinstance(sizes.get(t), int)]
        if not got:
            return None
        out[c] = round(sum(got) / len(got))
    return out


def _p(p: float) -> str:
    return f"{p:.2g}" if p >= 0.001 else "< 0.001"


def effects(results: Results, conditions: Sequence[str], settings: GateSettings,
            where: str = "results") -> EffectReport:
    """The first of ``conditions`` is the reference; every other one is compared with it."""
    names = list(dict.fromkeys(conditions))
    if len(names) < 2:
        raise BadInput("--conditions: name at least two conditions, the reference first "
                       "(e.g. control,target)")
    have = {r.condition for r in results.runs if r.condition is not None}
    for c in names:
        if c not in have:
            listed = ", ".join(sorted(have)) or "none: run `gate run --condition NAME`"
            raise BadInput(f"{where}: no runs under condition {printable(c)!r} (conditions "
                           f"in the file: {listed})")
    m = len(names) - 1
    notes = []
    fewest = min((len(valid_runs(rs)) for c in names for rs in _by(results).get(c, {}).values()),
                 default=0)
    if fewest < FEW_RUNS:
        notes.append(f"as few as {fewest} valid run{'s' if fewest != 1 else ''} of a task "
                     "under a condition: the bootstrap intervals of turns, cost, tokens and "
                     "time understate the uncertainty (trust their permutation p-values); "
                     "run more replications (-k)")
    if results.interrupted is not None:
        notes.append(results.interruption_note() or "the run was interrupted")
    if m > 1:
        notes.append(f"{m} comparisons with {names[0]}: each judged at α = "
                     f"{settings.alpha:g} / {m} (Bonferroni)")
    return EffectReport(
        results=str(where), model=results.model, reference=names[0],
        conditions=condition_table(results),
        effects=[effect(results, names[0], b, settings, m) for b in names[1:]],
        comparisons=m, notes=notes)


def conditions_only_reason(baseline: Results, candidate: Results) -> str | None:
    """What the baseline gate says of arms whose runs were all under a skill condition
    (``gate run --condition``): it compares the runs with no condition, and they have none
    (the files as ``judge`` hands them to ``compare``: their condition runs left out, their
    schedule naming the conditions). None when neither arm is such."""
    arms = [(who, arm.schedule.conditions) for who, arm in (("this run", candidate),
                                                            ("the baseline", baseline))
            if arm.schedule is not None and arm.schedule.conditions and not arm.runs]
    if not arms:
        return None
    who = " and ".join(w for w, _ in arms)
    named = list(dict.fromkeys(c for _, conditions in arms for c in conditions or []))
    # before the ": ", the why's short reason (gate/compare/_why.py)
    return (f"{who} {'hold' if len(arms) > 1 else 'holds'} only skill-condition runs "
            f"({', '.join(named)}): the baseline gate compares runs with no condition; run "
            "without --condition, or compare the conditions with each other (gate compare "
            f"RESULTS --conditions {','.join(named)}; docs/skills.md)")
