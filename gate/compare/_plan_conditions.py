"""The plan of a run's skill conditions (issue 40, item 3; docs/statistics.md §2a, §9).

``gate ci`` on a PR that touches a skill runs skill conditions (``control``, ``target``, …)
beside the suite's plain runs, in the same session. What the plan gives them, and why:

- **Every condition the same runs on every task it applies to, from the settings alone**:
  the uniform schedule's ``replications`` (the suite's), replications 0 .. R − 1, all in the
  first look (a sequential run's later looks keep them and run none again). The rule reads
  no outcome, so it conditions nothing: the skill-effect test (gate/compare/_did.py) stays
  the exact test it is, with no plan to condition on.
- **Why not by the baseline's outcomes**: the skill-effect test compares each task's
  target − control pairs with the baseline's; pairs carry signal where the two conditions
  differ, which the plain runs' pass rate does not say (a task the agent always passes
  plainly may need the skill under ``control``). Planning the pairs from the baseline's pairs
  would make that test conditional on the plan, and its law given the plan (a restricted
  multivariate hypergeometric per task) is not built; planning them from the plain runs' band
  would spend runs by a number that is not about the skill. Until one is measured, the
  conditions keep the uniform count they had.
- **Checked like the plain runs**: the record (``plan.conditions``) names the conditions, the
  tasks and the runs; :func:`gate.compare.judge` refuses (exit 2) a runs count other than the
  rule's, a condition run the record does not plan (another condition, another task, a
  replication beyond), and a planned condition run missing without a record of why
  (gate/compare/_plancheck.py).

:func:`plan_conditions` is public and pure, like :func:`gate.compare.plan_runs`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from gate.compare._plan import PlanSettings
from gate.core.results import PlanConditions

#: what every condition plan says of its runs
BASIS = "every condition the suite's replications on every task: reads no outcome"


@dataclass(frozen=True)
class ConditionsPlan:
    """Each of ``names`` on each of ``tasks`` (where it applies): ``runs`` runs, all in the
    first look."""

    names: tuple[str, ...]
    tasks: tuple[str, ...]
    runs: int
    basis: str = BASIS

    def record(self) -> PlanConditions:
        return PlanConditions(names=list(self.names), tasks=list(self.tasks), runs=self.runs,
                              basis=self.basis)

    @classmethod
    def from_record(cls, rec: PlanConditions) -> ConditionsPlan:
        return cls(tuple(rec.names), tuple(rec.tasks), rec.runs, rec.basis)


def condition_runs(settings: PlanSettings) -> int:
    """The runs the rule gives each (task, condition): the uniform schedule's
    ``replications``, whatever the baseline passed."""
    return settings.replications


def plan_conditions(settings: PlanSettings, names: Iterable[str],
                    tasks: Iterable[str]) -> ConditionsPlan:
    """The plan of the skill conditions ``names`` on ``tasks`` under ``settings`` (module
    docstring): pure, public, and what the plan's check holds a file's condition runs to."""
    return ConditionsPlan(tuple(dict.fromkeys(names)), tuple(sorted(set(tasks))),
                          condition_runs(settings))
