from __future__ import annotations

from gate.agents._base import Agent, AgentOutcome, RunContext
from gate.sandbox import Sandbox, clip

NO_SOLUTION = "no-solution: the task has no solution/solve.sh"


class OracleAgent(Agent):
    """Runs the task's reference solution; no model. Its stdout is its final message."""

    kind = "oracle"

    def run(self, sandbox: Sandbox, ctx: RunContext) -> AgentOutcome:
        script = ctx.task.solution_script
        if script is None:
            return AgentOutcome(infra_error=NO_SOLUTION)
        res = sandbox.run_script("solution/solve.sh", timeout=ctx.timeout)
        ctx.record({"type": "oracle", "returncode": res.returncode,
                    "stdout": clip(res.stdout, 8000), "stderr": clip(res.stderr, 8000)})
        if res.timed_out:
            return AgentOutcome(final_message=res.stdout, failure="timeout: agent")
        if res.returncode != 0:
            tail = (res.stderr.strip().splitlines() or ["(no output)"])[-1]
            return AgentOutcome(final_message=res.stdout,
                                failure=f"solution exited {res.returncode}: {tail[:200]}")
        return AgentOutcome(final_message=res.stdout.strip())

    def model_label(self) -> str:
        return "oracle (no model)"
