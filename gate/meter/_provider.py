"""What is the provider's own (the Anthropic Messages API), as data: its error types and whose
fault each is, the message of an account out of credit, its server tools (the ``type`` they are
known by in a request's ``tools``, and the usage count that carries each one's fee) and the
shapes of its credentials. The meter's code reads these; a later port for another provider
replaces this table, not the meter.

Sources: the API's error shapes and types as its documentation lists them (``{"type":
"error", "error": {"type", "message"}, "request_id"}``); the credit message as the API sends it
(a 400 ``invalid_request_error`` whose message goes on "Please go to Plans & Billing to upgrade
or purchase credits.": the API has no billing error type); the server tools' types and
``usage.server_tool_use`` fields as the ``anthropic`` SDK types them (``web_search_*``,
``web_fetch_*``, ``code_execution_*``; ``ServerToolUsage``: ``web_search_requests``,
``web_fetch_requests``). Their prices are in the dated price table
(``gate/data/prices.toml``, ``[server_tools]``), not here.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from gate.meter._run import Cause

PROVIDER = "anthropic"

# -- credentials ------------------------------------------------------------------------------
#: the request headers a credential may come in (an API key; an auth token as a bearer token)
KEY_HEADER = "x-api-key"
BEARER_HEADER = "authorization"
#: how the provider's API keys begin, and the prefix of its clients' environment variables
KEY_PREFIX = "sk-ant-"
ENV_PREFIX = "ANTHROPIC_"

# -- errors -----------------------------------------------------------------------------------
#: ``error.type`` → who caused an answer of that type: the provider's and the machine's are
#: infra (the gate's credential refused, a rate limit, a server error, an overload); the
#: agent's are requests the API refused as the agent made them
ERROR_TYPES: Mapping[str, Cause] = {
    "invalid_request_error": "agent",  # 400
    "request_too_large": "agent",  # 413
    "not_found_error": "agent",  # 404: a model that does not exist (see ``error_cause``)
    "authentication_error": "provider",  # 401: the gate's credential
    "permission_error": "provider",  # 403: the gate's credential
    "rate_limit_error": "provider",  # 429
    "api_error": "provider",  # 500 and other 5xx
    "overloaded_error": "provider",  # 529
}
#: statuses that are the provider's or the machine's whatever the body says
PROVIDER_STATUSES = frozenset({401, 403, 429})
#: the message of an account out of credit, matched from its start (a 400
#: ``invalid_request_error``); the API quotes a request's own text in its validation errors,
#: so a word anywhere in a message is the agent's to choose
CREDIT_MESSAGE = "Your credit balance is too low to access the Anthropic API."
#: what the meter's own check of the credit sends: the smallest billable request
CREDIT_PROBE: Mapping[str, Any] = {"max_tokens": 1,
                                   "messages": [{"role": "user", "content": "."}]}
API_VERSION = "2023-06-01"

#: who caused an error answer; ``credit?``: the account's credit, if the meter's own request
#: on the gate's credential confirms it (else the agent's)
Verdict = Cause | Literal["credit?"]


def error_cause(status: int, kind: str, message: str) -> Verdict:
    """Who caused an API error answer, told apart by status and ``error.type``: the agent for
    a request the API refused as malformed (400, 413, a 404 for a model that does not exist);
    the provider or the machine for the rest (401/403: the gate's credential, 429, 5xx, 529,
    a 404 that is not about a model: a wrong base URL). A 400 whose message *starts* with the
    credit message is ``credit?``."""
    if status >= 500 or status in PROVIDER_STATUSES:
        return "provider"
    if status == 400:
        if kind == "invalid_request_error" and message.startswith(CREDIT_MESSAGE):
            return "credit?"
        return "agent"
    if status == 413 or (status == 404 and message.lower().startswith("model:")):
        return "agent"
    return "provider"


def is_credit_answer(status: int, body: Any) -> bool:
    """A 400 ``invalid_request_error`` whose message starts with the credit message."""
    if status != 400 or not isinstance(body, dict) or not isinstance(body.get("error"), dict):
        return False
    err = body["error"]
    return err.get("type") == "invalid_request_error" \
        and str(err.get("message", "")).startswith(CREDIT_MESSAGE)


# -- server tools -----------------------------------------------------------------------------
Fee = Literal["count", "time", "none"]


@dataclass(frozen=True)
class ServerTool:
    """A tool the provider runs (and may bill) itself, named as ``[suite].server_tools`` names
    it. ``fee``: ``count`` (``usage.server_tool_use[<price_key>]`` uses, priced per use by the
    price table), ``time`` (billed by the time it runs, which the usage does not report: a run
    that offered it is not fully metered) or ``none`` (only its tokens)."""

    name: str
    type_prefix: str | None  # a ``tools[]`` entry's ``type`` starts with it
    fee: Fee
    price_key: str | None = None
    request_field: str | None = None  # or the request offers it in a field of its own


SERVER_TOOLS: tuple[ServerTool, ...] = (
    ServerTool("web_search", "web_search_", "count", "web_search_requests"),
    ServerTool("web_fetch", "web_fetch_", "count", "web_fetch_requests"),
    ServerTool("code_execution", "code_execution_", "time"),
    ServerTool("mcp", None, "none", request_field="mcp_servers"),
)
SERVER_TOOL_NAMES = tuple(t.name for t in SERVER_TOOLS)
#: ``usage`` fields that carry a fee (the rest — ``service_tier``, ``inference_geo``, … —
#: change no price)
SERVER_TOOL_USAGE = "server_tool_use"


def offered_server_tools(payload: Any) -> Iterator[tuple[ServerTool, str]]:
    """The server tools a messages request offers, each with what named it (a ``type``, or
    the request's own field). A client tool may have a ``type`` too (``bash_20250124``,
    ``text_editor_*``, ``computer_*``, ``custom``): only the table's prefixes count."""
    if not isinstance(payload, dict):
        return
    tools = payload.get("tools")
    for tool in tools if isinstance(tools, list) else ():
        kind = tool.get("type") if isinstance(tool, dict) else None
        if not isinstance(kind, str):
            continue
        for server in SERVER_TOOLS:
            if server.type_prefix is not None and kind.startswith(server.type_prefix):
                yield server, kind
    for server in SERVER_TOOLS:
        if server.request_field is not None and payload.get(server.request_field):
            yield server, server.request_field


def server_tool_counts(usage: Any) -> dict[str, int]:
    """The positive counts of ``usage.server_tool_use`` (what the provider billed per use)."""
    counts = usage.get(SERVER_TOOL_USAGE) if isinstance(usage, dict) else None
    if not isinstance(counts, dict):
        return {}
    return {str(k): int(v) for k, v in counts.items()
            if isinstance(v, int | float) and not isinstance(v, bool) and v > 0}


def refused_server_tool(payload: Any, allowed: frozenset[str]) -> str | None:
    """Why the meter refuses a messages request: it offers a server tool the suite does not
    allow (the base branch's ``[suite].server_tools``); ``None``: it offers none of those."""
    for server, named in offered_server_tools(payload):
        if server.name not in allowed:
            return (f"server tool {named[:80]!r} ({server.name}) is not allowed in this suite: "
                    f'the base branch\'s gate.toml allows it with [suite] server_tools = '
                    f'["{server.name}"]')
    return None


def unmetered_server_tool(payload: Any) -> str | None:
    """Why a run that forwards this request is not fully metered: it offers a server tool
    billed by what its usage does not report (code execution's container time)."""
    for server, named in offered_server_tools(payload):
        if server.fee == "time":
            return (f"not fully metered: the agent offered server tool {named[:80]!r} "
                    f"({server.name}), which the provider bills by time the usage does not "
                    "report")
    return None
