"""Compare a candidate's results with the baseline and reach a verdict (docs/statistics.md).

``compare`` is pure: two ``Results`` and the ``GateSettings`` in, a ``Comparison`` out.
Rendering it is :mod:`gate.report`'s job; acting on it (exit code, comment, label) the caller's.
"""

from gate.compare._compare import compare
from gate.compare._model import (
    AgentChange,
    ArmInfo,
    Comparison,
    InfoMetric,
    InfraCheck,
    MetricResult,
    PassRateTest,
    Power,
    ScheduleCheck,
    SuiteChanges,
    TaskChange,
    Verdict,
)

__all__ = [
    "AgentChange",
    "ArmInfo",
    "Comparison",
    "InfoMetric",
    "InfraCheck",
    "MetricResult",
    "PassRateTest",
    "Power",
    "ScheduleCheck",
    "SuiteChanges",
    "TaskChange",
    "Verdict",
    "compare",
]
