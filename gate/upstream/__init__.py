"""The upstream port: one contract per model API the meter forwards to (see ``_contract.py``).

Registered here: ``anthropic`` (the Messages API, direct), ``gateway`` (a Messages-compatible
gateway: a base URL and a bearer token) and ``vertex`` (Claude on Google Vertex AI). Each
upstream module registers itself on import, so the scrub knows every upstream's credentials
whichever one a run uses: a new upstream adds its import below.
"""

from gate.upstream._anthropic import (
    ANTHROPIC,
    CREDIT_MESSAGE,
    ERROR_TYPES,
    SERVER_TOOLS,
    MessagesUpstream,
    check_base_url,
    key_signer,
    messages_fault,
)
from gate.upstream._contract import (
    Cause,
    Endpoint,
    Fault,
    Matched,
    Outgoing,
    Probe,
    Record,
    Route,
    RouteKind,
    ServerTool,
    StreamDecoder,
    Upstream,
    credential_variables,
    get_upstream,
    provider_prefixes,
    register_upstream,
    upstream_names,
)
from gate.upstream._gateway import GATEWAY
from gate.upstream._vertex import (
    VERTEX,
    GoogleToken,
    VertexCall,
    bare_model,
    parse_vertex_call,
    price_factor,
)

__all__ = [
    "ANTHROPIC",
    "CREDIT_MESSAGE",
    "ERROR_TYPES",
    "GATEWAY",
    "SERVER_TOOLS",
    "VERTEX",
    "Cause",
    "Endpoint",
    "Fault",
    "GoogleToken",
    "Matched",
    "MessagesUpstream",
    "Outgoing",
    "Probe",
    "Record",
    "Route",
    "RouteKind",
    "ServerTool",
    "StreamDecoder",
    "Upstream",
    "VertexCall",
    "bare_model",
    "check_base_url",
    "credential_variables",
    "get_upstream",
    "key_signer",
    "messages_fault",
    "parse_vertex_call",
    "price_factor",
    "provider_prefixes",
    "register_upstream",
    "upstream_names",
]
