"""The command agent: any agent process (Claude Code, a team's own script), metered from outside.

It runs with cwd = workspace and gets the prompt on stdin and in ``$GATE_PROMPT_FILE``,
``GATE_TASK_ID`` / ``GATE_REPLICATION``, and the upstream's client variables (``agent_env`` of
gate/upstream: a base URL and a key) pointing at this run's slice of the meter (a per-run token,
never the real key), and its model variable when ``[agent] model`` is set. Its final
message is what it writes to ``$GATE_FINAL_FILE``, else its stdout — and when stdout is a
Claude Code ``--output-format json`` result, that result's ``result`` text.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence

from gate.agents._base import Agent, AgentOutcome, RunContext
from gate.errors import BadInput
from gate.sandbox import Sandbox, clip
from gate.secrets import credential_reason, is_secret_name

PROMPT_FILE = ".runner/prompt.md"
FINAL_FILE = ".runner/agent-final.txt"
FINAL_LIMIT = 1_000_000  # bytes of the agent's final message


def loopback_no_proxy(environ: Mapping[str, str]) -> dict[str, str]:
    """``NO_PROXY``/``no_proxy`` for an agent process: the inherited value plus the loopback
    hosts, so an HTTP(S)_PROXY set for the real API does not capture the agent→meter hop.
    Given to the child explicitly; the gate's own environment is never rewritten."""
    out = {}
    for var in ("NO_PROXY", "no_proxy"):
        have = [h for h in environ.get(var, "").split(",") if h.strip()]
        out[var] = ",".join([*have, *(h for h in ("127.0.0.1", "localhost") if h not in have)])
    return out


def final_from_stdout(stdout: str) -> str:
    text = stdout.strip()
    if text.startswith("{"):
        try:
            data = json.loads(text)
        except ValueError:
            return text
        if isinstance(data, dict) and isinstance(data.get("result"), str):
            return data["result"]
    return text


class CommandAgent(Agent):
    kind = "command"

    def __init__(self, command: str, *, model: str | None = None,
                 passthrough: Sequence[str] = (), label: str | None = None) -> None:
        if not command.strip():
            raise BadInput("[agent].command is empty")
        bad = [n for n in passthrough if is_secret_name(n)
               or credential_reason(n, os.environ.get(n, ""))]
        if bad:
            raise BadInput(f"[agent].env: {bad[0]} looks like a credential; the gate never "
                           "passes credentials to agents (the meter holds the only key)")
        self.command = command
        self.model = model
        self.passthrough = list(passthrough)
        self._label = label or model or "command"

    def model_label(self) -> str:
        return self._label

    def run(self, sandbox: Sandbox, ctx: RunContext) -> AgentOutcome:
        sandbox.write_file(PROMPT_FILE, ctx.task.prompt)
        env = {k: os.environ[k] for k in self.passthrough if k in os.environ}
        env.update({  # where the sandbox keeps them, as a command inside it sees the paths
            "GATE_PROMPT_FILE": sandbox.path_of(PROMPT_FILE),
            "GATE_FINAL_FILE": sandbox.path_of(FINAL_FILE),
            "GATE_TASK_ID": ctx.task.id,
            "GATE_REPLICATION": str(ctx.replication),
        })
        if ctx.base_url and ctx.api_key:  # the upstream's variables, aimed at the meter
            env.update({**ctx.upstream.agent_env(sandbox.model_endpoint(ctx.base_url),
                                                 ctx.api_key),
                        **loopback_no_proxy(os.environ)})
        if self.model:
            env.update(ctx.upstream.model_env(self.model))
        res = sandbox.exec(self.command, timeout=ctx.timeout, env=env, stdin=ctx.task.prompt)
        ctx.record({"type": "command", "returncode": res.returncode, "timed_out": res.timed_out,
                    "stdout": clip(res.stdout, 8000), "stderr": clip(res.stderr, 8000)})
        try:
            final = sandbox.read_file(FINAL_FILE, max_bytes=FINAL_LIMIT, truncate=True).strip()
        except OSError:
            final = ""
        final = final or final_from_stdout(res.stdout)
        if res.timed_out:
            return AgentOutcome(final_message=final, failure="timeout: agent")
        if res.returncode != 0:
            tail = (res.stderr.strip().splitlines() or ["(no stderr)"])[-1][:200]
            return AgentOutcome(final_message=final,
                                failure=f"agent exited {res.returncode}: {tail}")
        return AgentOutcome(final_message=final)
