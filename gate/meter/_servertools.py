"""The server tools a request offers, by the upstream's table (``Upstream.server_tools``: the
``type`` each is known by in a request's ``tools``, or a field of its own, and the usage count
that carries its fee): which the suite refuses, which leave a run not fully metered, and the
counts the price table prices. The facts are the upstream's (gate/upstream); this is the
meter's rule over them."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from gate.upstream import ServerTool

#: the ``usage`` field that carries the server tools' counts (the rest — ``service_tier``,
#: ``inference_geo``, … — change no price)
SERVER_TOOL_USAGE = "server_tool_use"


def offered_server_tools(payload: Any, tools: Sequence[ServerTool]
                         ) -> Iterator[tuple[ServerTool, str]]:
    """The server tools a messages request offers, each with what named it (a ``type``, or
    the request's own field). A client tool may have a ``type`` too (``bash_20250124``,
    ``text_editor_*``, ``computer_*``, ``custom``): only the table's prefixes count."""
    if not isinstance(payload, dict):
        return
    offered = payload.get("tools")
    for tool in offered if isinstance(offered, list) else ():
        kind = tool.get("type") if isinstance(tool, dict) else None
        if not isinstance(kind, str):
            continue
        for server in tools:
            if server.type_prefix is not None and kind.startswith(server.type_prefix):
                yield server, kind
    for server in tools:
        if server.request_field is not None and payload.get(server.request_field):
            yield server, server.request_field


def server_tool_counts(usage: Any) -> dict[str, int]:
    """The positive counts of ``usage.server_tool_use`` (what the provider billed per use)."""
    counts = usage.get(SERVER_TOOL_USAGE) if isinstance(usage, dict) else None
    if not isinstance(counts, dict):
        return {}
    return {str(k): int(v) for k, v in counts.items()
            if isinstance(v, int | float) and not isinstance(v, bool) and v > 0}


def refused_server_tool(payload: Any, tools: Sequence[ServerTool],
                        allowed: frozenset[str]) -> str | None:
    """Why the meter refuses a messages request: it offers a server tool the suite does not
    allow (the base branch's ``[suite].server_tools``); ``None``: it offers none of those."""
    for server, named in offered_server_tools(payload, tools):
        if server.name not in allowed:
            return (f"server tool {named[:80]!r} ({server.name}) is not allowed in this suite: "
                    f'the base branch\'s gate.toml allows it with [suite] server_tools = '
                    f'["{server.name}"]')
    return None


def unmetered_server_tool(payload: Any, tools: Sequence[ServerTool]) -> str | None:
    """Why a run that forwards this request is not fully metered: it offers a server tool
    billed by what its usage does not report (code execution's container time)."""
    for server, named in offered_server_tools(payload, tools):
        if server.fee == "time":
            return (f"not fully metered: the agent offered server tool {named[:80]!r} "
                    f"({server.name}), which the provider bills by time the usage does not "
                    "report")
    return None
