"""The upstream port: one contract per model API the meter forwards to (see ``_contract.py``).

Registered here: ``anthropic`` (the Messages API, direct), ``gateway`` (a Messages-compatible
gateway: a base URL and a bearer token) and ``bedrock`` (Amazon Bedrock's InvokeModel, SigV4;
its event-stream framing in ``_eventstream.py``, its signer in ``_sigv4.py``) and ``vertex``
(Claude on Google Vertex AI). Each upstream
module registers itself on import, so the scrub knows every upstream's credentials whichever
one a run uses: a new upstream adds its import below.
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
from gate.upstream._bedrock import BEDROCK, SIM_ACCESS_KEY, bedrock_fault, model_name
from gate.upstream._contract import (
    Cause,
    CISetup,
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
from gate.upstream._eventstream import (
    Decoder,
    EventStreamError,
    Frame,
    chunk_event,
    chunk_frame,
    decode_all,
    encode,
    exception_frame,
)
from gate.upstream._gateway import GATEWAY
from gate.upstream._sigv4 import AwsKeys, BedrockAuth, sign
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
    "API_VERSION",
    "BEDROCK",
    "CREDIT_MESSAGE",
    "ERROR_TYPES",
    "GATEWAY",
    "SERVER_TOOLS",
    "SIMULATOR",
    "SIM_ACCESS_KEY",
    "VERTEX",
    "AwsKeys",
    "BedrockAuth",
    "CISetup",
    "Cause",
    "Decoder",
    "Endpoint",
    "EventStreamError",
    "Fault",
    "Frame",
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
    "bedrock_fault",
    "check_base_url",
    "chunk_event",
    "chunk_frame",
    "credential_variables",
    "decode_all",
    "encode",
    "error_cause",
    "exception_frame",
    "get_upstream",
    "key_signer",
    "messages_fault",
    "model_name",
    "parse_vertex_call",
    "price_factor",
    "provider_prefixes",
    "register_upstream",
    "sign",
    "upstream_names",
]
