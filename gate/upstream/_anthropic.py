"""Anthropic's Messages API, direct (``[agent] upstream = "anthropic"``, the default): its
routes, credentials, error types and whose fault each is, the message of an account out of
credit, its server tools (the ``type`` they are known by in a request's ``tools``, and the usage
count that carries each one's fee).

Sources: the API's error shapes and types as its documentation lists them (``{"type":
"error", "error": {"type", "message"}, "request_id"}``); the credit message as the API sends it
(a 400 ``invalid_request_error`` whose message goes on "Please go to Plans & Billing to upgrade
or purchase credits.": the API has no billing error type); the server tools' types and
``usage.server_tool_use`` fields as the ``anthropic`` SDK types them (``web_search_*``,
``web_fetch_*``, ``code_execution_*``; ``ServerToolUsage``: ``web_search_requests``,
``web_fetch_requests``). Their prices are in the dated price table
(``gate/data/prices.toml``, ``[server_tools]``), not here. Credentials: ``ANTHROPIC_API_KEY``
(sent as ``x-api-key``), else ``ANTHROPIC_AUTH_TOKEN`` (a bearer token); the base URL
``ANTHROPIC_BASE_URL``, else the public API; the clients (the SDKs, Claude Code) read the same.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from typing import Any, ClassVar

from gate.errors import BadInput, Unmeasurable
from gate.upstream._contract import (
    SIMULATOR,
    Cause,
    CISetup,
    Endpoint,
    Fault,
    Outgoing,
    Probe,
    Route,
    ServerTool,
    Upstream,
    register_upstream,
)

PUBLIC_API = "https://api.anthropic.com"
API_VERSION = "2023-06-01"
#: the request headers a credential may come in (an API key; an auth token as a bearer token)
KEY_HEADER = "x-api-key"
BEARER_HEADER = "authorization"
#: how the API's keys begin
KEY_PREFIX = "sk-ant-"
KEY_ENV, TOKEN_ENV, BASE_URL_ENV, MODEL_ENV = (
    "ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_BASE_URL", "ANTHROPIC_MODEL")
NO_KEY = (f"no {KEY_ENV} in the environment: set it to run against the API, or pass "
          "--sim (GATE_SIM=1) to run against the built-in simulator")

#: the Messages API's routes (paths relative to the API root): the one billable endpoint,
#: the free count of a prompt's tokens, the model list
MESSAGES = "v1/messages"
COUNT_TOKENS = "v1/messages/count_tokens"
MESSAGES_ROUTES: tuple[Route, ...] = (
    Route("POST", re.compile(r"v1/messages"), "messages"),
    Route("POST", re.compile(r"v1/messages/count_tokens"), "count_tokens"),
    Route("GET", re.compile(r"v1/models"), "models"),
    Route("GET", re.compile(r"v1/models/[A-Za-z0-9][A-Za-z0-9._-]{0,127}"), "models"),
)

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


def error_cause(status: int, kind: str, message: str) -> Cause:
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


def messages_fault(status: int, body: bytes) -> Fault:
    """The fault of a Messages-API error answer (``{"error": {"type", "message"}}``)."""
    try:
        err = json.loads(body).get("error", {})
        kind, message = str(err.get("type", "error")), str(err.get("message", ""))
        why = f"{status} {kind}"
    except (ValueError, AttributeError):
        kind, message, why = "", "", f"HTTP {status}"
    return Fault(error_cause(status, kind, message), why)


# -- server tools -----------------------------------------------------------------------------
SERVER_TOOLS: tuple[ServerTool, ...] = (
    ServerTool("web_search", "web_search_", "count", "web_search_requests"),
    ServerTool("web_fetch", "web_fetch_", "count", "web_fetch_requests"),
    ServerTool("code_execution", "code_execution_", "time"),
    ServerTool("mcp", None, "none", request_field="mcp_servers"),
)


def check_base_url(url: str, variable: str) -> str:
    """``url`` as a base URL (``http(s)://host[:port][/path]``), or ``BadInput`` naming the
    variable it came from."""
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(url)
        ok = parts.scheme in ("http", "https") and bool(parts.hostname) \
            and not parts.query and not parts.fragment and (parts.port or 1) > 0
    except ValueError:  # a port that is not a number
        ok = False
    if not ok:
        raise BadInput(f"environment {variable}: {url[:120]!r} is not an http(s) base URL "
                       "(http[s]://host[:port][/path])")
    return url.rstrip("/")


class MessagesUpstream(Upstream):
    """What every upstream that speaks the Messages API shares: its routes, its errors, its
    server tools, its credit and count probes, and a command agent's variables."""

    routes: ClassVar[tuple[Route, ...]] = MESSAGES_ROUTES
    server_tools: ClassVar[tuple[ServerTool, ...]] = SERVER_TOOLS

    def fault(self, status: int, headers: Mapping[str, str], body: bytes) -> Fault:
        return messages_fault(status, body)

    def credit_probe(self, model: str) -> Probe | None:
        return Probe(f"/{MESSAGES}", json.dumps({"model": model, **CREDIT_PROBE}).encode(),
                     _json_headers())

    def is_credit_answer(self, status: int, body: Any) -> bool:
        """A 400 ``invalid_request_error`` whose message starts with the credit message."""
        if status != 400 or not isinstance(body, dict) or not isinstance(body.get("error"), dict):
            return False
        err = body["error"]
        return err.get("type") == "invalid_request_error" \
            and str(err.get("message", "")).startswith(CREDIT_MESSAGE)

    def count_probe(self, request: Mapping[str, Any]) -> Probe | None:
        return Probe(f"/{COUNT_TOKENS}", json.dumps(request).encode(), _json_headers())

    def agent_env(self, base_url: str, token: str) -> dict[str, str]:
        """A Messages client's variables: the base URL and the run's token as an API key
        (Claude Code and the SDKs send it as ``x-api-key`` or a bearer token: the meter takes
        both)."""
        return {BASE_URL_ENV: base_url, KEY_ENV: token}

    def model_env(self, model: str) -> dict[str, str]:
        return {MODEL_ENV: model}


def _json_headers() -> dict[str, str]:
    return {"content-type": "application/json", "anthropic-version": API_VERSION}


def key_signer(key: str, header: str) -> Callable[[Outgoing], Mapping[str, str]]:
    """Authentication by a fixed credential in ``header`` (a bearer token in ``authorization``)."""
    sent = {header: f"Bearer {key}" if header == BEARER_HEADER else key}

    def sign(_: Outgoing) -> Mapping[str, str]:
        return sent

    return sign


class Anthropic(MessagesUpstream):
    name = "anthropic"
    provider = "anthropic"
    credential_env = (KEY_ENV, TOKEN_ENV)
    env_prefixes = ("ANTHROPIC_",)
    credential_setup = ("pass it to the action (`anthropic-api-key: ${{ secrets."
                        f"{KEY_ENV} }}}}`)")
    ci = CISetup(
        needs=(f"# Needs the repository secret {KEY_ENV}.",),
        adopt=f"Add the repository secret {KEY_ENV} (Settings → Secrets and variables → "
              "Actions)",
        inputs=(f"anthropic-api-key: ${{{{ secrets.{KEY_ENV} }}}}",))

    def open(self, environ: Mapping[str, str]) -> Endpoint:
        key, header = environ.get(KEY_ENV), KEY_HEADER
        if not key:  # an auth token goes as a bearer token
            key, header = environ.get(TOKEN_ENV), BEARER_HEADER
        if not key:
            raise Unmeasurable(NO_KEY)
        base = check_base_url(environ.get(BASE_URL_ENV) or PUBLIC_API, BASE_URL_ENV)
        return self.direct(base, key, header)

    def direct(self, base_url: str, key: str, header: str = KEY_HEADER) -> Endpoint:
        """The endpoint at ``base_url`` with ``key`` sent in ``header``."""
        base = base_url.rstrip("/")
        return Endpoint(self, base, None, key_signer(key, header),
                        "anthropic-api" if base == PUBLIC_API else "custom-base-url")

    def simulated(self, base_url: str, credential: str) -> Endpoint:
        return Endpoint(self, base_url.rstrip("/"), None, key_signer(credential, KEY_HEADER),
                        SIMULATOR)


ANTHROPIC = register_upstream(Anthropic())
