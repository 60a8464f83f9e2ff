"""The comparison as data: what the report renders, what ``--format json`` prints."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

Verdict = Literal["pass", "regression", "inconclusive"]
MetricName = str  # a row of the table of metrics (gate/core/metrics.py)
# "unjudged": measured, but the simulator cannot judge the change (gate/compare/_simjudge.py)
# "unclear": past its margin, and its test too weak to block a change of the margin's size
# (gate/compare/_unclear.py); never "ok"
MetricVerdict = Literal["ok", "regression", "n/a", "unjudged", "unclear"]
# broken: a task of the suite the candidate's run could not load (or run), so did not run
TaskStatus = Literal["compared", "added", "removed", "changed", "unmeasured", "broken"]
TaskChangeKind = Literal["newly_failing", "newly_passing", "worse", "better", "same"]


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True)


class MetricResult(_Frozen):
    """One headline metric: both arms, the change, its uncertainty and whether it blocks.

    Rates (pass rate, cache-hit rate) are fractions and ``delta`` is their difference (×100 for
    points); turns, cost and duration are per task-run means over the compared tasks and
    ``delta`` is the relative change (0.5 = +50 %). Which is which: gate/core/metrics.py.
    """

    name: MetricName
    label: str
    baseline: float | None
    candidate: float | None
    delta: float | None
    ci_low: float | None = None
    ci_high: float | None = None
    ci_level: float | None = None
    p_values: dict[str, float] = {}
    p_value: float | None = None  # the deciding one: min of the tests run
    threshold: float | None = None  # p at or below which the test is significant
    margin: float | None = None  # practical margin (a mean's relative, a rate's points)
    significant: bool = False
    exceeds_margin: bool = False
    gating: bool = True  # listed in [gate].block_on
    verdict: MetricVerdict = "ok"
    blocks: bool = False
    note: str | None = None
    # a fact about what the row measured, said beside its change (the cache-hit rate of an
    # arm whose shared prefix is too short to cache: gate/compare/_prefix.py)
    caveat: str | None = None
    # False: the two arms measured it differently (metering definitions differ); reported,
    # left out of the verdict
    comparable: bool = True


class InfoMetric(_Frozen):
    """Reported, never gated: tokens and duration per task-run."""

    name: str
    baseline: float | None
    candidate: float | None


class TaskChange(_Frozen):
    """One task across the two arms."""

    task: str
    status: TaskStatus
    baseline_passed: int = 0
    baseline_runs: int = 0  # valid (non-error) runs
    baseline_errors: int = 0
    candidate_passed: int = 0
    candidate_runs: int = 0
    candidate_errors: int = 0
    p_value: float | None = None  # one-sided Fisher: the candidate passes less
    change: TaskChangeKind | None = None
    flaky: bool = False  # mixed outcomes in the candidate (passes some runs, fails others)
    reasons: list[str] = []  # the candidate's failure/error reasons (deduplicated, few)
    # what verify.sh noted about the agent's behaviour (.runner/notes.txt), note → runs
    baseline_notes: dict[str, int] = {}
    candidate_notes: dict[str, int] = {}

    @property
    def baseline_rate(self) -> float | None:
        return self.baseline_passed / self.baseline_runs if self.baseline_runs else None

    @property
    def candidate_rate(self) -> float | None:
        return self.candidate_passed / self.candidate_runs if self.candidate_runs else None


class AgentChange(_Frozen):
    """A part of the agent configuration that differs: a setting by key and value
    (``max_turns``: 30 → 1), the system prompt by its length, or an opaque part by its digest
    (shortened; model names kept)."""

    part: str
    baseline: str | None
    candidate: str | None
    # True: the values are digests (an opaque part, or one recorded before values were);
    # False: readable values; None: a description (the prompt's length), not the part itself
    digest: bool | None = True


class ArmInfo(_Frozen):
    """Where one side of the comparison came from."""

    commit: str | None
    created_at: str
    model: str
    kind: str
    fingerprint: str
    gate_version: str
    tasks: int
    runs: int
    errors: int
    infra_rate: float
    runs_per_task: float  # median valid runs per compared task
    # how the runs were scheduled and measured (``Results.schedule``; None in older files)
    schedule: dict[str, object] | None = None
    metering: str | None = None
    # the warm starts' cache-write premium summed over the arm's runs (suite overhead, never in
    # cost per run) and the runs' total spend; None when the file does not record it
    overhead_usd: float | None = None
    spend_usd: float | None = None


class ScheduleCheck(_Frozen):
    """Whether the two arms' schedules make any metric incomparable."""

    same_metering: bool
    # schedule fields that differ; they may differ freely (docs/statistics.md)
    differs: list[str] = []
    not_comparable: list[MetricName] = []  # reported, left out of the verdict
    reason: str | None = None
    # why a metric is not comparable, where it is not the metering (an upstream's prices)
    notes: dict[str, str] = {}


class SuiteChanges(_Frozen):
    digest_changed: bool
    baseline_tasks: int
    candidate_tasks: int
    compared: int
    added: list[str]
    removed: list[str]
    changed: list[str]  # digest differs: not comparable
    unmeasured: list[str]  # no valid run in one arm
    # tasks of the suite the candidate's run could not load (or run): not run, never
    # "removed"; each counts against min_comparable, and the headline names them
    broken: list[str] = []


class PassRateTest(_Frozen):
    p_sum: float
    p_max: float
    deep_baseline: bool
    rule: str


class InfraCheck(_Frozen):
    baseline_rate: float
    candidate_rate: float
    p_value: float
    max_rate: float


class Power(_Frozen):
    detectable_drop: float | None  # fraction; None = not even a drop to 0 is seen reliably
    power: float
    alpha: float
    # the valid runs per compared task: the mean over tasks (the figure is simulated with
    # each task's own runs, never one count for all), and the fewest and most of any task
    candidate_runs: float
    baseline_runs: float
    statement: str
    candidate_runs_range: tuple[int, int] | None = None
    baseline_runs_range: tuple[int, int] | None = None


class TestReach(_Frozen):
    """What one gating test could have detected with these runs, whatever the data: the
    smallest p-value it can reach against its threshold (docs/statistics.md, "Resolution")."""

    metric: MetricName
    min_p: float | None  # None: the test does not apply (see ``note``)
    threshold: float | None
    reachable: bool  # min_p ≤ threshold: an extreme enough change would block
    effect: str  # the extreme change the figure is for ("every run failing", "a doubling")
    note: str | None = None


class Resolution(_Frozen):
    """What the comparison could have detected. ``detectable`` is False when a gating test
    could not have blocked even the most extreme change (a collapse of every task, cost ×2 on
    every run, a cache broken on every request): such a comparison is never a pass."""

    detectable: bool
    statement: str  # one line for every report
    tests: list[TestReach]
    blind: list[MetricName] = []  # gating tests that could not have blocked
    # what would make every blind test able to block: runs per task in both arms, or tasks
    runs_per_task: int | None = None
    tasks: int | None = None
    fix: str | None = None
    # gating metrics past their margin whose test could not reliably block a change of the
    # margin's size (gate/compare/_unclear.py): their power at the margin, the runs per task
    # in both arms that would settle them all (None: more than the limit), and one reason each
    unclear: list[MetricName] = []
    power_at_margin: dict[str, float] = {}
    unclear_runs: int | None = None
    unclear_reasons: list[str] = []


class SkillConditionRow(_Frozen):
    """One skill condition in both arms, over the tasks where it ran next to ``control``: its
    pass rate, its effect against ``control`` (each arm) and the change of that effect."""

    condition: str
    tasks: int  # tasks with this condition and control in both arms
    baseline_passed: int = 0
    baseline_runs: int = 0
    candidate_passed: int = 0
    candidate_runs: int = 0
    baseline_rate: float | None = None  # task-equal weight
    candidate_rate: float | None = None
    # effect = rate(condition) − rate(control), mean over tasks; None for control itself
    baseline_effect: float | None = None
    baseline_ci_low: float | None = None
    baseline_ci_high: float | None = None
    candidate_effect: float | None = None
    candidate_ci_low: float | None = None
    candidate_ci_high: float | None = None
    change: float | None = None  # candidate effect − baseline effect (difference-in-differences)
    change_ci_low: float | None = None
    change_ci_high: float | None = None
    gating: bool = False  # the row the skill-effect test decides on (``target``)


class SkillEffectTask(_Frozen):
    """One task of the skill-effect test: its (target, control) pairs in each arm."""

    task: str
    baseline_pairs: int
    candidate_pairs: int
    baseline_effect: float  # mean over pairs of pass(target) − pass(control)
    candidate_effect: float
    p_value: float  # this task alone, one-sided (reported; the decision is on all tasks)


class SkillEffect(_Frozen):
    """The skill-effect check (gate/compare/_did.py): did the target skill's effect against
    ``control`` fall, compared with the baseline's effect for the same conditions?"""

    target: str = "target"
    control: str = "control"
    conditions: list[SkillConditionRow]  # every condition in both arms, control first
    tasks: list[SkillEffectTask]  # the tasks the test used
    baseline_effect: float | None = None
    candidate_effect: float | None = None
    change: float | None = None  # the difference-in-differences (negative: the skill helps less)
    change_ci_low: float | None = None
    change_ci_high: float | None = None
    ci_level: float | None = None
    p_value: float | None = None
    threshold: float  # this test's share of α
    significant: bool = False
    blocks: bool = False
    rule: str
    note: str | None = None  # why it could not be tested, when it could not


class TaskHealth(_Frozen):
    """A task of the baseline named for its health, with why."""

    task: str
    kind: Literal["always_fails", "disagrees"]
    reason: str
    p_value: float | None = None  # Fisher's exact test, for ``disagrees``

    @property
    def line(self) -> str:
        return f"{self.task}: {self.reason}"


class PlanGroup(_Frozen):
    """Tasks the plan gave the same runs per look, for the same reason."""

    looks: list[int]  # runs in each look
    tasks: int
    why: str  # the band in words ("nearly always passes"), or why no band ("new to the baseline")


class PlanRow(_Frozen):
    task: str
    looks: list[int]
    basis: str
    # the range of the task's baseline passes under which the plan comes out the same (None:
    # the plan read no outcome of the task)
    allowed: list[int] | None = None


class PlanSpread(_Frozen):
    """How the candidate's runs were spread by its checked plan (gate/compare/_plancheck.py):
    what every report's details say."""

    rule: str
    version: int
    source: str  # "baseline", "independent" or "none" (gate/compare/_plan.py)
    looks_run: int
    runs_in_look: list[int]  # the plan's runs in each look, all tasks together
    groups: list[PlanGroup]  # most runs first
    tasks: list[PlanRow]
    # the plan read the outcomes of this comparison's baseline runs (source "baseline" and a
    # task planned by its pass rate): the tests must condition on it to stay exact
    reads_outcomes: bool = False
    # the pass-rate tests counted only the relabellings under which the baseline gives the
    # same plan
    conditioned: bool = False
    # the skill conditions' plan, in words (None: the file planned none)
    conditions: str | None = None

    def given(self) -> dict[str, tuple[int, int]]:
        """Each task's range of baseline passes the tests were given (empty when the tests
        did not condition on the plan): what every interval of the baseline is given too."""
        if not self.conditioned:
            return {}
        return {r.task: (r.allowed[0], r.allowed[1]) for r in self.tasks if r.allowed}


class Comparison(_Frozen):
    """Everything ``gate compare`` concluded. Pure data: render it, dump it, gate on it."""

    verdict: Verdict
    exit_code: int
    headline: str
    reasons: list[str]
    baseline: ArmInfo
    candidate: ArmInfo
    metrics: list[MetricResult]
    info: list[InfoMetric]
    pass_rate_test: PassRateTest | None
    infra: InfraCheck
    power: Power | None
    tasks: list[TaskChange]
    agent_changes: list[AgentChange]
    suite: SuiteChanges
    settings: dict[str, object]
    schedule: ScheduleCheck | None = None
    # what the verdict policy did on top of the test (the sequential design, the drift
    # guard; :func:`gate.compare.judge`): every report shows these lines
    notes: list[str] = []
    # the skill-effect check, when both arms ran the target and control conditions
    # (:func:`gate.compare.judge`; docs/statistics.md §9)
    skill_effect: SkillEffect | None = None
    # what the comparison could have detected (None: no comparable task); a comparison that
    # could not have blocked even a collapse is inconclusive, never a pass
    resolution: Resolution | None = None
    # both arms simulated and the change touches what only a model reads (the prompt's words,
    # tools, a skill's text): why the pass rate was not judged (gate/compare/_simjudge.py)
    unjudged: str | None = None
    # the verdict's one-line why, a few short reasons (gate/compare/_why.py): what the first
    # screen of every report says after the verdict
    why: list[str] = []
    # the baseline's tasks that carry no signal or disagree with their own history, with why
    # (gate/compare/_health.py): every report names them once, never as part of the verdict
    health: list[TaskHealth] = []
    # how the candidate's runs were spread by its plan (None: a file without a plan)
    plan: PlanSpread | None = None

    def metric(self, name: MetricName) -> MetricResult:
        return next(m for m in self.metrics if m.name == name)

    def to_json(self, indent: int | None = 2) -> str:
        return self.model_dump_json(indent=indent)
