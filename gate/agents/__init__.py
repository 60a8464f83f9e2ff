"""Agents: what acts on a task's workspace. One contract, one module per kind.

The builtin (``_builtin``, on the anthropic SDK) and command (``_command``) kinds are imported
only when chosen (see ``gate.run.build_agent``).
"""

from gate.agents._base import Agent, AgentOutcome, RunContext
from gate.agents._oracle import OracleAgent

__all__ = ["Agent", "AgentOutcome", "OracleAgent", "RunContext"]
