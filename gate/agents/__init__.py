"""Agents: what acts on a task's workspace. One contract, one module per kind.

Kinds are registered by name (``gate.agents._kinds``) and chosen by ``[agent].kind``; the
builtin (``_builtin``, on the anthropic SDK) and command (``_command``) agents are imported
only when built.
"""

from gate.agents._base import Agent, AgentOutcome, RunContext
from gate.agents._kinds import (
    AgentKind,
    agent_kind,
    agent_kind_names,
    register_agent_kind,
)
from gate.agents._oracle import OracleAgent
from gate.agents._parts import system_prompt_text

__all__ = [
    "Agent",
    "AgentKind",
    "AgentOutcome",
    "OracleAgent",
    "RunContext",
    "agent_kind",
    "agent_kind_names",
    "register_agent_kind",
    "system_prompt_text",
]
