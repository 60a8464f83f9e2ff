"""Agents: what acts on a task's workspace. One contract, one module per kind.

Kinds are registered by name; heavy SDKs are imported only by the kind that uses them.
"""

from gate.agents._base import Agent, AgentOutcome, RunContext
from gate.agents._oracle import OracleAgent

__all__ = ["Agent", "AgentOutcome", "OracleAgent", "RunContext"]
