"""Agent kinds: registered implementations of one interface, chosen by ``[agent].kind``.

A kind says how to build its agent from ``gate.toml``, which parts of the configuration make
up its fingerprint, whether it talks to a model (and so needs the meter), and whether its own
process runs inside the sandbox (and so must reach the meter from there). The builtin and
command agents are imported only when built.
"""

from __future__ import annotations

import abc
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from gate._files import printable
from gate.agents._base import Agent
from gate.errors import BadInput

if TYPE_CHECKING:
    from gate.core.config import GateConfig
    from gate.core.skills import Skill
    from gate.core.tasks import Task

#: the working directory a prefix is counted with (a container's; a local run's is a path of
#: about the same length)
PREFIX_WORKDIR = "/workspace"


class AgentKind(abc.ABC):
    name: ClassVar[str]
    uses_model: ClassVar[bool] = True  # talks to a model through the meter
    in_sandbox: ClassVar[bool] = False  # its own process runs inside the sandbox
    #: the fingerprint covers all the agent does (its code is the gate's own): the same
    #: fingerprint is the same agent. Not so for a command agent, whose code it cannot see.
    self_contained: ClassVar[bool] = False
    #: it runs the agent ``[agent]`` configures (False: the oracle, which runs the suite's own
    #: reference solutions and reads no ``[agent]`` key, so nothing there can be wrong for it)
    configured: ClassVar[bool] = True

    @abc.abstractmethod
    def build(self, cfg: GateConfig, model: str, label: str) -> Agent:
        """The agent; bad configuration is ``BadInput`` (exit 2) before anything runs."""

    @abc.abstractmethod
    def fingerprint_parts(self, cfg: GateConfig) -> dict[str, str]:
        """Named hashes of what defines this kind's behaviour (besides the skills)."""

    def fingerprint_values(self, cfg: GateConfig) -> dict[str, dict[str, object]]:
        """What some of those parts hash, readably (``sampling``: its settings; ``prompt``:
        its length, never its text), recorded so a comparison can say ``max_turns: 30 → 1``
        instead of two digests. A part left out is shown as its digest."""
        return {}

    def installs(self, cfg: GateConfig) -> bool:
        """Whether ``[agent] install`` is done into each task's image for this kind (only a
        command agent's runs there; the others ignore it)."""
        return False

    def skills_prompt_bytes(self, skills: Sequence[Skill]) -> int | None:
        """What ``skills`` add to every model request's prompt, in bytes (recorded per skill
        condition); ``None``: this kind does not say."""
        return None

    def cache_prefix(self, agent: Agent, task: Task,
                     skills: Sequence[Skill] = ()) -> dict[str, Any] | None:
        """The part every request of ``agent``'s runs of ``task`` (offered ``skills``) shares
        and asks the API to cache (a Messages request's ``model``, ``tools`` and ``system``,
        as the first request sends them), or None: the agent caches nothing on purpose, or
        the gate does not know its requests (a command agent's are its own): then nothing is
        said of them."""
        return None


_KINDS: dict[str, AgentKind] = {}


def register_agent_kind(kind: AgentKind) -> None:
    _KINDS[kind.name] = kind


def agent_kind_names() -> list[str]:
    return sorted(_KINDS)


def agent_kind(name: str, where: str | None = None) -> AgentKind:
    """The registered kind ``name``. The name is checked here, where it is looked up (config
    imports no registry): an unknown one is ``BadInput``, prefixed with ``where`` (the file
    and field that named it, e.g. ``gate.toml: agent.kind``)."""
    try:
        return _KINDS[name]
    except KeyError:
        raise BadInput(f"{where + ': ' if where else ''}unknown agent kind {printable(name)!r} "
                       f"(known: {', '.join(agent_kind_names())})") from None


class OracleKind(AgentKind):
    name = "oracle"
    uses_model = False
    self_contained = True
    configured = False

    def build(self, cfg: GateConfig, model: str, label: str) -> Agent:
        from gate.agents._oracle import OracleAgent

        return OracleAgent()

    def fingerprint_parts(self, cfg: GateConfig) -> dict[str, str]:
        from gate.core.fingerprint import digest_of

        return {"command": digest_of("solution/solve.sh")}


class BuiltinKind(AgentKind):
    name = "builtin"
    self_contained = True

    def build(self, cfg: GateConfig, model: str, label: str) -> Agent:
        import jinja2

        from gate.agents._parts import effective_prompt
        from gate.agents._prompt import compile_prompt

        a = cfg.agent
        prompt = effective_prompt(cfg)
        try:  # a bad file is exit 2 before the SDK (~2 s) loads
            compile_prompt(prompt)
        except jinja2.TemplateError as exc:
            where = a.system_prompt or "the default system prompt"
            line = getattr(exc, "lineno", None)
            raise BadInput(f"{where}{f':{line}' if line else ''}: template error: {exc} "
                           "(variables: task_id, workdir, date, now)") from None
        from gate.agents._builtin import BuiltinAgent

        try:
            return BuiltinAgent(
                model=model, system_template=prompt,
                tools=a.tools, max_turns=a.max_turns, max_tokens=a.max_tokens, cache=a.cache,
                temperature=a.temperature, top_p=a.top_p, label=label,
            )
        except ValueError as exc:
            raise BadInput(f"[agent].tools: {exc}") from None

    def skills_prompt_bytes(self, skills: Sequence[Skill]) -> int | None:
        from gate.agents._builtin import skills_block

        return len(skills_block(skills).encode()) if skills else 0

    def cache_prefix(self, agent: Agent, task: Task,
                     skills: Sequence[Skill] = ()) -> dict[str, Any] | None:
        """The tools and the system prompt (rendered for ``task`` in a container's working
        directory, listing ``skills``) that the breakpoints on the last tool and the last
        system block cache; None with caching off, or a prompt that does not render for
        ``task``. Here, not in the agent's module: that one's bytes are in its fingerprint."""
        import jinja2

        from gate.agents._base import RunContext
        from gate.agents._builtin import BuiltinAgent

        if not isinstance(agent, BuiltinAgent) or agent.cache == "off":
            return None
        ctx = RunContext(task=task, replication=0, run_name="prefix", timeout=0,
                         skills=tuple(skills))
        try:
            system = agent._system(ctx, PREFIX_WORKDIR)
        except jinja2.TemplateError:
            return None
        tools = agent._tool_schemas()
        return {"model": agent.model, "system": system, **({"tools": tools} if tools else {})}

    def fingerprint_parts(self, cfg: GateConfig) -> dict[str, str]:
        from gate.agents._parts import BUILTIN_CODE, code_digest, effective_prompt
        from gate.agents._tools import TOOLS
        from gate.core.fingerprint import digest_of

        a = cfg.agent
        return {
            "model": a.model,
            "sampling": digest_of(self._sampling(cfg)),
            "prompt": digest_of(effective_prompt(cfg)),
            "tools": digest_of([TOOLS[t].schema() for t in a.tools if t in TOOLS]),
            # what it runs: its tool loop, tools and prompt handling, as the gate ships them
            "code": code_digest(BUILTIN_CODE),
        }

    @staticmethod
    def _sampling(cfg: GateConfig) -> dict[str, object]:
        a = cfg.agent
        return {"max_tokens": a.max_tokens, "temperature": a.temperature, "top_p": a.top_p,
                "max_turns": a.max_turns, "cache": a.cache}

    def fingerprint_values(self, cfg: GateConfig) -> dict[str, dict[str, object]]:
        from gate.agents._parts import effective_prompt

        return {"sampling": self._sampling(cfg), "tools": {"tools": list(cfg.agent.tools)},
                "prompt": {"characters": len(effective_prompt(cfg))}}


class CommandKind(AgentKind):
    name = "command"
    in_sandbox = True

    def installs(self, cfg: GateConfig) -> bool:
        from gate.agents._parts import install_text

        return install_text(cfg) is not None  # an unreadable script is exit 2 here, first

    def build(self, cfg: GateConfig, model: str, label: str) -> Agent:
        from gate.agents._command import CommandAgent
        from gate.agents._parts import install_text
        from gate.sandbox import AgentInstall

        if not cfg.agent.command:
            raise BadInput("[agent].command is required when kind = \"command\"")
        agent = CommandAgent(cfg.agent.command, model=model, passthrough=cfg.agent.env,
                             label=label)
        script = install_text(cfg)
        if script is not None:
            agent.install = AgentInstall(script, cfg.agent.install_timeout_sec)
        return agent

    def fingerprint_parts(self, cfg: GateConfig) -> dict[str, str]:
        from gate.agents._parts import install_text
        from gate.core.fingerprint import digest_of

        a = cfg.agent
        parts = {"model": a.model, "command": digest_of(a.command or ""),
                 "sampling": digest_of({"env": sorted(a.env)})}
        script = install_text(cfg)
        if script is not None:  # a pinned version bump is an agent change
            parts["install"] = digest_of(script)
        return parts

    def fingerprint_values(self, cfg: GateConfig) -> dict[str, dict[str, object]]:
        return {"sampling": {"env": sorted(cfg.agent.env)}}  # names, never their values


for _kind in (BuiltinKind(), CommandKind(), OracleKind()):
    register_agent_kind(_kind)
