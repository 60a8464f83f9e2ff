"""Compare a candidate's results with the baseline and reach a verdict (docs/statistics.md).

``compare`` is pure: two ``Results`` and the ``GateSettings`` in, a ``Comparison`` out.
``judge`` is ``compare`` plus the gate's verdict policy (sequential looks, main's drift guard,
from a history passed in): what ``gate compare`` and ``gate ci`` both call.
Rendering it is :mod:`gate.report`'s job; acting on it (exit code, comment, label) the caller's.
"""

from gate.compare._compare import compare
from gate.compare._drift import HistoryPoint, apply_drift_guard, drift_guard
from gate.compare._effects import (
    ConditionRow,
    Effect,
    EffectReport,
    MetricEffect,
    effects,
)
from gate.compare._health import (
    ALWAYS_FAILS_MIN_RUNS,
    HISTORY_ALPHA,
    fisher_two_sided,
    suite_health,
)
from gate.compare._infra import InfraCount, infra_count, infra_rate, over_infra_limit
from gate.compare._intervals import (
    ArmStats,
    Intervals,
    TaskInterval,
    arm_stats,
    change_interval,
    intervals,
)
from gate.compare._judge import decisive_p, judge, plain_runs, planned_runs_text
from gate.compare._model import (
    AgentChange,
    ArmInfo,
    Comparison,
    InfoMetric,
    InfraCheck,
    MetricResult,
    PassRateTest,
    PlanGroup,
    PlanRow,
    PlanSpread,
    Power,
    Resolution,
    ScheduleCheck,
    SkillConditionRow,
    SkillEffect,
    SuiteChanges,
    TaskChange,
    TaskHealth,
    TestReach,
    Verdict,
)
from gate.compare._plan import (
    BANDS,
    PLAN_RULES,
    Band,
    PlanSettings,
    PlanSource,
    RunPlan,
    TaskPlan,
    look_share,
    plan_runs,
    task_looks,
)
from gate.compare._plan_conditions import ConditionsPlan, plan_conditions
from gate.compare._plancheck import checked_plan
from gate.compare._resolution import resolution_with_runs
from gate.compare._simjudge import SIM_UNJUDGED_DEFAULT, SimUnjudged, unjudged_changes
from gate.compare._stats import wilson

__all__ = [
    "ALWAYS_FAILS_MIN_RUNS",
    "BANDS",
    "HISTORY_ALPHA",
    "PLAN_RULES",
    "SIM_UNJUDGED_DEFAULT",
    "AgentChange",
    "ArmInfo",
    "ArmStats",
    "Band",
    "Comparison",
    "ConditionRow",
    "ConditionsPlan",
    "Effect",
    "EffectReport",
    "HistoryPoint",
    "InfoMetric",
    "InfraCheck",
    "InfraCount",
    "Intervals",
    "MetricEffect",
    "MetricResult",
    "PassRateTest",
    "PlanGroup",
    "PlanRow",
    "PlanSettings",
    "PlanSource",
    "PlanSpread",
    "Power",
    "Resolution",
    "RunPlan",
    "ScheduleCheck",
    "SimUnjudged",
    "SkillConditionRow",
    "SkillEffect",
    "SuiteChanges",
    "TaskChange",
    "TaskHealth",
    "TaskInterval",
    "TaskPlan",
    "TestReach",
    "Verdict",
    "apply_drift_guard",
    "arm_stats",
    "change_interval",
    "checked_plan",
    "compare",
    "decisive_p",
    "drift_guard",
    "effects",
    "fisher_two_sided",
    "infra_count",
    "infra_rate",
    "intervals",
    "judge",
    "look_share",
    "over_infra_limit",
    "plain_runs",
    "plan_conditions",
    "plan_runs",
    "planned_runs_text",
    "resolution_with_runs",
    "suite_health",
    "task_looks",
    "unjudged_changes",
    "wilson",
]
