from __future__ import annotations

import abc
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from gate.core.tasks import Task
from gate.sandbox import AgentInstall, Sandbox
from gate.upstream import ANTHROPIC, Upstream

if TYPE_CHECKING:
    from gate.core.skills import Skill


@dataclass
class RunContext:
    """What an agent gets to know about the run it is part of."""

    task: Task
    replication: int
    run_name: str
    timeout: float
    max_turns: int | None = None
    # Where the agent reaches the model, through the meter: a per-run URL and token.
    base_url: str | None = None
    api_key: str | None = None
    # the upstream behind the meter: what a command agent's environment holds to reach it
    upstream: Upstream = ANTHROPIC
    # Appends one JSON-able event to the run's transcript (already redacted by the runner).
    record: Callable[[dict[str, Any]], None] = lambda event: None
    # the skills installed for this run (at .claude/skills/<name>/ in the workspace; a Harbor
    # task's in the agent user's ~/.claude/skills: each one's workspace_path says where)
    skills: tuple[Skill, ...] = ()


@dataclass
class AgentOutcome:
    """How the agent's part of a run ended.

    ``final_message`` is the agent's last assistant message. ``failure`` marks a task failure
    the agent itself caused (ran out of turns or time); ``infra_error`` marks something that
    was not the agent's fault (model API down after retries) and makes the run an error.
    """

    final_message: str = ""
    failure: str | None = None
    infra_error: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


class Agent(abc.ABC):
    kind: str = "agent"
    # what is installed into the task's image before its runs ([agent] install; a command
    # agent's): the sandbox does it, once per image and script, outside the run's time
    install: AgentInstall | None = None

    @abc.abstractmethod
    def run(self, sandbox: Sandbox, ctx: RunContext) -> AgentOutcome:
        """Work on ``ctx.task`` inside ``sandbox`` until done, out of turns, or out of time."""

    def model_label(self) -> str:
        """What the results' ``model`` field says for runs of this agent."""
        return self.kind
