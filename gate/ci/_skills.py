"""Skill conditions in ``gate ci`` (docs/github.md, "In CI"): which conditions a run adds to
the suite, and the one results file the judge and the refresh read.

- **A pull request that touches a skill** (a file under ``[agent].skills`` changed against the
  base) runs, besides the suite, the conditions of the tasks whose ``target_skill`` changed:
  the conditions the base branch's baseline keeps when it keeps any (so the skill-effect test
  has both sides), else the standard ones (the table is shown, nothing is tested).
- **The main refresh** runs the conditions the baseline keeps, plus ``control`` and
  ``target`` once ``[agent].skills`` is set and a task names its target skill, on the tasks
  that name one; the baseline pools them per (task, condition) like the plain runs.

Conditions run as arms of the suite's session (``RunRequest.beside``: one pool, one meter, one
budget, one journal and one results file with the plain runs; the conditions of a replication
side by side): the baseline gate compares the plain runs, the skill-effect test the conditions
(gate/compare/_judge.py).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from gate import _git
from gate.core.config import GateConfig
from gate.core.results import Results
from gate.core.skills import (
    CONTROL,
    STANDARD_CONDITIONS,
    TARGET,
    Skill,
    config_skills,
    skills_for,
    task_skills,
)
from gate.core.tasks import Task, load_suite
from gate.errors import BadInput
from gate.execution.run import ConditionArms, RunRequest

#: what the main refresh keeps once the agent has skills: the two the skill-effect test needs
REFRESH_CONDITIONS = (CONTROL, TARGET)


@dataclass(frozen=True)
class ConditionPlan:
    """The conditions a CI run adds, on which tasks, and why (for the log and the comment)."""

    conditions: list[str]
    tasks: list[str]
    why: str


def kept_conditions(baseline: Results | None) -> list[str]:
    """The conditions a baseline keeps (runs of), in a stable order."""
    if baseline is None:
        return []
    names = {r.condition for r in baseline.runs if r.condition is not None}
    rank = {c: i for i, c in enumerate(STANDARD_CONDITIONS)}
    return sorted(names, key=lambda c: (rank.get(c, len(rank)), c))


def skills_rel(cfg: GateConfig, root: Path) -> str | None:
    """``[agent].skills`` relative to the repository's root (None: not set, or outside it)."""
    if not cfg.agent.skills:
        return None
    try:
        return _git.repo_relative(root, cfg.agent_path("skills")).rstrip("/")
    except BadInput:
        return None


def changed_skills(files: Sequence[str], rel: str) -> list[str]:
    """Names of the skills (first folder under ``rel``) the changed ``files`` touch."""
    prefix = "" if rel in ("", ".") else rel + "/"
    names = {f[len(prefix):].split("/", 1)[0] for f in files
             if f.startswith(prefix) and "/" in f[len(prefix):]}
    return sorted(names)


def _applies(task: Task, condition: str, skills: Sequence[Skill], cfg: GateConfig) -> bool:
    try:
        return skills_for(task, condition, skills, cfg.conditions) is not None
    except BadInput:
        return False  # a kept overlay the checkout no longer defines, a skill it dropped


def _plan(tasks: Sequence[Task], wanted: Sequence[str], skills: Sequence[Skill],
          cfg: GateConfig, why: str) -> ConditionPlan | None:
    """``wanted`` restricted to those that apply to one of ``tasks``; None when no task gets
    both ``control`` and another condition (no effect to show)."""
    conditions = [c for c in wanted if any(_applies(t, c, skills, cfg) for t in tasks)]
    runs = [t.id for t in tasks
            if _applies(t, CONTROL, skills, cfg)
            and any(c != CONTROL and _applies(t, c, skills, cfg) for c in conditions)]
    if CONTROL not in conditions or not runs or len(conditions) < 2:
        return None
    return ConditionPlan(conditions, runs, why)


def _targeting(cfg: GateConfig, tasks_dir: Path, skills: Sequence[Skill],
               names: Callable[[str], bool]) -> list[Task]:
    suite = load_suite(tasks_dir)
    out = []
    for t in suite.tasks:
        try:
            target = task_skills(t, skills).target
        except BadInput:
            continue  # a task naming a skill the agent lacks gets no skill conditions
        if target is not None and names(target):
            out.append(t)
    return out


def pr_plan(cfg: GateConfig, tasks_dir: Path, changed: Sequence[str],
            baseline: Results | None) -> ConditionPlan | None:
    """What a PR that touches ``changed`` skills runs besides the suite (None: nothing)."""
    if not changed:
        return None
    skills = config_skills(cfg)
    tasks = _targeting(cfg, tasks_dir, skills, lambda name: name in changed)
    kept = kept_conditions(baseline)
    if kept:
        why = (f"the PR changes the skill{'s' if len(changed) > 1 else ''} "
               f"{', '.join(changed)}: the conditions the baseline keeps")
        return _plan(tasks, kept, skills, cfg, why)
    why = (f"the PR changes the skill{'s' if len(changed) > 1 else ''} {', '.join(changed)}: "
           "the standard conditions (the baseline keeps none, so nothing is tested)")
    return _plan(tasks, list(STANDARD_CONDITIONS), skills, cfg, why)


def refresh_plan(cfg: GateConfig, tasks_dir: Path,
                 baseline: Results | None) -> ConditionPlan | None:
    """What the main refresh runs besides the suite (None: nothing)."""
    if not cfg.agent.skills:
        return None
    skills = config_skills(cfg)
    tasks = _targeting(cfg, tasks_dir, skills, lambda _name: True)
    wanted = list(dict.fromkeys([*kept_conditions(baseline), *REFRESH_CONDITIONS]))
    return _plan(tasks, wanted, skills, cfg,
                 "the conditions the baseline keeps, and the skill-effect test's two")


def condition_request(req: RunRequest, plan: ConditionPlan) -> RunRequest:
    """The suite's run request with the plan's conditions beside its plain runs, on the plan's
    tasks, each replicated as the suite is configured (whatever look of it runs first)."""
    return dataclasses.replace(req, beside=ConditionArms(
        tuple(plan.conditions), tuple(plan.tasks),
        req.replications or req.config.suite.replications))
