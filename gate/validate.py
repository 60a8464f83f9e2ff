"""``gate validate``: a task is sound when verify FAILS untouched and PASSES after the oracle.

A task without a reference solution (``solution/solve.sh``; the effectiveness layout has none by
design) cannot prove it is solvable, and is not called broken for that: its verify is checked
for failing untouched only, and the check says so (:data:`NO_ORACLE`).

The keys of a foreign ``task.toml`` the gate does not honour are listed after the checks, but
only those that could matter (:func:`notable_unhonoured`): a key left empty, or set to the
value Harbor itself defaults to (Harbor's ``EnvironmentConfig`` in
``src/harbor/models/task/config.py``: ``storage_mb = 10240``, no ``gpu_types``, no
``mcp_servers``), asks for nothing a run here lacks, and listing it on nearly every task hid
the keys that do.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from gate.agents import Agent, AgentOutcome, OracleAgent, RunContext
from gate.runner import RunOptions, run_one
from gate.sandbox import Sandbox, SandboxOptions, SandboxProvider, open_provider
from gate.tasks import Suite, Task

FALSE_POSITIVE = "verify passes without any work — false positive"
NOT_SOLVABLE = "task not solvable as written"
NO_ORACLE = "no oracle: verify checked only for failing untouched"


#: Harbor's defaults for keys the gate lists as not honoured (a value equal to one asks nothing)
HARBOR_DEFAULTS: dict[str, Any] = {
    "environment.storage_mb": 10240,
    "environment.storage": 10240,  # the legacy size string, in MB ("10G")
    "environment.gpu_types": None,
    "environment.mcp_servers": [],
    "environment.skills_dir": None,
    "environment.healthcheck": None,
}
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([GMK])\s*$", re.IGNORECASE)


def _size_mb(value: Any) -> Any:
    """Harbor's legacy size strings (``"10G"``, ``"512M"``) in MB; anything else as it is."""
    m = _SIZE.match(value) if isinstance(value, str) else None
    if m is None:
        return value
    return int(float(m.group(1)) * {"G": 1024, "M": 1, "K": 1 / 1024}[m.group(2).upper()])


def _value(task: Task, dotted: str) -> tuple[bool, Any]:
    """The raw value of a listed key (``section.key`` or ``key``), if it can be found."""
    node: Any = task.harbor.config if task.harbor is not None else None
    for part in dotted.split("."):
        if node is None:
            return False, None
        extra = getattr(node, "model_extra", None) or {}
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif part in extra:
            node = extra[part]
        elif part in getattr(type(node), "model_fields", {}):
            node = getattr(node, part)
        elif f"{part}_mb" in getattr(type(node), "model_fields", {}):  # legacy "10G", converted
            node = getattr(node, f"{part}_mb")
        else:
            return False, None
    return True, node


def notable_unhonoured(task: Task) -> list[str]:
    """The task's unhonoured keys worth a note: not empty, not at Harbor's own default."""
    out = []
    for key in task.unhonoured:
        found, value = _value(task, key)
        if found and (value in (None, "", [], {}) or (
                key in HARBOR_DEFAULTS and _size_mb(value) == HARBOR_DEFAULTS[key])):
            continue
        out.append(key)
    return out


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

    @property
    def sound(self) -> bool:
        return self.problem is None


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
        if task.solution_script is None:
            oracle, note = "missing", NO_ORACLE
        else:
            res = run_one(task, 0, OracleAgent(), provider=provider, options=options)
            oracle = {"passed": "passes", "failed": "fails"}.get(res.status, "error")
            if res.status != "passed":
                problem = problem or f"{NOT_SOLVABLE}: {res.reason}"
        checks.append(TaskCheck(task.id, untouched, oracle, problem, note))
    return sorted(checks, key=lambda c: c.task)
