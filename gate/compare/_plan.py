"""The plan: how many runs each task gets in each look, from the baseline alone
(docs/statistics.md §5a).

A task that nearly always passed shows a collapse in one or two runs; a task that passes half
the time needs many runs to show anything, and one that always fails shows nothing on the pass
rate. So the runs go where they carry signal: each task's runs per look come from its band of
the baseline's pass rate (:data:`BANDS`), before any run of the PR.

The rule is per task: a task's looks depend on its own baseline pass count and runs and on the
settings, never on another task's, and are monotone in bands of the pass rate. That keeps the
tests exact: the baseline's runs are one arm of the test, so a plan made from their outcomes
conditions the test on it, and every p-value is computed over only the relabellings under which
the plan would have come out the same — for each task, the baseline part's pass count within
:attr:`TaskPlan.allowed`, one interval (gate/compare/_stats.py). A plan made from a baseline the
test does not use (a same-job A/B plans both arms from the committed baseline, then measures the
base arm afresh) conditions nothing.

:func:`plan_runs` is public and pure, so anyone can recompute a results file's plan from the
baseline and the settings it records; :func:`gate.compare.judge` does, and refuses a file whose
plan differs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from types import MappingProxyType
from typing import Any, Literal

from gate.core.config import GateSettings
from gate.core.results import PlanRecord, PlanTask, Results, runs_by_task

#: the rule's name and version, recorded with every plan: a new rule is a new version
RULE = "by-pass-rate"
VERSION = 3
#: the uniform rule: every task the same runs (the schedule before plans)
UNIFORM = "uniform"
PLAN_RULES = (RULE, UNIFORM)
#: each rule's version by the sequential schedule's looks (``PlanSettings.looks``): the rules
#: of two looks are the ones before the third look, whose records name no looks (read as 2)
VERSIONS: Mapping[tuple[str, int], int] = MappingProxyType(
    {(RULE, 2): 2, (RULE, 3): VERSION, (UNIFORM, 2): 1, (UNIFORM, 3): 2})

#: below this many valid baseline runs a task's pass rate says too little to plan by: it gets
#: the uniform schedule, and its plan reads no outcome of it
MIN_BASELINE_RUNS = 5

PlanSource = Literal["baseline", "independent", "none"]


@dataclass(frozen=True)
class Band:
    """Tasks whose baseline pass rate is at least ``min_rate`` (and below the band above's):
    the first look's runs are the uniform schedule's times ``first``, rounded, at least 1; the
    later looks' are its ``more`` times ``more``, rounded, at least 1, spread over them as
    :func:`later_looks` does (a fixed schedule's one look takes the weighted mean of the two)."""

    name: str
    min_rate: float
    first: float
    more: float


#: highest band first. The bands are few and wide on purpose: the tests condition on the band
#: (a task's baseline pass count must lie in its band's range for a relabelling to count), and
#: a band's floor costs power to the tasks just above it — a floor at 0.9 turned a collapse of
#: a 19-of-20 task from p = 0.0001 into p = 0.02 at 5 runs (docs/statistics.md §5a). So a
#: task passing at least half the time gets the runs (a collapse shows there in a few; a
#: drop of its rate too), one below half gets one first and two more, and one that never
#: passed one first and one more (its pass rate cannot fall; turns and cost still can). With
#: the default 2 + 3 in three looks: 2 + 2 + 3, 1 + 1 + 1 and 1 + 0 + 1.
BANDS: tuple[Band, ...] = (
    Band("passes at least half the time", 0.5, 1.0, 5 / 3),
    Band("passes less than half the time", 1e-9, 0.5, 2 / 3),
    Band("never passed", 0.0, 0.5, 1 / 3),
)


@dataclass(frozen=True)
class PlanSettings:
    """What the rule reads from the settings (recorded with the plan, so the plan can be
    recomputed from the file and the baseline alone)."""

    rule: str
    sequential: bool
    first: int  # the uniform schedule's runs in the first look (sequential)
    more: int  # ... added by the later looks (sequential)
    replications: int  # ... in the one look of a fixed schedule
    looks: int = 2  # the sequential schedule's looks (a record without it: 2)

    @classmethod
    def of(cls, settings: GateSettings, *, replications: int, sequential: bool) -> PlanSettings:
        return cls(rule=settings.plan, sequential=sequential,
                   first=settings.sequential_first, more=settings.sequential_more,
                   replications=replications, looks=settings.sequential_looks)

    def uniform(self) -> tuple[int, ...]:
        if not self.sequential:
            return (self.replications,)
        return (self.first, *later_looks(self.more, self.looks - 1))


def later_looks(more: int, n: int) -> tuple[int, ...]:
    """``more`` runs over ``n`` later looks, as evenly as they go, the rest to the last ones
    (5 over 2: 2 + 3; 1 over 2: 0 + 1 — a look may run nothing of a task)."""
    base, rest = divmod(more, n)
    return tuple(base + (i >= n - rest) for i in range(n))


def look_share(looks: int, look: int) -> float:
    """The share of α (and of metric_alpha) the tests spend at look ``look`` (1-based) of a
    ``looks``-look design: the looks before the last share one half, the last has the other
    (one look: all of it; two: ½, ½; three: ¼, ¼, ½). The shares sum to 1, so false blocks
    stay within the levels whatever the looks decide (Bonferroni's union bound)."""
    if looks == 1:
        return 1.0
    return 0.5 if look >= looks else 0.5 / (looks - 1)


@dataclass(frozen=True)
class TaskPlan:
    """One task's runs per look; ``basis`` says why in words; ``allowed`` is the inclusive
    range of the task's baseline pass counts (out of its valid plain baseline runs) under which
    the rule gives the same looks — None when the plan read no outcome of the task."""

    looks: tuple[int, ...]
    basis: str
    allowed: tuple[int, int] | None = None

    def through(self, looks: int) -> int:
        return sum(self.looks[:looks])


@dataclass(frozen=True)
class RunPlan:
    """Every task's :class:`TaskPlan`, the rule that made them and from what."""

    rule: str
    version: int
    source: PlanSource
    settings: PlanSettings
    tasks: Mapping[str, TaskPlan] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "tasks", MappingProxyType(dict(sorted(self.tasks.items()))))

    @property
    def looks(self) -> int:
        return self.settings.looks if self.settings.sequential else 1

    def look(self, i: int) -> dict[str, int]:
        """Runs per task in look ``i`` (0-based)."""
        return {t: p.looks[i] for t, p in self.tasks.items()}

    def through(self, looks: int) -> dict[str, int]:
        """Runs per task in the first ``looks`` looks."""
        return {t: p.through(looks) for t, p in self.tasks.items()}

    def schedule(self, look: int) -> dict[str, Any]:
        """What a planned file's ``schedule`` says through look ``look`` (0-based), for
        readers that know no plan: the most runs any task has (``replications``) and, for a
        sequential plan, the most runs any task got in each look so far (``sequential``: the
        judge shares its levels between the looks when it is set)."""
        most = [max((p.looks[i] for p in self.tasks.values()), default=0)
                for i in range(look + 1)]
        return {"replications": max((p.through(look + 1) for p in self.tasks.values()),
                                    default=0),
                "sequential": most if self.settings.sequential else None}

    def allowed(self) -> dict[str, tuple[int, int]]:
        """What the tests condition on (task → allowed baseline pass counts): only a plan made
        from the baseline it is judged against conditions anything."""
        if self.source != "baseline":
            return {}
        return {t: p.allowed for t, p in self.tasks.items() if p.allowed is not None}

    def record(self, looks_run: int) -> PlanRecord:
        return PlanRecord(
            rule=self.rule, version=self.version, source=self.source,
            settings=asdict(self.settings), looks_run=looks_run,
            tasks={t: PlanTask(looks=list(p.looks), basis=p.basis,
                               allowed=list(p.allowed) if p.allowed is not None else None)
                   for t, p in self.tasks.items()})

    @classmethod
    def from_record(cls, rec: PlanRecord) -> RunPlan:
        return cls(
            rule=rec.rule, version=rec.version, source=rec.source,
            settings=PlanSettings(**rec.settings),
            tasks={t: TaskPlan(looks=tuple(p.looks), basis=p.basis,
                               allowed=(p.allowed[0], p.allowed[1]) if p.allowed else None)
                   for t, p in rec.tasks.items()})


def band_of(passed: int, runs: int) -> Band:
    rate = passed / runs
    return next(b for b in BANDS if rate >= b.min_rate)


def band_looks(band: Band, s: PlanSettings) -> tuple[int, ...]:
    """The runs per look of a task in ``band`` under the settings' schedule."""
    if s.sequential:
        return (max(1, round(s.first * band.first)),
                *later_looks(max(1, round(s.more * band.more)), s.looks - 1))
    mean = (s.first * band.first + s.more * band.more) / (s.first + s.more)
    return (max(1, round(s.replications * mean)),)


def task_looks(passed: int | None, runs: int, s: PlanSettings) -> TaskPlan:
    """The rule for one task, from its own baseline (``passed`` of ``runs`` valid plain runs;
    ``passed`` None: no baseline runs of this task) and the settings only. ``allowed`` is every
    pass count out of ``runs`` that gives the same looks (bands whose looks round alike count
    as one: the plan would have come out the same), one interval as the looks are monotone."""
    uniform = s.uniform()
    if s.rule == UNIFORM:
        return TaskPlan(uniform, "uniform plan")
    if passed is None or runs == 0:
        return TaskPlan(uniform, "new to the baseline")
    if runs < MIN_BASELINE_RUNS:
        return TaskPlan(uniform, f"only {runs} baseline run{'s' if runs != 1 else ''}")
    band = band_of(passed, runs)
    looks = band_looks(band, s)
    same = [b for b in range(runs + 1) if band_looks(band_of(b, runs), s) == looks]
    return TaskPlan(looks, f"passed {passed} of {runs}: {band.name}", (min(same), max(same)))


def baseline_counts(baseline: Results | None, digests: Mapping[str, str]
                    ) -> dict[str, tuple[int, int]]:
    """(passed, valid runs) of each task's plain baseline runs whose task has the same digest
    in the baseline as in ``digests`` (a changed task's old runs say nothing of it)."""
    if baseline is None:
        return {}
    out: dict[str, tuple[int, int]] = {}
    for tid, runs in runs_by_task(r for r in baseline.runs if r.condition is None).items():
        info = baseline.suite.tasks.get(tid)
        if tid not in digests or info is None or info.digest != digests[tid]:
            continue
        valid = [r for r in runs if r.valid]
        out[tid] = (sum(1 for r in valid if r.status == "passed"), len(valid))
    return out


def plan_runs(baseline: Results | None, tasks: Sequence[tuple[str, str]],
              settings: PlanSettings, *, source: PlanSource = "baseline") -> RunPlan:
    """The plan for ``tasks`` ((id, digest) of the suite being run) from ``baseline``: pure,
    public, and what :func:`gate.compare.judge` recomputes. ``source`` says whether the
    comparison's baseline arm is this baseline ("baseline": the tests condition on the plan)
    or not ("independent"); without a baseline it is "none"."""
    if settings.rule not in PLAN_RULES:
        raise ValueError(f"unknown plan rule {settings.rule!r} (one of: {', '.join(PLAN_RULES)})")
    digests = dict(tasks)
    counts = baseline_counts(baseline, digests)
    plans: dict[str, TaskPlan] = {}
    for tid in digests:
        passed, runs = counts.get(tid, (None, 0))
        plans[tid] = task_looks(passed, runs, settings)
    return RunPlan(rule=settings.rule, version=VERSIONS[settings.rule, settings.looks],
                   source=source if baseline is not None else "none", settings=settings,
                   tasks=plans)
