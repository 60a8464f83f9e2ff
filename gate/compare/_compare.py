"""The pure comparison of a candidate's results with the baseline, and the verdict.

No I/O: two ``Results`` and the settings in, one ``Comparison`` out. The CLI, CI and the
benchmark all call :func:`compare`, so what the benchmark measures is what users get.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from statistics import median

import numpy as np

from gate.compare import _intervals, _resolution, _stats, _unclear
from gate.compare._agent_changes import agent_changes
from gate.compare._broken import broken_reason, broken_tasks
from gate.compare._effects import conditions_only_reason
from gate.compare._health import suite_health
from gate.compare._infra import infra_rate, infra_took_over, over_infra_limit
from gate.compare._model import (
    ArmInfo,
    Comparison,
    InfoMetric,
    InfraCheck,
    MetricName,
    MetricResult,
    PassRateTest,
    Power,
    Resolution,
    ScheduleCheck,
    SuiteChanges,
    TaskChange,
    TaskChangeKind,
    TaskStatus,
    Verdict,
)
from gate.compare._prefix import with_prefix_caveat
from gate.compare._rate_ci import pass_rate_ci_given
from gate.compare._upstreams import with_prices_check
from gate.core.config import GateSettings
from gate.core.metrics import BY_NAME, PERMUTED, Metric
from gate.core.results import Results, RunResult, net_raw_note, runs_by_task, valid_runs
from gate.errors import BadInput, Unmeasurable

_EXIT = {"pass": 0, "regression": 1, "inconclusive": 3}
_MAX_REASONS = 3
_REASON_CHARS = 160
_MAX_NOTES = 4
_NOTE_CHARS = 80


def _runs_by_task(results: Results) -> dict[str, list[RunResult]]:
    """Runs of the tasks in the file's suite (runs of unknown tasks are not comparable)."""
    return defaultdict(list, runs_by_task(r for r in results.runs
                                          if r.task in results.suite.tasks))


def _passes(runs: Iterable[RunResult]) -> int:
    return sum(1 for r in runs if r.status == "passed")


def _reasons(runs: Sequence[RunResult]) -> list[str]:
    seen: list[str] = []
    for r in runs:
        if r.status != "passed" and r.reason:
            text = r.reason.strip()[:_REASON_CHARS]
            if text and text not in seen:
                seen.append(text)
        if len(seen) >= _MAX_REASONS:
            break
    return seen


def _notes(runs: Sequence[RunResult]) -> dict[str, int]:
    """Behaviour notes of valid runs, counted (a signal, never part of the verdict)."""
    counts: dict[str, int] = {}
    for r in runs:
        if r.notes:
            key = " ".join(r.notes.split())[:_NOTE_CHARS]
            counts[key] = counts.get(key, 0) + 1
    return dict(sorted(counts.items(), key=lambda kv: -kv[1])[:_MAX_NOTES])


def _task(tid: str, status: TaskStatus, br: Sequence[RunResult],
          cr: Sequence[RunResult]) -> TaskChange:
    bv, cv = valid_runs(br), valid_runs(cr)
    b, nb, c, nc = _passes(bv), len(bv), _passes(cv), len(cv)
    measured = status == "compared"
    return TaskChange(
        task=tid, status=status, baseline_passed=b, baseline_runs=nb,
        baseline_errors=len(br) - nb, candidate_passed=c, candidate_runs=nc,
        candidate_errors=len(cr) - nc, reasons=_reasons(cr),
        baseline_notes=_notes(bv), candidate_notes=_notes(cv),
        change=_classify(b, nb, c, nc) if measured else None,
        flaky=measured and 0 < c < nc,
    )


#: a task's pass rate must move this much to be called worse/better in the report; smaller
#: moves at a few runs per task are mostly noise (the verdict never uses these words)
NOTABLE_CHANGE = 0.25


def _classify(b: int, nb: int, c: int, nc: int) -> TaskChangeKind:
    """Words for a task's change. Descriptive only: the verdict comes from the tests."""
    rb, rc = b / nb, c / nc
    if rb >= 0.5 and c == 0:
        return "newly_failing"
    if rb < 0.5 and c == nc:
        return "newly_passing"
    if rc <= rb - NOTABLE_CHANGE:
        return "worse"
    if rc >= rb + NOTABLE_CHANGE:
        return "better"
    return "same"


def _samples(runs: Sequence[RunResult], rows: Sequence[Metric]) -> np.ndarray:
    """A row per run: ``rows``' samples side by side (every run records them)."""
    return np.array([[x for m in rows for x in m.sample(r) or ()] for r in runs],
                    dtype=float).reshape(len(runs), -1)


def _recorded(rows: Sequence[Metric], runs: Iterable[RunResult]) -> list[Metric]:
    """The metrics of ``rows`` every one of ``runs`` records a sample of."""
    runs = list(runs)
    return [m for m in rows if all(m.sample(r) is not None for r in runs)]


def _arm(results: Results, by_task: Mapping[str, list[RunResult]],
         compared: Sequence[str]) -> ArmInfo:
    runs = [r for rs in by_task.values() for r in rs]
    errors = sum(1 for r in runs if r.status == "error")
    depth = [len(valid_runs(by_task[t])) for t in compared]
    recorded = any(r.overhead_usd is not None for r in runs)
    overhead = sum(r.overhead_usd or 0.0 for r in runs) if recorded else None
    return ArmInfo(
        commit=results.commit, created_at=results.created_at, model=results.model,
        kind=results.agent.kind, fingerprint=results.agent.fingerprint,
        gate_version=results.gate_version, tasks=len(results.suite.tasks), runs=len(runs),
        errors=errors, infra_rate=infra_rate(errors, len(runs)),
        runs_per_task=float(median(depth)) if depth else 0.0,
        schedule=results.schedule.model_dump(mode="json") if results.schedule else None,
        metering=results.metering, overhead_usd=overhead,
        spend_usd=sum(r.cost_usd for r in runs) + overhead if overhead is not None else None,
    )


#: metrics whose value depends on how usage is metered
METERED: tuple[MetricName, ...] = tuple(m.name for m in PERMUTED if m.metered)


def _schedule_check(baseline: Results, candidate: Results) -> ScheduleCheck:
    """Schedules may differ freely; a different metering definition makes cost and cache-hit
    rate incomparable (reported, left out of the verdict)."""
    b = baseline.schedule.model_dump() if baseline.schedule else {}
    c = candidate.schedule.model_dump() if candidate.schedule else {}
    differs = sorted(k for k in set(b) | set(c) if k != "metering" and b.get(k) != c.get(k))
    if baseline.metering == candidate.metering:
        return ScheduleCheck(same_metering=True, differs=differs)
    reason = (f"{' and '.join(BY_NAME[n].short for n in METERED)} are reported, not gated: "
              f"the baseline's usage was "
              f"metered as {baseline.metering or 'billed (no metering recorded)'}, this run's "
              f"as {candidate.metering or 'billed (no metering recorded)'}; refresh the "
              "baseline with this gate to compare them")
    return ScheduleCheck(same_metering=False, differs=differs, not_comparable=list(METERED),
                         reason=reason)


def _pct(x: float) -> str:
    return f"{x * 100:.1f} %"


def _signed_points(x: float) -> str:
    return f"{x * 100:+.1f} pts"


@dataclass(frozen=True)
class _Tasks:
    """Which tasks can be compared, and why the others cannot."""

    tasks: list[TaskChange]
    compared: list[str]
    added: list[str]
    removed: list[str]
    changed: list[str]
    unmeasured: list[str]
    broken: list[str]


def _check_suites(baseline: Results, candidate: Results) -> None:
    b_tasks, c_tasks = baseline.suite.tasks, candidate.suite.tasks
    if not b_tasks:
        raise BadInput("the baseline has no tasks")
    if not c_tasks:
        raise Unmeasurable("the results have no tasks: nothing was measured")
    if not set(b_tasks) & set(c_tasks):
        raise BadInput("the results and the baseline share no task: unrelated suites "
                       f"({len(b_tasks)} baseline tasks, {len(c_tasks)} in the results)")


def _sort_tasks(baseline: Results, candidate: Results, b_runs: Mapping[str, list[RunResult]],
                c_runs: Mapping[str, list[RunResult]]) -> _Tasks:
    """Bookkeeping: which tasks can be compared."""
    b_tasks, c_tasks = baseline.suite.tasks, candidate.suite.tasks
    broken = broken_tasks(candidate, c_tasks)
    out = _Tasks([], [], [], [], [], [], [])
    for tid in sorted(set(b_tasks) | set(c_tasks) | set(broken)):
        br, cr = b_runs.get(tid, []), c_runs.get(tid, [])
        bv, cv = valid_runs(br), valid_runs(cr)
        status: TaskStatus
        if tid in broken:  # in the suite, not run: never "removed"
            out.broken.append(tid)
            out.tasks.append(_task(tid, "broken", br, cr).model_copy(
                update={"reasons": [broken[tid][:_REASON_CHARS]]}))
            continue
        if tid not in b_tasks:
            status, bucket = "added", out.added
        elif tid not in c_tasks:
            status, bucket = "removed", out.removed
        elif b_tasks[tid].digest != c_tasks[tid].digest:
            status, bucket = "changed", out.changed
        elif not bv or not cv:
            status, bucket = "unmeasured", out.unmeasured
        else:
            status, bucket = "compared", out.compared
        bucket.append(tid)
        out.tasks.append(_task(tid, status, br, cr))
    return out


def _power(b_arr: np.ndarray, nb_arr: np.ndarray, nc_arr: np.ndarray,
           settings: GateSettings, bounds: np.ndarray | None) -> Power | None:
    """The smallest uniform drop the suite catches with 80 % power, as a statement: each
    task with its own runs, and given the plan when ``bounds`` (its ranges) is set."""
    alpha = settings.alpha
    drop = _stats.detectable_drop(b_arr, nb_arr, nc_arr, alpha,
                                  sims=settings.power_simulations, seed=settings.seed,
                                  allowed=bounds)
    if settings.power_simulations <= 0:
        return None
    k, depth = float(np.mean(nc_arr)), float(np.mean(nb_arr))
    runs = _resolution.runs_text(list(zip(nb_arr.tolist(), nc_arr.tolist(), strict=True)))
    statement = (
        f"With {runs}, this suite can detect pass-rate drops of ≥ {drop * 100:.0f} points "
        f"with 80 % power." if drop is not None else
        f"With {runs}, this suite cannot reliably (80 % power) detect even a drop to 0: "
        f"add tasks, replications or baseline depth.")
    return Power(detectable_drop=drop, power=0.8, alpha=alpha, candidate_runs=k,
                 baseline_runs=depth, statement=statement,
                 candidate_runs_range=(int(nc_arr.min()), int(nc_arr.max())),
                 baseline_runs_range=(int(nb_arr.min()), int(nb_arr.max())))


def _bounds(tasks: Sequence[TaskChange], compared: Sequence[str],
            allowed: Mapping[str, tuple[int, int]] | None) -> np.ndarray | None:
    """The plan's range of baseline passes per compared task, (N, 2), ((0, n_b) where the
    plan did not read a task's outcomes); None without a plan. A range that does not hold
    the baseline's own passes is a plan made from another baseline: refused."""
    if allowed is None:
        return None
    by_id = {t.task: t for t in tasks}
    out = []
    for tid in compared:
        t = by_id[tid]
        lo, hi = allowed.get(tid, (0, t.baseline_runs))
        if not lo <= t.baseline_passed <= hi:
            raise BadInput(f"plan.tasks.{tid}.allowed: the baseline passed {t.baseline_passed} "
                           f"of {t.baseline_runs}, outside the plan's {lo}..{hi}: the plan was "
                           "not made from this baseline")
        out.append((lo, hi))
    return np.array(out, dtype=np.int64).reshape(-1, 2)


def _pass_rate(tasks: list[TaskChange], compared: list[str], settings: GateSettings,
               bounds: np.ndarray | None
               ) -> tuple[list[TaskChange], MetricResult, PassRateTest | None, Power | None]:
    """Pass rate: exact stratified tests (each compared task gets its own p-value), given
    the plan when ``bounds`` (its ranges, :func:`_bounds`) is set."""
    alpha = settings.alpha
    gating = set(settings.block_on)
    if not compared:
        return tasks, MetricResult(name="pass_rate", label=_label("pass_rate"), baseline=None,
                                   candidate=None, delta=None, verdict="n/a",
                                   gating="pass_rate" in gating, note="no comparable task"
                                   ), None, None
    by_id = {t.task: t for t in tasks}
    b_arr = np.array([by_id[t].baseline_passed for t in compared], dtype=np.int64)
    nb_arr = np.array([by_id[t].baseline_runs for t in compared], dtype=np.int64)
    c_arr = np.array([by_id[t].candidate_passed for t in compared], dtype=np.int64)
    nc_arr = np.array([by_id[t].candidate_runs for t in compared], dtype=np.int64)
    deep = _stats.is_deep(nb_arr)
    p_sum = float(_stats.sum_test(b_arr, nb_arr, c_arr, nc_arr, allowed=bounds)[0])
    p_max_arr, p_i = _stats.max_test(b_arr, nb_arr, c_arr, nc_arr, bounds)
    p_max = float(p_max_arr[0])
    for tid, p in zip(compared, p_i[0].tolist(), strict=True):
        by_id[tid] = by_id[tid].model_copy(update={"p_value": p})
    tasks = [by_id[t.task] for t in tasks]
    significant = bool(_stats.pass_rate_blocks(np.array([p_sum]), np.array([p_max]),
                                               alpha, deep)[0])
    rule = (f"deep baseline: p_sum ≤ {alpha / 2:g} or p_max ≤ {alpha / 2:g}" if deep
            else f"p_sum ≤ {alpha:g}")
    pass_test = PassRateTest(p_sum=p_sum, p_max=p_max, deep_baseline=deep, rule=rule)
    # given the plan when one read the baseline's outcomes, as the tests are (§2a)
    delta, lo, hi = (_stats.pass_rate_ci(b_arr, nb_arr, c_arr, nc_arr, settings.ci_level)
                     if bounds is None else
                     pass_rate_ci_given(b_arr, nb_arr, c_arr, nc_arr, bounds, settings.ci_level))
    p_values = {"sum": p_sum, "max": p_max} if deep else {"sum": p_sum}
    metric = MetricResult(
        name="pass_rate", label=_label("pass_rate"),
        baseline=float(np.mean(b_arr / nb_arr)), candidate=float(np.mean(c_arr / nc_arr)),
        delta=delta, ci_low=lo, ci_high=hi, ci_level=settings.ci_level,
        p_values=p_values, p_value=_stats.decisive_p(p_sum, p_max, deep),
        threshold=alpha / 2 if deep else alpha, significant=significant,
        exceeds_margin=significant, gating="pass_rate" in gating,
        verdict="regression" if significant else "ok",
        blocks=significant and "pass_rate" in gating,
        note=None if "pass_rate" in gating else "not in block_on",
    )
    return tasks, metric, pass_test, _power(b_arr, nb_arr, nc_arr, settings, bounds)


def _label(name: str) -> str:
    return BY_NAME[name].label


def _margin_metrics(b_runs: Mapping[str, list[RunResult]], c_runs: Mapping[str, list[RunResult]],
                    compared: list[str], settings: GateSettings, schedule: ScheduleCheck,
                    allowed: Mapping[str, tuple[int, int]] | None) -> list[MetricResult]:
    """The table's means and ratios (turns, cost, cache-hit rate, duration): within-task
    permutations (given the plan: only the relabellings it allows), and margins for those
    that gate. A metric some compared run does not record is not available (said so), never
    an error."""
    b_valid = {t: valid_runs(b_runs[t]) for t in compared}
    c_valid = {t: valid_runs(c_runs[t]) for t in compared}
    rows = _recorded(_recorded(PERMUTED, (r for rs in b_valid.values() for r in rs)),
                     (r for rs in c_valid.values() for r in rs))
    samples = [_stats.TaskSamples(
        _samples(b_valid[t], rows), _samples(c_valid[t], rows),
        allowed=None if allowed is None else allowed.get(t),
        baseline_passed=np.array([r.status == "passed" for r in b_valid[t]], dtype=bool),
        candidate_passed=np.array([r.status == "passed" for r in c_valid[t]], dtype=bool))
        for t in compared]
    perms = _stats.permutation_tests(samples, permutations=settings.permutations,
                                     seed=settings.seed, lay=_stats.layout(rows))
    return [_margin_metric(m, perms.get(m.name), m in rows, settings, schedule)
            for m in PERMUTED]


def _margin_metric(row: Metric, res: _stats.PermResult | None, recorded: bool,
                   settings: GateSettings, schedule: ScheduleCheck) -> MetricResult:
    """One permutation-tested metric: its change, its test and (with a margin) its verdict."""
    m_alpha = settings.metric_alpha / 2
    margin = float(getattr(settings, row.margin)) if row.margin else None
    gating = row.gates and row.name in settings.block_on
    if res is None:
        missing = ("not available: a run in one arm does not record it (an older results file)"
                if not recorded else "not measured (no comparable task or all zero)")
        return MetricResult(name=row.name, label=row.label, baseline=None, candidate=None,
                            delta=None, margin=margin, verdict="n/a", gating=gating,
                            note=missing)
    p_min = min(res.p_aggregate, res.p_equal_weight)
    delta = res.aggregate if row.kind == "ratio" else res.aggregate - 1
    # past the margin in the harmful direction; a metric with no margin: any harmful move
    worse = -delta if row.higher_is_better else delta
    over = worse >= margin if margin is not None else worse > 0
    significant = p_min <= m_alpha
    regression = significant and over
    note = None if gating else "not in block_on"
    if margin is None:
        note = "reported, never gating: it depends on the runner and the provider"
    elif 1 / (settings.permutations + 1) > m_alpha:
        note = (f"{settings.permutations} permutations cannot reach p ≤ {m_alpha:g}: "
                "this metric can never block")
    comparable = row.name not in schedule.not_comparable
    if not comparable:
        note = schedule.notes.get(row.name,
                                  "not comparable: the two arms' metering definitions differ")
    return MetricResult(
        name=row.name, label=row.label, baseline=res.baseline,
        candidate=res.candidate, delta=delta,
        p_values={"aggregate": res.p_aggregate, "equal_weight": res.p_equal_weight},
        p_value=p_min, threshold=m_alpha, margin=margin, significant=significant,
        exceeds_margin=over, gating=gating and comparable,
        verdict="regression" if regression else "ok",
        blocks=regression and gating and comparable, note=note,
        comparable=comparable,
    )


def _change_intervals(metrics: list[MetricResult], b_runs: Mapping[str, list[RunResult]],
                      c_runs: Mapping[str, list[RunResult]], compared: list[str],
                      settings: GateSettings) -> list[MetricResult]:
    """Each measured metric with the bootstrap interval of its change (gate/compare/
    _intervals.py, the seeds the report's page uses): described, never what decides."""
    if not compared or all(m.delta is None for m in metrics):
        return metrics
    level = settings.ci_level
    c = _intervals.arm_stats(c_runs, compared, level, settings.seed)
    b = _intervals.arm_stats(b_runs, compared, level, settings.seed + 1)
    out = []
    for m in metrics:
        iv = _intervals.change_interval(m.name, b, c, level) if m.delta is not None else None
        out.append(m if iv is None else m.model_copy(
            update={"ci_low": iv[0], "ci_high": iv[1], "ci_level": level}))
    return out


def _inconclusive(b_info: ArmInfo, c_info: ArmInfo, compared: list[str], n_baseline: int,
                  settings: GateSettings, *, baseline_tasks: int
                  ) -> tuple[InfraCheck, list[str]]:
    """Infra errors and the inconclusive rules. ``n_baseline``: the tasks that should have
    been compared (the baseline's and the broken ones), ``baseline_tasks`` the baseline's."""
    p_infra = _stats.infra_pvalue(b_info.errors, b_info.runs, c_info.errors, c_info.runs)
    infra = InfraCheck(baseline_rate=b_info.infra_rate, candidate_rate=c_info.infra_rate,
                       p_value=p_infra, max_rate=settings.max_infra_rate)
    inconclusive: list[str] = []
    share = len(compared) / n_baseline
    if share < settings.min_comparable:
        whose = ("baseline " if n_baseline == baseline_tasks else "")
        also = (f" ({n_baseline - baseline_tasks} broken, not in the baseline)"
                if n_baseline != baseline_tasks else "")
        inconclusive.append(
            f"only {len(compared)} of {n_baseline} {whose}"
            f"task{'s' if n_baseline != 1 else ''}{also} "
            f"{'are' if len(compared) != 1 else 'is'} comparable "
            f"(need {settings.min_comparable:.0%})")
    for who, info in (("baseline", b_info), ("candidate", c_info)):
        if over_infra_limit(info.infra_rate, settings.max_infra_rate):
            inconclusive.append(f"infra errors in {info.errors} of {info.runs} {who} "
                                f"run{'s' if info.runs != 1 else ''} "
                                f"({info.infra_rate:.0%} > {settings.max_infra_rate:.0%})")
    if p_infra <= settings.infra_alpha and c_info.infra_rate > b_info.infra_rate:
        inconclusive.append(
            f"the candidate hits infra errors significantly more often "
            f"({_pct(c_info.infra_rate)} vs {_pct(b_info.infra_rate)}, p = {p_infra:.2g})")
    return infra, inconclusive


def _decide(metrics: list[MetricResult], incomplete: list[str],
            inconclusive: list[str]) -> tuple[Verdict, list[str]]:
    """The verdict and its reasons."""
    blocking = [m for m in metrics if m.blocks]
    if incomplete:
        return "inconclusive", [*incomplete, *inconclusive,
                                *(f"would block: {_metric_reason(m)}" for m in blocking)]
    if blocking:
        # evidence of a regression on what could be measured outranks "could not measure all"
        return "regression", [_metric_reason(m) for m in blocking]
    if inconclusive:
        return "inconclusive", inconclusive
    return "pass", []


def compare(baseline: Results, candidate: Results, settings: GateSettings, *,
            allowed: Mapping[str, tuple[int, int]] | None = None) -> Comparison:
    """Compare ``candidate`` with ``baseline`` and reach the verdict of docs/statistics.md.

    ``allowed``: when the candidate's runs per task were planned from this baseline's
    outcomes (gate/compare/_plan.py, ``source == "baseline"``), task id → the inclusive range
    of its baseline pass counts under which the plan comes out the same. Every test, floor
    and power figure is then computed over only the relabellings the plan allows
    (gate/compare/_restricted.py); a task not named restricts nothing; None is no plan.

    Raises ``BadInput`` when the two files share no task at all (unrelated suites): that is a
    wrong argument, not a measurement; ``Unmeasurable`` when the results hold no task. Tasks
    shared but none comparable is a measurement that failed: the verdict is ``inconclusive``.
    """
    _check_suites(baseline, candidate)
    b_tasks, c_tasks = baseline.suite.tasks, candidate.suite.tasks
    b_runs, c_runs = _runs_by_task(baseline), _runs_by_task(candidate)
    sorted_tasks = _sort_tasks(baseline, candidate, b_runs, c_runs)
    compared = sorted_tasks.compared
    bounds = _bounds(sorted_tasks.tasks, compared, allowed)
    tasks, pass_metric, pass_test, power = _pass_rate(sorted_tasks.tasks, compared, settings,
                                                      bounds)
    schedule = with_prices_check(_schedule_check(baseline, candidate), baseline, candidate)
    metrics = with_prefix_caveat([pass_metric, *_change_intervals(
        _margin_metrics(b_runs, c_runs, compared, settings, schedule, allowed), b_runs, c_runs,
        compared, settings)], baseline, candidate)
    b_info = _arm(baseline, b_runs, compared)
    c_info = _arm(candidate, c_runs, compared)
    # a broken task counts as not compared, whether the baseline has it or not
    infra, inconclusive = _inconclusive(b_info, c_info, compared,
                                        len(set(b_tasks) | set(sorted_tasks.broken)), settings,
                                        baseline_tasks=len(b_tasks))
    inconclusive += [r for r in (_unmeasured_reason(tasks),
                                 _infra_task_reason(tasks, settings.max_infra_rate)) if r]
    if (only := conditions_only_reason(baseline, candidate)) is not None:
        inconclusive = [only]  # what the reasons above say of an arm with no plain run
    # An interrupted arm lacks runs, and not at random: the runs in flight when it stopped are
    # the long ones, and long runs fail more (timeouts, turn caps). What survived is shown, but
    # neither "pass" nor "regression" would be honest: the verdict is inconclusive (exit 3).
    incomplete = [f"the {who} {note}" for who, arm in (("baseline", baseline),
                                                       ("candidate", candidate))
                  if (note := arm.interruption_note())]
    resolution = _design_resolution(tasks, compared, metrics, settings, bounds)
    metrics, resolution = _unclear.with_unclear(metrics, resolution, b_runs, c_runs, compared,
                                                permutations=settings.permutations,
                                                allowed=allowed)
    verdict, reasons = _blind_verdict(*_decide(metrics, incomplete, inconclusive), resolution)
    exit_code, unclear_only = _EXIT[verdict], False
    if resolution is not None and resolution.unclear_reasons and verdict != "regression":
        unclear_only = verdict == "pass"
        verdict, reasons = "inconclusive", [*reasons, *resolution.unclear_reasons]
        exit_code = _unclear.EXIT if unclear_only else _EXIT[verdict]
    suite = SuiteChanges(
        digest_changed=baseline.suite.digest != candidate.suite.digest,
        baseline_tasks=len(b_tasks), candidate_tasks=len(c_tasks), compared=len(compared),
        added=sorted_tasks.added, removed=sorted_tasks.removed, changed=sorted_tasks.changed,
        unmeasured=sorted_tasks.unmeasured, broken=sorted_tasks.broken,
    )
    return Comparison(
        verdict=verdict, exit_code=exit_code,
        headline=("Unclear: " + "; ".join([*reasons, *filter(None, [broken_reason(tasks)])])
                  if unclear_only
                  else _headline(verdict, metrics, reasons, suite, broken_reason(tasks))),
        notes=[n for n in (_estimated_note(candidate), net_raw_note(baseline, candidate)) if n],
        reasons=reasons, baseline=b_info, candidate=c_info, metrics=metrics,
        info=_info(b_runs, c_runs, compared), pass_rate_test=pass_test, infra=infra,
        power=power, tasks=tasks, agent_changes=agent_changes(baseline, candidate),
        suite=suite, settings=settings.model_dump(mode="json"), schedule=schedule,
        resolution=resolution, health=suite_health(baseline),
    )


#: tasks named in a reason before "and N more"
_MAX_NAMED = 5


def _unmeasured_reason(tasks: Sequence[TaskChange]) -> str | None:
    """A task with no valid run in one arm is never under a pass: its runs there were all
    infra errors (or it has none), so whatever it did is unknown. Named, at most five."""
    gone = [t for t in tasks if t.status == "unmeasured"]
    if not gone:
        return None

    def arm(t: TaskChange) -> str:
        who, errors = (("this run", t.candidate_errors) if not t.candidate_runs
                       else ("the baseline", t.baseline_errors))
        return f"{who}: {errors} infra error{'s' if errors != 1 else ''}, no valid run" \
            if errors else f"{who}: no run"

    named = ", ".join(f"{t.task} ({arm(t)})" for t in gone[:_MAX_NAMED])
    more = f" and {len(gone) - _MAX_NAMED} more" if len(gone) > _MAX_NAMED else ""
    return (f"{len(gone)} task{'s' if len(gone) != 1 else ''} with no valid run in one arm, "
            f"so not compared: {named}{more}")


def _infra_task_reason(tasks: Sequence[TaskChange], max_rate: float) -> str | None:
    """The compared tasks whose runs in this run are mostly infra errors where the
    baseline's were not (``infra_took_over``): named, at most five, with their errors."""
    hit = [t for t in tasks if t.status == "compared" and infra_took_over(
        t.candidate_errors, t.candidate_runs, t.baseline_errors, t.baseline_runs, max_rate)]
    if not hit:
        return None

    def arm(t: TaskChange) -> str:
        return (f"{t.candidate_errors} infra errors, {t.candidate_runs} valid "
                f"run{'s' if t.candidate_runs != 1 else ''}; baseline {t.baseline_errors} of "
                f"{t.baseline_errors + t.baseline_runs}")

    named = ", ".join(f"{t.task} ({arm(t)})" for t in hit[:_MAX_NAMED])
    more = f" and {len(hit) - _MAX_NAMED} more" if len(hit) > _MAX_NAMED else ""
    return (f"{len(hit)} task{'s' if len(hit) != 1 else ''} with mostly infra errors in this "
            f"run (pass rate unknown): {named}{more}")


def unpriced_note(candidate: Results) -> str | None:
    """The models the candidate's agent asked for that have no price: its runs that did are
    failed (not fully metered, by the agent's doing); the fix is a price on the base branch."""
    models = (candidate.model_extra or {}).get("unpriced_models")
    if not isinstance(models, list) or not models:
        return None
    names = [str(m) for m in models[:_MAX_NAMED]]
    prices = ", ".join(f'[agent.prices."{m}"]' for m in names)
    return (f"the agent asked for {'models' if len(names) > 1 else 'a model'} with no price "
            f"({', '.join(names)}): its runs that did are failed, not metered; add {prices} "
            "on the base branch")


def _estimated_note(candidate: Results) -> str | None:
    """How many of the candidate's runs have output tokens estimated (streams cut short)."""
    n = sum(1 for r in candidate.runs if r.estimated)
    if not n:
        return None
    return (f"{n} run{'s' if n != 1 else ''} of this PR had a model stream cut short: its "
            "output tokens are estimated from what passed (about 4 characters a token)")


def _design_resolution(tasks: list[TaskChange], compared: list[str],
                       metrics: list[MetricResult], settings: GateSettings,
                       bounds: np.ndarray | None) -> Resolution | None:
    """What the design could have detected (gate/compare/_resolution.py); None when no task
    was compared."""
    if not compared:
        return None
    by_id = {t.task: t for t in tasks}
    b_arr = np.array([by_id[t].baseline_passed for t in compared], dtype=np.int64)
    nb_arr = np.array([by_id[t].baseline_runs for t in compared], dtype=np.int64)
    nc_arr = np.array([by_id[t].candidate_runs for t in compared], dtype=np.int64)
    return _resolution.resolution(
        b_arr, nb_arr, nc_arr, metrics, alpha=settings.alpha,
        metric_threshold=settings.metric_alpha / 2, permutations=settings.permutations,
        allowed=bounds)


def _blind_verdict(verdict: Verdict, reasons: list[str],
                   resolution: Resolution | None) -> tuple[Verdict, list[str]]:
    """A comparison that could not have blocked even a collapse is never a pass: what would
    have been one is inconclusive, saying why and what would fix it. A regression stands (it
    is evidence); an inconclusive verdict gains the reason."""
    if resolution is None or resolution.detectable or verdict == "regression":
        return verdict, reasons
    return "inconclusive", [*reasons, resolution.statement]


def _p(p: float | None) -> str:
    if p is None:
        return "p n/a"
    return "p < 0.0001" if p < 1e-4 else f"p = {p:.2g}"


def _metric_reason(m: MetricResult) -> str:
    p = _p(m.p_value)
    if m.baseline is None or m.candidate is None or m.delta is None:
        return m.label
    unit = BY_NAME[m.name].unit
    if unit == "rate":
        return (f"{m.label} {_pct(m.baseline)} → {_pct(m.candidate)} "
                f"({_signed_points(m.delta)}, {p})")
    value = {"usd": "${:.4f}", "seconds": "{:.1f} s"}.get(unit, "{:.1f}")
    return (f"{m.label} {value.format(m.baseline)} → {value.format(m.candidate)} "
            f"({m.delta * 100:+.1f} %, {p})")


def _headline(verdict: Verdict, metrics: Sequence[MetricResult], reasons: Sequence[str],
              suite: SuiteChanges, broken: str | None = None) -> str:
    """The verdict in one line; the broken tasks, when some are, named in it whatever the
    verdict."""
    line = _verdict_line(verdict, metrics, reasons, suite)
    return f"{line}; {broken}" if broken else line


def _verdict_line(verdict: Verdict, metrics: Sequence[MetricResult], reasons: Sequence[str],
                  suite: SuiteChanges) -> str:
    pr = next(m for m in metrics if m.name == "pass_rate")
    rate = ""
    if pr.baseline is not None and pr.candidate is not None and pr.delta is not None:
        rate = (f"pass rate {_pct(pr.baseline)} → {_pct(pr.candidate)} "
                f"({_signed_points(pr.delta)}")
        if pr.ci_low is not None and pr.ci_high is not None and pr.ci_level is not None:
            rate += (f", {pr.ci_level * 100:g} % CI {pr.ci_low * 100:+.1f} to "
                     f"{pr.ci_high * 100:+.1f}")
        rate += ")"
    tasks = f"{suite.compared}/{suite.baseline_tasks} tasks compared"
    if verdict == "regression":
        return "Regression: " + "; ".join(reasons)
    if verdict == "inconclusive":
        return "Inconclusive: " + "; ".join(reasons)
    return f"No regression: {rate}, {tasks}" if rate else f"No regression: {tasks}"


def _info(b_runs: Mapping[str, list[RunResult]], c_runs: Mapping[str, list[RunResult]],
          compared: Sequence[str]) -> list[InfoMetric]:
    """Tokens per task-run (task-equal weight, like the metrics; the duration is one of
    them, gate/core/metrics.py)."""
    fields: dict[str, Callable[[RunResult], float]] = {
        "input tokens": lambda r: r.usage.input_tokens,
        "output tokens": lambda r: r.usage.output_tokens,
        "cache write tokens": lambda r: r.usage.cache_creation_input_tokens,
        "cache read tokens": lambda r: r.usage.cache_read_input_tokens,
    }

    def mean(runs_by: Mapping[str, list[RunResult]],
             get: Callable[[RunResult], float]) -> float | None:
        per_task = []
        for t in compared:
            vals = [get(r) for r in valid_runs(runs_by[t])]
            if vals:
                per_task.append(sum(vals) / len(vals))
        return sum(per_task) / len(per_task) if per_task else None

    return [InfoMetric(name=name, baseline=mean(b_runs, get), candidate=mean(c_runs, get))
            for name, get in fields.items()]
