"""The builtin reference agent: a tool loop on the ``anthropic`` SDK with prompt caching.

Caching follows the design: a breakpoint on the last tool, one on the last system block, and a
moving breakpoint on the newest conversation turn, so every request re-reads the whole
conversation so far from cache and writes only the new turn. Never more than 3 breakpoints.
The system prompt is a Jinja2 template rendered for *every* request (``task_id``, ``workdir``,
``date``, ``now``), as real agents do: a per-request value in it really changes the prefix.

Skills (the run's condition's, installed at ``.claude/skills/<name>/``) are offered by
progressive disclosure: a second system block, after the configured prompt and the same for
every request of the run, lists each skill's name, description and the path of its
``SKILL.md``; the model reads the full file on demand with its tools.
"""

from __future__ import annotations

import contextlib
import importlib
import math
import random
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from html import escape
from typing import TYPE_CHECKING, Any

import anthropic
import jinja2

from gate.agents._base import Agent, AgentOutcome, RunContext
from gate.agents._prompt import DEFAULT_SYSTEM_PROMPT, compile_prompt, render
from gate.agents._tools import TOOLS, run_tool
from gate.sandbox import Sandbox

if TYPE_CHECKING:
    from gate.core.skills import Skill

NOT_RETRYABLE = {400, 401, 403, 404, 413}
SKILLS_INTRO = (
    "# Skills\n"
    "Skills are folders of instructions, scripts and references for particular kinds of work. "
    "Each skill below has a name, a description of when to use it, and the path of its SKILL.md "
    "(relative to your working directory). When the task matches a skill's description, read "
    "that SKILL.md in full {how} before you start, and follow it; open the other files it "
    "mentions only when you need them.\n")


def skills_block(skills: Sequence[Skill], how: str = "with `read_file`") -> str:
    """The system prompt's list of skills: names, descriptions, where each SKILL.md is. Names
    are safe by their pattern; a description holds no tags (gate.core.skills), its ``&<>`` are
    escaped."""
    items = "".join(
        f"<skill>\n<name>{s.name}</name>\n<description>{escape(s.description, quote=False)}"
        f"</description>\n<location>{s.workspace_path}</location>\n</skill>\n"
        for s in sorted(skills, key=lambda s: s.name))
    return f"{SKILLS_INTRO.format(how=how)}\n<available_skills>\n{items}</available_skills>\n"


def _transport_errors() -> tuple[type[Exception], ...]:
    """The HTTP library's own errors, which the SDK lets escape when a stream breaks."""
    found: list[type[Exception]] = [anthropic.APIError]
    for name in ("httpx", "httpx2"):
        with contextlib.suppress(ImportError, AttributeError):
            found.append(importlib.import_module(name).HTTPError)
    return tuple(found)


TRANSPORT_ERRORS = _transport_errors()


def _json_safe(value: Any) -> Any:
    """``value`` with every non-finite float (a tool input of ``1e400`` parses as inf) turned
    into its text, so the history can be sent back as JSON and the tool reports the error."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, dict):
        return {k: _json_safe(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_json_safe(v) for v in value]
    return value


class BuiltinAgent(Agent):
    kind = "builtin"

    def __init__(
        self,
        *,
        model: str,
        system_template: str = DEFAULT_SYSTEM_PROMPT,
        tools: list[str] | None = None,
        max_turns: int = 30,
        max_tokens: int = 4096,
        cache: str = "5m",
        temperature: float | None = None,
        top_p: float | None = None,
        attempts: int = 5,
        backoff_s: float = 0.5,
        label: str | None = None,
    ) -> None:
        unknown = [t for t in (tools or list(TOOLS)) if t not in TOOLS]
        if unknown:
            raise ValueError(f"unknown tool {unknown[0]!r} (known: {', '.join(TOOLS)})")
        self.model = model
        self.tools = [TOOLS[t] for t in (tools if tools is not None else list(TOOLS))]
        self.max_turns = max_turns
        self.max_tokens = max_tokens
        self.cache = cache
        self.sampling = {k: v for k, v in (("temperature", temperature), ("top_p", top_p))
                         if v is not None}
        self.attempts = attempts
        self.backoff_s = backoff_s
        self._label = label or model
        # checked and tried now (bad configuration, exit 2); rendered in Jinja's sandbox
        self._template = compile_prompt(system_template)

    def model_label(self) -> str:
        return self._label

    # -- request shaping ------------------------------------------------------------------
    def _marker(self) -> dict[str, str] | None:
        if self.cache == "off":
            return None
        return {"type": "ephemeral", "ttl": self.cache}

    def _system(self, ctx: RunContext, workdir: str) -> list[dict[str, Any]]:
        now = datetime.now(UTC)
        text = render(self._template, {"task_id": ctx.task.id, "workdir": workdir,
                                       "date": now.strftime("%Y-%m-%d"),
                                       "now": now.isoformat()})
        blocks: list[dict[str, Any]] = [{"type": "text", "text": text}]
        if ctx.skills:  # after the configured prompt, the same on every request: cached
            how = ("with `read_file`" if any(t.name == "read_file" for t in self.tools)
                   else "with your tools (e.g. `cat`)")
            blocks.append({"type": "text", "text": skills_block(ctx.skills, how)})
        if (m := self._marker()):
            blocks[-1]["cache_control"] = m
        return blocks

    def _tool_schemas(self) -> list[dict[str, Any]]:
        schemas = [t.schema() for t in self.tools]
        if schemas and (m := self._marker()):
            schemas[-1] = {**schemas[-1], "cache_control": m}
        return schemas

    def _messages(self, history: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The history with one moving breakpoint on the newest turn's last block."""
        msgs = [dict(m) for m in history]
        m = self._marker()
        if m and msgs:
            last = msgs[-1]
            content = last["content"]
            blocks: list[dict[str, Any]] = (
                [{"type": "text", "text": content}] if isinstance(content, str)
                else [dict(b) for b in content])
            blocks[-1]["cache_control"] = m
            last["content"] = blocks
        return msgs

    # -- the loop -------------------------------------------------------------------------
    def _call(self, client: anthropic.Anthropic, params: dict[str, Any],
              deadline: float) -> Any:
        """One model turn, streamed. This is the one retry layer (the SDK's is off): it also
        covers failures that arrive mid-stream, honours ``retry-after``, never retries a 429
        without one (a spend limit), and never waits past the run's deadline."""
        last: Exception | None = None
        for attempt in range(self.attempts):
            remaining = deadline - time.monotonic()
            if remaining <= 1:
                break
            delay = min(self.backoff_s * 2 ** attempt, 8.0) * (0.5 + random.random() / 2)
            try:
                with client.with_options(timeout=min(300.0, remaining)).messages.stream(
                        **params) as stream:
                    return stream.get_final_message()
            except anthropic.APIStatusError as exc:
                after = exc.response.headers.get("retry-after")
                if exc.status_code in NOT_RETRYABLE or (exc.status_code == 429 and not after):
                    raise
                with contextlib.suppress(ValueError, TypeError):
                    delay = min(float(after), 60.0) if after else delay
                last = exc
            except TRANSPORT_ERRORS as exc:  # connection, an `error` event, a broken stream
                last = exc
            time.sleep(max(0.0, min(delay, deadline - time.monotonic() - 1)))
        if last is None:
            raise TimeoutError("no time left for a model request")
        raise last

    def run(self, sandbox: Sandbox, ctx: RunContext) -> AgentOutcome:
        if not ctx.base_url or not ctx.api_key:
            return AgentOutcome(infra_error="builtin agent needs the meter's URL and token")
        # the meter is on the gate's loopback: the environment's HTTP(S)_PROXY (set for the
        # real API, which the meter reaches) must not capture this hop
        client = ctx.upstream.sdk_client(
            ctx.base_url, ctx.api_key, max_retries=0, timeout=300,
            http_client=anthropic.DefaultHttpxClient(trust_env=False))
        deadline = time.monotonic() + ctx.timeout
        max_turns = ctx.max_turns or self.max_turns
        history: list[dict[str, Any]] = [{"role": "user", "content": ctx.task.prompt}]
        final_text = ""
        try:
            for turn in range(1, max_turns + 1):
                if time.monotonic() > deadline:
                    return AgentOutcome(final_message=final_text, failure="timeout: agent")
                params: dict[str, Any] = {
                    "model": ctx.upstream.agent_model(self.model),
                    "max_tokens": self.max_tokens,
                    "system": self._system(ctx, sandbox.workdir),
                    "tools": self._tool_schemas(), "messages": self._messages(history),
                    **self.sampling,
                }
                try:
                    msg = self._call(client, params, deadline)
                except TimeoutError:
                    return AgentOutcome(final_message=final_text, failure="timeout: agent")
                content = [_json_safe(b.model_dump(exclude_none=True, warnings=False))
                           for b in msg.content]
                history.append({"role": "assistant", "content": content})
                texts = [b["text"] for b in content if b.get("type") == "text"]
                if texts:
                    final_text = "\n".join(texts)
                ctx.record({"type": "model", "turn": turn, "stop_reason": msg.stop_reason,
                            "usage": msg.usage.model_dump(), "content": content})
                uses = [b for b in content if b.get("type") == "tool_use"]
                if not uses:
                    return AgentOutcome(final_message=final_text)
                results = []
                for use in uses:
                    tool = next((t for t in self.tools if t.name == use["name"]), None)
                    if tool is None:
                        output, is_error = f"unknown tool {use['name']!r}", True
                    else:
                        output, is_error = run_tool(tool, sandbox, use.get("input") or {},
                                                    max(deadline - time.monotonic(), 1.0))
                    ctx.record({"type": "tool", "name": use["name"], "input": use.get("input"),
                                "output": output, "is_error": is_error})
                    results.append({"type": "tool_result", "tool_use_id": use["id"],
                                    "content": output, **({"is_error": True} if is_error else {})})
                history.append({"role": "user", "content": results})
        except jinja2.TemplateError as exc:  # the prompt's own error: the agent's failure
            return AgentOutcome(final_message=final_text,
                                failure=f"system prompt: template error: {str(exc)[:200]}")
        except TRANSPORT_ERRORS as exc:
            status = getattr(exc, "status_code", None)
            return AgentOutcome(final_message=final_text, infra_error=(
                f"model API failed after retries: {type(exc).__name__}"
                + (f" {status}" if status else "") + f": {str(exc)[:200]}"))
        finally:
            client.close()
        return AgentOutcome(final_message=final_text, failure=f"max_turns ({max_turns}) reached")
