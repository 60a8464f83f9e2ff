"""Google Vertex AI as an upstream: what is Vertex's own, as data and small pure functions, and
the one thing that is not pure, the Google access token the meter signs with.

What the clients send (measured, docs/upstreams.md "Google Vertex AI"): the ``anthropic``
SDK's ``AnthropicVertex`` (2.17) and Claude Code 2.1.197 (``CLAUDE_CODE_USE_VERTEX=1``) both
``POST {base}/projects/{project}/locations/{region}/publishers/anthropic/models/{model}:
rawPredict`` (a JSON answer) or ``…:streamRawPredict`` (SSE, the Messages API's events), with
``base`` = ``https://{region}-aiplatform.googleapis.com/v1`` (``aiplatform.googleapis.com/v1``
for ``global``). The model is in the path, not the body; the body carries ``anthropic_version``
(Claude Code: ``vertex-2023-10-16``, the documented value; the SDK 2.17: its own API date).
Token counting is ``…/models/count-tokens:rawPredict`` with the model in the body. The access
token goes as ``Authorization: Bearer``.

Model names: ``claude-sonnet-4-5@20250929`` (a date after ``@``) and, for newer models, the
bare name (``claude-opus-4-6``); they price and behave as the Messages API's id without the
date. Regions: a region (``us-east5``), a multi-region (``us``, ``eu``) or ``global``.

Prices (Anthropic's "Claude on Vertex AI" page, global vs regional endpoints, read 2026-12):
from Claude Sonnet 4.5 on, a regional (or multi-region) endpoint costs 10 % more than the
global one; older models keep one price wherever they run. ``price_factor`` is that rule.

Errors: Vertex's own layer answers in Google's error JSON (``{"error": {"code", "message",
"status"}}``: ``RESOURCE_EXHAUSTED`` 429, ``INVALID_ARGUMENT`` 400, ``UNAUTHENTICATED`` 401,
…); what the model's service refuses may come in the Messages API's shape. ``error_cause``
tells whose each is: a request Vertex refused as the agent made it (``INVALID_ARGUMENT``,
``OUT_OF_RANGE``, a model that does not exist) is the agent's; quota, the gate's credential
and the service's failures are infra.
"""

from __future__ import annotations

import json
import logging
import os
import re
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from gate.errors import BadInput, Unmeasurable
from gate.upstream._anthropic import (
    BEARER_HEADER,
    KEY_HEADER,
    MODEL_ENV,
    SERVER_TOOLS,
    TOKEN_ENV,
    check_base_url,
    key_signer,
    messages_fault,
)
from gate.upstream._contract import (
    OIDC_STEP_IF,
    REGIONAL_PREMIUM,
    SIMULATOR,
    Cause,
    CISetup,
    Endpoint,
    Fault,
    Matched,
    Outgoing,
    Prices,
    Probe,
    Route,
    ServerTool,
    Upstream,
    regional_factor,
    register_upstream,
)

if TYPE_CHECKING:  # the usage model is pydantic's: the CLI's start-up (gate.secrets) imports this
    from gate.usage import Usage

log = logging.getLogger("gate.upstream")

PROVIDER = "google-vertex"
#: the ``anthropic_version`` Vertex documents (and Claude Code sends) in the body
VERTEX_VERSION = "vertex-2023-10-16"
#: the OAuth scope the access token is asked for (the SDK's own)
SCOPE = "https://www.googleapis.com/auth/cloud-platform"

# -- endpoints --------------------------------------------------------------------------------
_PROJECT = r"[a-z][a-z0-9-]{4,28}[a-z0-9]"  # a Google Cloud project ID
_REGION = r"[a-z][a-z0-9-]{0,39}"  # us-east5, europe-west1, us, eu, global
_MODEL = r"[a-z0-9][a-z0-9.-]{0,100}(?:@[0-9]{8})?"  # claude-sonnet-4-5@20250929
#: a call as the path after the API root names it (``v1/projects/…``)
CALL = re.compile(rf"v1/projects/(?P<project>{_PROJECT})/locations/(?P<region>{_REGION})/"
                  rf"publishers/anthropic/models/(?P<model>{_MODEL}):"
                  r"(?P<verb>rawPredict|streamRawPredict)")
#: the model segment token counting uses
COUNT_TOKENS_MODEL = "count-tokens"


@dataclass(frozen=True)
class VertexCall:
    """One request as its path names it. ``count``: token counting (free; the model is in
    the body); else a model call, streamed (``streamRawPredict``) or not (``rawPredict``)."""

    project: str
    region: str
    model: str
    stream: bool
    count: bool

    @property
    def path(self) -> str:
        verb = "streamRawPredict" if self.stream else "rawPredict"
        return (f"v1/projects/{self.project}/locations/{self.region}/publishers/anthropic/"
                f"models/{self.model}:{verb}")


def parse_vertex_call(rest: str) -> VertexCall | None:
    """The call ``rest`` (a path relative to the API root, exactly as it will be sent) names,
    or ``None``: nothing else is Vertex's to forward."""
    m = CALL.fullmatch(rest)
    if m is None:
        return None
    count = m["model"] == COUNT_TOKENS_MODEL
    if count and m["verb"] != "rawPredict":
        return None
    return VertexCall(m["project"], m["region"], m["model"], m["verb"] == "streamRawPredict",
                      count)


def call_path(project: str, region: str, model: str, *, stream: bool = False) -> str:
    """The path (relative to the API root) of a model call, as the clients build it."""
    return VertexCall(project, region, model, stream, model == COUNT_TOKENS_MODEL).path


def endpoint(region: str) -> str:
    """The real API root for ``region`` (as the SDK picks it), without the ``/v1``."""
    if region == "global":
        return "https://aiplatform.googleapis.com"
    if region in ("us", "eu"):
        return f"https://aiplatform.{region}.rep.googleapis.com"
    return f"https://{region}-aiplatform.googleapis.com"


def valid_region(region: str) -> bool:
    return re.fullmatch(_REGION, region) is not None


def valid_project(project: str) -> bool:
    return re.fullmatch(_PROJECT, project) is not None


# -- model names and prices -------------------------------------------------------------------
_AT_DATE = re.compile(r"@[0-9]{8}$")


def bare_model(model: str) -> str:
    """The Messages API's id of a Vertex model name: ``claude-sonnet-4-5@20250929`` →
    ``claude-sonnet-4-5``; a name without a date is its own."""
    return _AT_DATE.sub("", model)


#: when the rule below was read from the vendor's page
PRICES_READ = "2026-12"


def price_factor(model: str, region: str) -> float:
    """What a request on ``region`` costs as a multiple of the list price: global 1; a
    regional or multi-region endpoint 1.10 for Claude Sonnet 4.5 and later models, 1 for the
    older ones (the platforms' one rule: ``regional_factor``)."""
    return regional_factor(bare_model(model), region != "global")


# -- errors -----------------------------------------------------------------------------------
#: Google's canonical error ``status`` → who caused it
GOOGLE_STATUSES: Mapping[str, Cause] = {
    "INVALID_ARGUMENT": "agent",  # 400: the request as the agent made it
    "OUT_OF_RANGE": "agent",  # 400
    "FAILED_PRECONDITION": "provider",  # 400: the project's set-up (a model not enabled)
    "UNAUTHENTICATED": "provider",  # 401: the gate's token
    "PERMISSION_DENIED": "provider",  # 403: the gate's credential or project
    "NOT_FOUND": "provider",  # 404: a project, region or endpoint (a model: see below)
    "RESOURCE_EXHAUSTED": "provider",  # 429: quota
    "CANCELLED": "provider",
    "INTERNAL": "provider",  # 500
    "UNAVAILABLE": "provider",  # 503
    "DEADLINE_EXCEEDED": "provider",  # 504
}


def google_error(body: Any) -> tuple[int, str, str] | None:
    """(code, status, message) of a Google error body, or ``None`` when it is not one."""
    err = body.get("error") if isinstance(body, dict) else None
    if not isinstance(err, dict) or not isinstance(err.get("status"), str):
        return None
    code = err.get("code")
    return (code if isinstance(code, int) else 0, err["status"], str(err.get("message", "")))


def google_error_cause(http_status: int, status: str, message: str) -> Cause:
    """Whose fault a Google error answer is: the agent's for a request Vertex refused as
    made (``INVALID_ARGUMENT``, ``OUT_OF_RANGE``, a 404 naming a publisher model: the agent
    asked for a model that does not exist); infra for the rest, and for any 401/403/429/5xx
    whatever the status word says."""
    if http_status >= 500 or http_status in (401, 403, 429):
        return "provider"
    if status == "NOT_FOUND" and "publishers/anthropic/models/" in message:
        return "agent"
    return GOOGLE_STATUSES.get(status, "provider" if http_status != 400 else "agent")


# -- credentials ------------------------------------------------------------------------------
#: the variables that hold or point at a Google credential (withheld from agents and tasks);
#: ``GOOGLE_*`` names are withheld by their prefix already
CREDENTIAL_NAMES = (
    "GOOGLE_APPLICATION_CREDENTIALS",  # a key file (ADC)
    "GOOGLE_GHA_CREDS_PATH",  # google-github-actions/auth's credentials file
    "CLOUDSDK_AUTH_ACCESS_TOKEN",
    "CLOUDSDK_AUTH_ACCESS_TOKEN_FILE",
    "CLOUDSDK_AUTH_CREDENTIAL_FILE_OVERRIDE",
    "CLOUDSDK_CONFIG",  # gcloud's configuration directory, its credentials included
)
#: prefixes of gcloud's variables that carry authentication
CREDENTIAL_PREFIXES = ("CLOUDSDK_AUTH_",)
#: where gcloud keeps its credentials under a HOME (an agent gets a HOME of its own)
CREDENTIAL_DIRS = (".config/gcloud",)


class GoogleToken:
    """A Google access token from application default credentials (google-auth's
    ``google.auth.default`` with the cloud-platform scope: ``GOOGLE_APPLICATION_CREDENTIALS``,
    gcloud's ADC file, the metadata server, workload identity federation), refreshed when
    it has expired or is about to (google-auth's own margin). Thread-safe: the meter's
    handlers share one. ``credentials``: given ones (tests), else ADC on first use."""

    def __init__(self, credentials: Any = None) -> None:
        self._credentials = credentials
        self._lock = threading.Lock()
        self.project: str | None = None
        self.refreshes = 0

    def _load(self) -> Any:
        import google.auth
        import google.auth.exceptions

        try:
            credentials, self.project = google.auth.default(scopes=[SCOPE])
        except google.auth.exceptions.DefaultCredentialsError as exc:
            raise Unmeasurable(
                "no Google credentials for Vertex AI: set GOOGLE_APPLICATION_CREDENTIALS to a "
                "key file, run `gcloud auth application-default login`, or use workload "
                f"identity federation in CI ({str(exc).splitlines()[0][:160]})") from None
        return credentials

    def bearer(self) -> str:
        """A valid access token (fetched or refreshed now if need be). A refusal of the
        token endpoint is ``Unmeasurable``: the gate's credential, not the agent's doing."""
        import google.auth.exceptions
        from google.auth.transport.requests import Request

        with self._lock:
            if self._credentials is None:
                self._credentials = self._load()
            if not self._credentials.valid:
                try:
                    self._credentials.refresh(Request())
                except google.auth.exceptions.GoogleAuthError as exc:
                    raise Unmeasurable("the Google token endpoint refused the gate's "
                                       f"credentials: {str(exc)[:200]}") from None
                self.refreshes += 1
            token = self._credentials.token
        if not isinstance(token, str) or not token:
            raise Unmeasurable("google-auth gave no access token for Vertex AI")
        return token

    def headers(self) -> dict[str, str]:
        """The header a forwarded request carries."""
        return {"authorization": f"Bearer {self.bearer()}"}


# -- the upstream -----------------------------------------------------------------------------
PROJECT_ENV, REGION_ENV, BASE_URL_ENV = (
    "ANTHROPIC_VERTEX_PROJECT_ID", "CLOUD_ML_REGION", "ANTHROPIC_VERTEX_BASE_URL")
#: Claude Code's switches: speak Vertex, and sign nothing (the meter is its gateway)
USE_ENV, SKIP_AUTH_ENV = "CLAUDE_CODE_USE_VERTEX", "CLAUDE_CODE_SKIP_VERTEX_AUTH"
#: the SDK's ``AnthropicVertex`` reads no token variable, only extra headers
HEADERS_ENV = "ANTHROPIC_CUSTOM_HEADERS"
#: where a simulated run is, when the environment names no project or region
SIM_PROJECT, SIM_REGION = "gate-simulated", "global"
_PATH = (rf"v1/projects/{_PROJECT}/locations/{_REGION}/publishers/anthropic/models/")
ROUTES: tuple[Route, ...] = (  # count-tokens first: its segment is a model name's shape too
    Route("POST", re.compile(_PATH + r"count-tokens:rawPredict"), "count_tokens"),
    Route("POST", re.compile(_PATH + rf"(?P<model>{_MODEL}):rawPredict"), "messages", False),
    Route("POST", re.compile(_PATH + rf"(?P<model>{_MODEL}):streamRawPredict"), "messages",
          True),
)


def place(environ: Mapping[str, str], *, simulated: bool = False) -> tuple[str, str]:
    """(project, region) the gate calls Vertex in, from ``ANTHROPIC_VERTEX_PROJECT_ID`` and
    ``CLOUD_ML_REGION`` (the variables the clients read), read once when a session opens the
    upstream and kept in the :class:`Vertex` it opens; a simulated run without them is in
    ``gate-simulated`` / ``global``. Missing: unmeasurable (exit 3, as a missing credential is);
    malformed: ``BadInput`` naming it."""
    project = environ.get(PROJECT_ENV, "").strip() or (SIM_PROJECT if simulated else "")
    region = environ.get(REGION_ENV, "").strip() or (SIM_REGION if simulated else "")
    for variable, value, ok in ((PROJECT_ENV, project, valid_project(project)),
                                (REGION_ENV, region, valid_region(region))):
        if not value:
            raise Unmeasurable(f'gate.toml [agent] upstream = "vertex": {variable} is not '
                               "set in the environment (the Google Cloud project and the "
                               "region, or `global`, the gate calls Claude in): set it, or "
                               "pass --sim (GATE_SIM=1) to run against the built-in simulator")
        if not ok:
            raise BadInput(f"environment {variable}: {value[:80]!r} is not a "
                           "Google Cloud " + ("project ID" if variable == PROJECT_ENV
                                              else "region"))
    return project, region


def has_adc() -> bool:
    """Whether google-auth finds application default credentials (a key file, gcloud's ADC,
    workload identity federation's file, the metadata server), without asking for a token."""
    import google.auth
    import google.auth.exceptions

    try:
        google.auth.default(scopes=[SCOPE])
    except google.auth.exceptions.DefaultCredentialsError:
        return False
    return True


class Vertex(Upstream):
    """Claude on Google Vertex AI (``[agent] upstream = "vertex"``): the meter takes Vertex's
    paths from the agent (the configured project and region only: the gate's credential is
    spent nowhere else), signs each with a Google access token of its own (application
    default credentials) and prices the model of the path by the list prices, with the
    regional endpoints' premium.

    The registered ``VERTEX`` names no place; :meth:`open` and :meth:`simulated` return an
    endpoint whose upstream is a ``Vertex`` of the session's ``project`` and ``region`` (read
    once, validated, recorded in the results): its routes, its count probe and its agents'
    settings say that place, never the environment as it is later."""

    name = "vertex"
    provider = PROVIDER
    credential_env = CREDENTIAL_NAMES
    withheld_name = ("Google credential (no GOOGLE_APPLICATION_CREDENTIALS, no OIDC token for "
                     "workload identity)")
    credential_setup = ("authenticate the job to Google Cloud before the gate's step "
                        "(google-github-actions/auth sets it; with workload identity "
                        "federation no secret is needed), with ANTHROPIC_VERTEX_PROJECT_ID "
                        "and CLOUD_ML_REGION in the step's env")
    ci = CISetup(
        needs=("# Needs workload identity federation for this repository (no key is stored): "
               "the", "# repository variables AGENT_GATE_GCP_PROVIDER, "
               "AGENT_GATE_GCP_SERVICE_ACCOUNT,", f"# {PROJECT_ENV} and {REGION_ENV} "
               "(docs/github.md, \"Claude on Google Vertex AI\").", "# A fork's pull request "
               "gets no OIDC token: the auth step is skipped and the gate says", "# it was "
               "given nothing (docs/github.md, section 4)."),
        adopt="Set up workload identity federation (docs/github.md, \"Claude on Google Vertex "
              "AI\") and add\n     the repository variables AGENT_GATE_GCP_PROVIDER, "
              f"AGENT_GATE_GCP_SERVICE_ACCOUNT,\n     {PROJECT_ENV} and {REGION_ENV} (`global`, "
              "or a region) (Settings → Secrets and\n     variables → Actions → Variables)",
        permissions=("id-token: write        # the OIDC token the auth step exchanges for "
                     "Google credentials",),
        env=(f"{PROJECT_ENV}: ${{{{ vars.{PROJECT_ENV} }}}}",
             f"{REGION_ENV}: ${{{{ vars.{REGION_ENV} }}}}"),
        steps=("- uses: google-github-actions/auth@7c6bc770dae815cd3e89ee6cdf493a5fab2cc093"
               "  # v3.0.0",
               "  " + OIDC_STEP_IF,
               "  with:",
               "    workload_identity_provider: ${{ vars.AGENT_GATE_GCP_PROVIDER }}",
               "    service_account: ${{ vars.AGENT_GATE_GCP_SERVICE_ACCOUNT }}"))
    env_prefixes = ("CLOUDSDK_",)  # gcloud's settings: never a task's
    routes: ClassVar[tuple[Route, ...]] = ROUTES
    credential_headers: ClassVar[tuple[str, ...]] = (BEARER_HEADER, KEY_HEADER)
    server_tools: ClassVar[tuple[ServerTool, ...]] = SERVER_TOOLS

    def __init__(self, project: str | None = None, region: str | None = None) -> None:
        self.project, self.region = project, region

    def _place(self) -> tuple[str, str]:
        """The session's project and region; the registered upstream (opened for no session:
        ``gate sim``'s listing of an agent's variables) the simulator's, or the environment's."""
        if self.project and self.region:
            return self.project, self.region
        return place(os.environ, simulated=True)

    def missing(self, environ: Mapping[str, str]) -> tuple[str, ...]:
        """The project, the region and application default credentials, each when absent."""
        out = tuple(n for n in (PROJECT_ENV, REGION_ENV) if not environ.get(n, "").strip())
        if not has_adc():  # google-auth reads the process's environment
            out += ("Google application default credentials (GOOGLE_APPLICATION_CREDENTIALS, "
                    "as google-github-actions/auth sets it)",)
        return out

    def open(self, environ: Mapping[str, str]) -> Endpoint:
        project, region = place(environ)
        base = environ.get(BASE_URL_ENV, "").strip()
        base = check_base_url(base, BASE_URL_ENV).removesuffix("/v1") if base \
            else endpoint(region)
        token = GoogleToken()
        token.bearer()  # no credentials, or refused: Unmeasurable before anything runs

        def sign(_: Outgoing) -> Mapping[str, str]:
            """The token, refreshed when it has expired; a refresh refused mid-run sends the
            request without one, and Google's 401 is infra (``fault``), never the agent's."""
            try:
                return token.headers()
            except Unmeasurable as exc:
                log.warning("vertex: %s", exc)
                return {}

        return Endpoint(Vertex(project, region), base, region, sign, "vertex")

    def simulated(self, base_url: str, credential: str) -> Endpoint:
        project, region = place(os.environ, simulated=True)
        return Endpoint(Vertex(project, region), base_url.rstrip("/"), region,
                        key_signer(credential, BEARER_HEADER), SIMULATOR)

    def simulator_refusal(self, header: Callable[[str], str], credential: str | None
                          ) -> str | None:
        """Google takes an OAuth access token as a bearer token, nothing else (an API key's
        header is no credential of its)."""
        auth = header(BEARER_HEADER)
        if not auth.lower().startswith("bearer ") or not auth[7:].strip():
            return ("Request is missing required authentication credential. Expected OAuth 2 "
                    "access token (simulated Vertex AI)")
        if credential is not None and auth[7:].strip() != credential:
            return "Request had invalid authentication credentials (simulated Vertex AI)"
        return None

    def match(self, method: str, rest: str) -> Matched | None:
        """A route of the configured project and region only (another project's path is
        refused, never signed with the gate's credential)."""
        found = super().match(method, rest)
        if found is None or found.model == COUNT_TOKENS_MODEL:  # count-tokens counts only
            return None
        project, region = self._place()
        prefix = f"v1/projects/{project}/locations/{region}/"
        return found if rest.startswith(prefix) else None

    # -- models and prices ------------------------------------------------------------------
    def price_model(self, model_id: str) -> str:
        return bare_model(model_id)

    def pricing(self, region: str | None, model_id: str | None = None) -> str:
        return "vertex global" if region in (None, "global") else \
            f"vertex regional (+{round((REGIONAL_PREMIUM - 1) * 100)} % from Sonnet 4.5)"

    def cost(self, prices: Prices, model: str, usage: Usage, region: str | None) -> float:
        base = prices.cost(self.price_model(model), usage)
        return base * price_factor(model, region or "global")

    # -- answers ----------------------------------------------------------------------------
    def fault(self, status: int, headers: Mapping[str, str], body: bytes) -> Fault:
        try:
            parsed: Any = json.loads(body)
        except ValueError:
            parsed = None
        google = google_error(parsed)
        if google is None:  # the model's service's own answer: the Messages API's shape
            return messages_fault(status, body)
        _, word, message = google
        return Fault(google_error_cause(status, word, message), f"{status} {word}")

    def count_probe(self, request: Mapping[str, Any]) -> Probe | None:
        project, region = self._place()
        body = {**request, "anthropic_version": VERTEX_VERSION}
        return Probe("/" + call_path(project, region, COUNT_TOKENS_MODEL),
                     json.dumps(body).encode(), {"content-type": "application/json"})

    # -- agents -----------------------------------------------------------------------------
    def agent_env(self, base_url: str, token: str) -> dict[str, str]:
        """Claude Code's Vertex settings with the meter as its gateway (it signs nothing and
        sends the run's token as a bearer token from ``ANTHROPIC_AUTH_TOKEN``), and the same
        token as an extra header for the SDK's ``AnthropicVertex``, which reads no token
        variable (measured: docs/upstreams.md)."""
        project, region = self._place()
        return {USE_ENV: "1", SKIP_AUTH_ENV: "1", BASE_URL_ENV: f"{base_url}/v1",
                PROJECT_ENV: project, REGION_ENV: region, TOKEN_ENV: token,
                HEADERS_ENV: f"Authorization: Bearer {token}"}

    def model_env(self, model: str) -> dict[str, str]:
        return {MODEL_ENV: model}

    def sdk_client(self, base_url: str, token: str, **options: Any) -> Any:
        """The SDK's ``AnthropicVertex`` at the meter, in the gate's project and region, with
        the run's token as its access token (it then asks google-auth for nothing)."""
        import anthropic

        project, region = self._place()
        return anthropic.AnthropicVertex(region=region, project_id=project, access_token=token,
                                         base_url=f"{base_url}/v1", **options)


VERTEX = register_upstream(Vertex())
