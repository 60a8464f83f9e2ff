"""Amazon Bedrock (``[agent] upstream = "bedrock"``): InvokeModel, as the clients call it.

Measured (docs/upstreams.md): the ``anthropic`` SDK's ``AnthropicBedrock`` and the pinned Claude
Code both call InvokeModel — ``POST /model/{id}/invoke`` (JSON) and ``POST
/model/{id}/invoke-with-response-stream`` (AWS event-stream frames, each chunk's ``bytes`` the
base64 of one Messages stream event) — with the Messages body less ``model`` and ``stream`` and
plus ``anthropic_version`` (and ``anthropic_beta``), the model ID in the path with its ``:`` as
is. Neither calls the Messages-API endpoint (``/anthropic/v1/messages``; the SDK's separate
``AnthropicBedrockMantle`` does). Claude Code also asks ``GET /inference-profiles`` at the same
base URL first, and goes on whatever the answer.

Authentication: the meter signs each forwarded request itself (SigV4, botocore's signer, from
the runner's AWS credentials by botocore's chain; or the runner's Bedrock API key as a bearer
token: ``_sigv4.py``). The agent gets the meter's URL and the run's token, never an AWS
credential: Claude Code with ``CLAUDE_CODE_SKIP_BEDROCK_AUTH=1`` signs nothing but still sends
``AWS_BEARER_TOKEN_BEDROCK`` as ``Authorization: Bearer`` (measured), and ``AnthropicBedrock``
sends its ``api_key`` (the same variable) the same way: the run's token goes in that variable,
and the meter checks it as it checks every bearer token.

Errors come back as a status, an ``x-amzn-ErrorType`` header (``ThrottlingException``, maybe
followed by ``:`` and a namespace) and ``{"message": ...}``; in a stream, as an ``exception``
frame (``:exception-type``: ``throttlingException``, ...). Whose fault each is: ``ERROR_TYPES``.

Model IDs: ``anthropic.<model>-<date>-v1:0``, with a geographic inference profile's prefix
(``us.``, ``eu.``, ``apac.``, ``global.``) or as an ARN. A configured model is called by the
ID Claude Code lists for it (``MODEL_IDS``, measured), else ``anthropic.<model>-v1`` (the form of
the newest IDs in that list); a configured ID that already names Bedrock's form is called as is.
Region: the runner's ``AWS_REGION`` (else ``AWS_DEFAULT_REGION``), read once when a session
opens the upstream; the ``Bedrock`` it opens keeps it, signs for it, tells the agent it
(``AWS_REGION``) and calls the configured model by that region's inference profile (``eu.`` in
``eu-west-1``); the results record it. A simulated session without one is in ``us-east-1``.

Prices: the price table's list prices by the model family an ID names, with the platforms'
regional premium (``regional_factor``): an ID with the ``global.`` profile is priced at the
list price; a geographic profile (``us.``, ``eu.``, …) or an in-region ID 10 % above it from
Claude Sonnet 4.5 on.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, ClassVar

from gate.errors import BadInput, Unmeasurable
from gate.upstream._anthropic import MODEL_ENV, check_base_url
from gate.upstream._contract import (
    OIDC_STEP_IF,
    SIMULATOR,
    Cause,
    CISetup,
    Endpoint,
    Fault,
    Outgoing,
    Route,
    StreamDecoder,
    Upstream,
    regional_factor,
    register_upstream,
)
from gate.upstream._eventstream import CONTENT_TYPE, Decoder, EventStreamError, frames_as_sse
from gate.upstream._sigv4 import API_KEY_ENV, AwsKeys, BedrockAuth, chain_keys

if TYPE_CHECKING:  # the usage model is pydantic's: the CLI's start-up (gate.secrets) imports this
    from gate.upstream._contract import Prices
    from gate.usage import Usage

REGION_ENVS = ("AWS_REGION", "AWS_DEFAULT_REGION")
URL_ENV = "GATE_BEDROCK_URL"  # a VPC endpoint or a proxy in front of bedrock-runtime
#: the AWS variables that carry or point at a credential (botocore's chain reads them)
CREDENTIAL_ENV = (
    "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_SECURITY_TOKEN",
    "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_ROLE_ARN", "AWS_SHARED_CREDENTIALS_FILE",
    "AWS_CONFIG_FILE", "AWS_PROFILE", "AWS_CONTAINER_CREDENTIALS_FULL_URI",
    "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_CONTAINER_AUTHORIZATION_TOKEN",
    "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE", API_KEY_ENV,
)
#: Claude Code's Bedrock settings (its "LLM gateway" page; measured with the pinned version)
USE_BEDROCK, BEDROCK_URL, SKIP_AUTH = (
    "CLAUDE_CODE_USE_BEDROCK", "ANTHROPIC_BEDROCK_BASE_URL", "CLAUDE_CODE_SKIP_BEDROCK_AUTH")
#: the region of a simulated session when the environment names none
SIM_REGION = "us-east-1"
_REGION = re.compile(r"[a-z]{2}(-[a-z]+)+-\d")
#: the simulator's own key (its secret is the session's simulator credential)
SIM_ACCESS_KEY = "AKIDGATESIMULATOR"

#: a model ID, an inference profile or its ARN as a path segment (the SDK escapes an ARN's
#: ``/`` as ``%2F`` and keeps ``:``): no dot segment, no other escape
_MODEL = r"(?!\.)(?!.*\.\.)[A-Za-z0-9](?:[A-Za-z0-9._:-]|%2[Ff]|%3[Aa]){0,255}"
ROUTES: tuple[Route, ...] = (
    Route("POST", re.compile(rf"model/(?P<model>{_MODEL})/invoke"), "messages", stream=False),
    Route("POST", re.compile(rf"model/(?P<model>{_MODEL})/invoke-with-response-stream"),
          "messages", stream=True),
    # Claude Code's first request (the control plane's list of inference profiles)
    Route("GET", re.compile(r"inference-profiles"), "models"),
)

# -- errors -----------------------------------------------------------------------------------
#: ``x-amzn-ErrorType`` (or a stream's ``:exception-type``, case aside) → whose fault: the
#: agent's request refused as it made it, or the provider's and the machine's (infra)
ERROR_TYPES: Mapping[str, Cause] = {
    "validationexception": "agent",  # 400: the request as the agent made it
    "resourcenotfoundexception": "agent",  # 404: a model ID that does not exist
    "throttlingexception": "provider",  # 429
    "servicequotaexceededexception": "provider",  # 429/400: the account's quota
    "modelnotreadyexception": "provider",  # 429: the model is still being loaded
    "serviceunavailableexception": "provider",  # 503
    "internalserverexception": "provider",  # 500
    "modeltimeoutexception": "provider",  # 408
    "modelerrorexception": "provider",  # 424
    "modelstreamerrorexception": "provider",  # a stream the model broke
    "accessdeniedexception": "provider",  # 403: the gate's credential or model access
    "unrecognizedclientexception": "provider",  # 403: the gate's key
    "invalidsignatureexception": "provider",  # 403: the meter's signature
    "expiredtokenexception": "provider",  # 403: the gate's session token
    "missingauthenticationtokenexception": "provider",  # 403: the meter's signature
}


def error_type(headers: Mapping[str, str]) -> str:
    """The ``x-amzn-ErrorType`` of an answer, without its ``:namespace`` tail ('' if none)."""
    found = next((v for k, v in headers.items() if k.lower() == "x-amzn-errortype"), "")
    return found.split(":", 1)[0].strip()


def bedrock_fault(status: int, headers: Mapping[str, str], body: bytes) -> Fault:
    """Whose fault a Bedrock error answer is: by its ``x-amzn-ErrorType`` (``ERROR_TYPES``),
    else by status (a 400 the agent's, the rest the provider's)."""
    kind = error_type(headers)
    cause = ERROR_TYPES.get(kind.lower())
    if cause is None:
        cause = "agent" if status == 400 else "provider"
    message = ""
    try:
        found = json.loads(body)
        message = str(found.get("message") or found.get("Message") or "")
    except (ValueError, AttributeError):
        pass
    why = f"{status} {kind or 'error'}" + (f": {message[:120]}" if message else "")
    return Fault(cause, why)


class _EventStreamAsSSE(StreamDecoder):
    def __init__(self) -> None:
        self._decoder = Decoder()

    def feed(self, chunk: bytes) -> bytes:
        try:
            return b"".join(frames_as_sse(self._decoder.feed(chunk)))
        except EventStreamError as exc:  # a damaged frame: the meter sees a broken stream
            error = {"type": "error", "error": {"type": "eventStreamError", "message": str(exc)}}
            return f"event: error\ndata: {json.dumps(error)}\n\n".encode()


# -- model IDs --------------------------------------------------------------------------------
#: Bedrock's IDs for the models Claude Code lists (the pinned version's probe, measured)
MODEL_IDS: Mapping[str, str] = {
    "claude-sonnet-4-5": "anthropic.claude-sonnet-4-5-20250929-v1:0",
    "claude-haiku-4-5": "anthropic.claude-haiku-4-5-20251001-v1:0",
    "claude-opus-4-6": "anthropic.claude-opus-4-6-v1",
    "claude-opus-4-5": "anthropic.claude-opus-4-5-20251101-v1:0",
    "claude-opus-4-1": "anthropic.claude-opus-4-1-20250805-v1:0",
    "claude-opus-4": "anthropic.claude-opus-4-20250514-v1:0",
    "claude-sonnet-4": "anthropic.claude-sonnet-4-20250514-v1:0",
    "claude-3-7-sonnet": "anthropic.claude-3-7-sonnet-20250219-v1:0",
    "claude-3-5-haiku": "anthropic.claude-3-5-haiku-20241022-v1:0",
}
_GEO = re.compile(r"^(?:us|eu|apac|jp|au|ca|us-gov|global)\.")
_ID = re.compile(r"^(?:arn:aws[a-z-]*:bedrock:[^/]*/)?(?:[a-z-]+\.)?anthropic\.(?P<model>.+?)"
                 r"(?:-v\d+(?::\d+)?)?$")
_OLD_NAME = re.compile(r"^claude-(\d)-(\d)-(haiku|sonnet|opus)")


def model_name(model_id: str) -> str:
    """The Anthropic model an ID names (``us.anthropic.claude-sonnet-4-5-20250929-v1:0`` →
    ``claude-sonnet-4-5-20250929``; ``claude-3-5-haiku-…`` → ``claude-haiku-3-5-…``, as the
    price table names it); an ID not of Bedrock's form is returned as it is."""
    found = _ID.match(re.sub(r"%2[Ff]", "/", re.sub(r"%3[Aa]", ":", model_id)))
    name = found["model"] if found else model_id
    return _OLD_NAME.sub(lambda m: f"claude-{m[3]}-{m[1]}-{m[2]}", name)


def region_of(environ: Mapping[str, str], *, simulated: bool = False) -> str:
    """The region from ``AWS_REGION``, else ``AWS_DEFAULT_REGION`` (botocore's and the clients'
    variables); a simulated session without either is in ``us-east-1``. Unset: unmeasurable
    (exit 3, as a missing credential is, and as ``gate ci``'s check says); malformed:
    ``BadInput`` naming the variable."""
    found = next(((n, environ[n].strip()) for n in REGION_ENVS if environ.get(n, "").strip()),
                 None)
    if found is None:
        if simulated:
            return SIM_REGION
        raise Unmeasurable('gate.toml [agent] upstream = "bedrock": AWS_REGION (or '
                           "AWS_DEFAULT_REGION) is not set in the environment (e.g. "
                           "us-east-1): set it, or pass --sim (GATE_SIM=1) to run against "
                           "the built-in simulator")
    variable, region = found
    if not _REGION.fullmatch(region):
        raise BadInput(f"environment {variable}: {region[:40]!r} is not an AWS region "
                       "(e.g. us-east-1)")
    return region


def is_global(model_id: str) -> bool:
    """Whether a called ID is a global inference profile (``global.anthropic.…``, or its
    ARN): priced at the list price; any other ID is a regional endpoint's."""
    return re.sub(r"%2[Ff]", "/", model_id).rsplit("/", 1)[-1].startswith("global.")


def geo_prefix(region: str | None) -> str:
    """The cross-region inference profile's prefix of a region (``us-east-1`` → ``us.``)."""
    if not region:
        return ""
    head = region.split("-", 1)[0]
    return {"us": "us.", "eu": "eu.", "ap": "apac.", "ca": "ca.", "global": "global."}.get(
        head, "")


class Bedrock(Upstream):
    name = "bedrock"
    provider = "aws-bedrock"
    credential_env = CREDENTIAL_ENV
    withheld_name = "AWS credential (no AWS_ACCESS_KEY_ID, no OIDC token to assume a role)"
    credential_setup = ("pass it with AWS_SECRET_ACCESS_KEY and AWS_REGION in the gate step's "
                        "env; or, with no long-lived secret, assume a role before the step "
                        "(aws-actions/configure-aws-credentials, `permissions: id-token: "
                        "write`)")
    ci = CISetup(
        needs=("# Needs an IAM role this repository may assume through GitHub's OIDC token (no "
               "key is", "# stored): the repository variables AGENT_GATE_AWS_ROLE (its ARN) "
               "and", "# AGENT_GATE_AWS_REGION (docs/github.md, \"Claude on Amazon Bedrock\"). "
               "A fork's pull", "# request gets no OIDC token: the role step is skipped and "
               "the gate says it was given", "# nothing (docs/github.md, section 4)."),
        adopt="Create the IAM role (bedrock:InvokeModel and InvokeModelWithResponseStream, "
              "trusting this\n     repository's OIDC token: docs/github.md, \"Claude on Amazon "
              "Bedrock\") and add the\n     repository variables AGENT_GATE_AWS_ROLE (its ARN) "
              "and AGENT_GATE_AWS_REGION (Settings →\n     Secrets and variables → Actions → "
              "Variables)",
        permissions=("id-token: write        # the OIDC token the role step exchanges for AWS "
                     "credentials",),
        steps=("- uses: aws-actions/configure-aws-credentials@"
               "e6de054238d6b7531b4efff3b6587d9aade6a06c  # v6.2.3",
               "  " + OIDC_STEP_IF,
               "  with:",
               "    role-to-assume: ${{ vars.AGENT_GATE_AWS_ROLE }}",
               "    aws-region: ${{ vars.AGENT_GATE_AWS_REGION }}"))
    env_prefixes = ("AWS_",)
    routes = ROUTES
    credential_headers: ClassVar[tuple[str, ...]] = (
        "authorization", "x-amz-date", "x-amz-security-token", "x-amz-content-sha256",
        "x-api-key")
    request_id_header = "x-amzn-requestid"
    simulator_front = "gate.sim._bedrock"

    def __init__(self, region: str | None = None) -> None:
        #: the session's region (None: the registered upstream, opened for no session)
        self.region = region

    @property
    def agent_region(self) -> str:
        return self.region or SIM_REGION

    def missing(self, environ: Mapping[str, str]) -> tuple[str, ...]:
        """The region and a credential (botocore's chain, or a Bedrock API key), each when
        absent."""
        out: tuple[str, ...] = ()
        if not any(environ.get(n, "").strip() for n in REGION_ENVS):
            out += ("AWS_REGION (or AWS_DEFAULT_REGION)",)
        if not environ.get(API_KEY_ENV, "").strip() and chain_keys() is None:
            out += ("AWS credentials (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, as "
                    f"aws-actions/configure-aws-credentials sets them) or {API_KEY_ENV}",)
        return out

    def open(self, environ: Mapping[str, str]) -> Endpoint:
        region = region_of(environ)
        url = environ.get(URL_ENV, "").strip()
        base = check_base_url(url, URL_ENV) if url else \
            f"https://bedrock-runtime.{region}.amazonaws.com"
        keys = chain_keys()
        auth = BedrockAuth(region, keys=keys) if keys is not None else \
            BedrockAuth(region, api_key=environ.get(API_KEY_ENV) or None)
        if auth.keys is None and not auth.api_key:
            raise Unmeasurable('[agent] upstream = "bedrock": no AWS credentials (environment, '
                               "AWS_PROFILE's files, web identity, instance role) and no "
                               f"{API_KEY_ENV}: set them, or pass --sim (GATE_SIM=1) to run "
                               "against the built-in simulator")
        return Endpoint(Bedrock(region), base, region, _signer(auth))

    def simulated(self, base_url: str, credential: str) -> Endpoint:
        import os

        region = region_of(os.environ, simulated=True)
        auth = BedrockAuth(region, keys=AwsKeys(SIM_ACCESS_KEY, credential))
        return Endpoint(Bedrock(region), base_url.rstrip("/"), region, _signer(auth), SIMULATOR)

    def model_id(self, model: str, region: str | None) -> str:
        if model.startswith("arn:") or "anthropic." in model:
            return model
        return geo_prefix(region) + MODEL_IDS.get(model, f"anthropic.{model}-v1")

    def price_model(self, model_id: str) -> str:
        return model_name(model_id)

    def pricing(self, region: str | None, model_id: str | None = None) -> str:
        if model_id is None:
            return "aws-bedrock"
        return "aws-bedrock global" if is_global(model_id) else \
            "aws-bedrock regional (+10 % from Sonnet 4.5)"

    def cost(self, prices: Prices, model: str, usage: Usage, region: str | None) -> float:
        """The list price of the family the ID names, with the regional premium unless the
        ID is a global inference profile."""
        name = self.price_model(model)
        return prices.cost(name, usage) * regional_factor(name, not is_global(model))

    def fault(self, status: int, headers: Mapping[str, str], body: bytes) -> Fault:
        return bedrock_fault(status, headers, body)

    def stream_decoder(self, content_type: str) -> StreamDecoder | None:
        if CONTENT_TYPE in content_type:
            return _EventStreamAsSSE()
        return super().stream_decoder(content_type)

    def agent_env(self, base_url: str, token: str) -> dict[str, str]:
        """Claude Code's Bedrock settings with the meter as its gateway (it signs nothing and
        sends the run's token as a bearer token), which ``AnthropicBedrock`` reads too
        (``ANTHROPIC_BEDROCK_BASE_URL``, ``AWS_BEARER_TOKEN_BEDROCK``, ``AWS_REGION``)."""
        return {USE_BEDROCK: "1", BEDROCK_URL: base_url, SKIP_AUTH: "1",
                "AWS_REGION": self.agent_region, API_KEY_ENV: token}

    def model_env(self, model: str) -> dict[str, str]:
        """The Bedrock model ID the agent asks for (``ANTHROPIC_MODEL``: Claude Code's)."""
        return {MODEL_ENV: self.agent_model(model)}

    def agent_model(self, model: str) -> str:
        return self.model_id(model, self.agent_region)

    def sdk_client(self, base_url: str, token: str, **options: Any) -> Any:
        """``AnthropicBedrock`` with the run's token as its Bedrock API key (a bearer token:
        it signs nothing; the meter signs)."""
        import anthropic

        return anthropic.AnthropicBedrock(api_key=token, aws_region=self.agent_region,
                                          base_url=base_url, **options)


def _signer(auth: BedrockAuth) -> Callable[[Outgoing], Mapping[str, str]]:
    """The headers a forwarded request adds: SigV4's (``X-Amz-Date``, ``Authorization``, a
    session token) over the request as it is sent, or the API key as a bearer token."""

    def sign(out: Outgoing) -> Mapping[str, str]:
        signed = auth.headers(out.method, out.url, out.headers, out.body)
        sent = {k.lower() for k in out.headers}
        return {k: v for k, v in signed.items() if k.lower() not in sent}

    return sign


BEDROCK = register_upstream(Bedrock())
