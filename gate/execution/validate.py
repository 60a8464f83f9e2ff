"""``gate validate``: a task is sound when verify FAILS untouched and PASSES after the oracle.

A task without a reference solution (``solution/solve.sh``; the effectiveness layout has none by
design) cannot prove it is solvable, and is not called broken for that: its verify is checked
for failing untouched only, and the check says so (:data:`NO_ORACLE`). A multi-step task's
reference solutions are its steps' (``steps/<name>/solution/solve.sh``, as ``gate run --agent
oracle`` and Harbor's oracle run them): each step is verified after its own; a step without one
is named in the note, and the oracle is not run (it would stop at that step).
"""

from __future__ import annotations

from dataclasses import dataclass

from gate.agents import Agent, AgentOutcome, OracleAgent, RunContext
from gate.core.tasks import Suite, Task
from gate.execution.runner import RunOptions, run_one
from gate.sandbox import Sandbox, SandboxOptions, SandboxProvider, open_provider

FALSE_POSITIVE = "verify passes without any work — false positive"
NOT_SOLVABLE = "task not solvable as written"
NO_ORACLE = "no oracle: verify checked only for failing untouched"


class IdleAgent(Agent):
    """Does nothing and says nothing: the untouched workspace."""

    kind = "idle"

    def run(self, sandbox: Sandbox, ctx: RunContext) -> AgentOutcome:
        return AgentOutcome(final_message="")


@dataclass(frozen=True)
class TaskCheck:
    task: str
    untouched: str  # "fails" (good), "passes", "error"
    oracle: str  # "passes" (good), "fails", "error", "missing"
    problem: str | None
    note: str | None = None  # what was not checked (no oracle), on a sound task
    #: the run's notes about skills: one the gate could not honour, a SKILL.md elsewhere
    skill_notes: tuple[str, ...] = ()

    @property
    def sound(self) -> bool:
        return self.problem is None


def missing_oracles(task: Task) -> list[str]:
    """What has no reference solution: the steps of a multi-step task without their own
    ``solution/solve.sh``, else ``[task.id]`` when the task has none; ``[]`` when every part
    has one."""
    if task.steps:
        return [s.name for i, s in enumerate(task.steps)
                if task.for_step(i).solution_script is None]
    return [] if task.solution_script is not None else [task.id]


def _steps_named(task: Task, missing: list[str]) -> str:
    if not task.steps or len(missing) == len(task.steps):
        return ""
    return f" (no steps/<name>/solution/solve.sh for step {', '.join(map(repr, missing))})"


def _skill_notes(notes: str | None) -> tuple[str, ...]:
    """The gate's lines about skills in a run's notes (:mod:`gate.core.skills`, the sandbox's)."""
    return tuple(ln.removeprefix("gate: ") for ln in (notes or "").splitlines()
                 if ln.startswith(("gate: skill ", "gate: SKILL.md ", "gate: the image's "
                                   "search for SKILL.md")))


def validate_suite(
    suite: Suite, *, provider: SandboxProvider | None = None, options: RunOptions | None = None
) -> list[TaskCheck]:
    """Check every task of ``suite`` in ``provider``'s sandboxes (default: the local backend,
    container tasks in docker when an engine is reachable)."""
    if provider is None:
        with open_provider("local", SandboxOptions()) as default:
            return validate_suite(suite, provider=default, options=options)
    checks = [
        TaskCheck(p.name, "error", "error", f"cannot load: {p.reason}") for p in suite.problems
    ]
    for task in suite.tasks:
        if why := provider.refusal(task):
            checks.append(TaskCheck(task.id, "error", "error", f"cannot run here: {why}"))
            continue
        idle = run_one(task, 0, IdleAgent(), provider=provider, options=options)
        untouched = {"passed": "passes", "failed": "fails"}.get(idle.status, "error")
        problem: str | None = None
        if idle.status == "passed":
            problem = FALSE_POSITIVE
        elif idle.status == "error":
            problem = f"untouched workspace: {idle.reason}"
        note: str | None = None
        if missing := missing_oracles(task):
            oracle, note = "missing", NO_ORACLE + _steps_named(task, missing)
        else:
            res = run_one(task, 0, OracleAgent(), provider=provider, options=options)
            oracle = {"passed": "passes", "failed": "fails"}.get(res.status, "error")
            if res.status != "passed":
                problem = problem or f"{NOT_SOLVABLE}: {res.reason}"
        checks.append(TaskCheck(task.id, untouched, oracle, problem, note,
                                skill_notes=_skill_notes(idle.notes)))
    return sorted(checks, key=lambda c: c.task)
