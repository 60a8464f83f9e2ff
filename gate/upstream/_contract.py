"""The upstream port: what the gate needs to know of the model API its meter forwards to, as
one contract per upstream (Anthropic direct, a Messages-compatible gateway, Bedrock, Vertex).

An upstream owns its facts: the routes the meter accepts from an agent and where each goes
upstream, how a forwarded request is authenticated (a key header, a bearer token, a signature),
the environment variables it reads (its credentials, which every child's environment is
scrubbed of, and its settings), how its model names look and the id a configured model is
called by, whose fault each of its error answers is (the infra-or-agent rule, per upstream),
its server tools, its prices (a hook: a regional endpoint may be priced above the global one),
and what a command agent's environment holds to reach the meter. The meter, the session, the
agents, the scrub, the simulator and ``gate ci`` ask it; nothing else names a provider.

Adding one is a module and a row: a subclass of :class:`Upstream` registered with
:func:`register_upstream` (imported by the package's ``__init__`` so that the scrub knows its
credentials whichever upstream a run uses).
"""

from __future__ import annotations

import abc
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Literal, Protocol, TypeVar

from gate.errors import BadInput

if TYPE_CHECKING:  # the usage model is pydantic's: the CLI's start-up (gate.secrets) imports this
    from gate.usage import Usage


class Prices(Protocol):
    """The price table, as an upstream's price rule reads it (``gate.core.cost.PriceTable``: the
    port stands below it, which reads the configuration)."""

    def cost(self, model: str, usage: Usage) -> float: ...

#: what a route is for: the one billable kind (a model's answer: metered), a free count of a
#: prompt's tokens, the model list
RouteKind = Literal["messages", "count_tokens", "models"]
#: who caused an error answer: the agent (its request refused as it made it), the provider or
#: the machine (infra); ``credit?``: the account's credit, if the meter's own request on the
#: gate's credential confirms it (else the agent's)
Cause = Literal["agent", "provider", "credit?"]


#: the headers the meter reads an agent's run token from, whatever the upstream: an API key's
#: (as Claude Code sends one) and a bearer token's (as the Python SDK does)
RUN_TOKEN_HEADERS = ("x-api-key", "authorization")


@dataclass(frozen=True)
class Route:
    """A request the meter accepts from an agent: ``method`` and ``path`` (matched, whole, on
    the path relative to the run's root exactly as it will be sent; a named group ``model``
    when the model is in the path, as on Bedrock and Vertex). ``stream``: the path says the
    answer streams (``True``/``False``), or ``None``: the body's ``stream`` says."""

    method: str
    path: re.Pattern[str]
    kind: RouteKind
    stream: bool | None = None

    def describe(self) -> str:
        return f"{self.method} /{self.path.pattern}"


@dataclass(frozen=True)
class Matched:
    """An agent's request matched to a route: ``target`` is the path (relative to the
    upstream's base URL, with its leading ``/``) it is forwarded to; ``model`` the model the
    path names, if it names one."""

    route: Route
    target: str
    model: str | None = None

    @property
    def billable(self) -> bool:
        return self.route.kind == "messages"


@dataclass(frozen=True)
class Outgoing:
    """A request on its way upstream, as the authentication sees it (a signature covers the
    method, the URL, the headers and the body)."""

    method: str
    url: str  # the full upstream URL with its query string
    headers: Mapping[str, str]
    body: bytes


@dataclass(frozen=True)
class Fault:
    """Whose fault an error answer is, and the error as the run records it (``429
    rate_limit_error``)."""

    cause: Cause
    why: str


@dataclass(frozen=True)
class ServerTool:
    """A tool the provider runs (and may bill) itself, named as ``[suite].server_tools`` names
    it. ``fee``: ``count`` (``usage.server_tool_use[<price_key>]`` uses, priced per use by the
    price table), ``time`` (billed by the time it runs, which the usage does not report: a run
    that offered it is not fully metered) or ``none`` (only its tokens)."""

    name: str
    type_prefix: str | None  # a ``tools[]`` entry's ``type`` starts with it
    fee: Literal["count", "time", "none"]
    price_key: str | None = None
    request_field: str | None = None  # or the request offers it in a field of its own


@dataclass(frozen=True)
class Probe:
    """A request of the meter's own (a credit check, a count of tokens): the path (relative
    to the base URL), its JSON body and its headers, before authentication."""

    target: str
    body: bytes
    headers: Mapping[str, str]


@dataclass(frozen=True)
class Record:
    """What a results file records of the upstream that answered its runs (never a key):
    the upstream's name, its provider, its region (None: none, or global), the model id as
    called, the base URL's host, and the price rules applied (``pricing``: two files priced
    by different rules compare their cost, they do not gate on it); ``project``: the cloud
    project the calls were made in, where the upstream has one (Vertex), recorded only then."""

    upstream: str
    provider: str
    region: str | None
    model_id: str | None
    host: str | None
    pricing: str
    project: str | None = None

    def as_dict(self) -> dict[str, Any]:
        out = {"upstream": self.upstream, "provider": self.provider, "region": self.region,
               "model_id": self.model_id, "host": self.host, "pricing": self.pricing}
        return out if self.project is None else {**out, "project": self.project}


@dataclass(frozen=True)
class CISetup:
    """How a GitHub Actions job hands the gate this upstream's credential and settings: what
    ``gate init --upstream`` writes into the measuring jobs of its workflows (the PR check,
    main's refresh), and what its next steps tell a person to set up. Each field is YAML
    lines, written at the indentation of where they go.

    ``needs``: the workflows' header comment (``#`` lines); ``permissions``: the measuring
    job's permissions beyond ``contents`` and ``pull-requests`` (``id-token: write`` where an
    OIDC token is exchanged, and only there); ``env``: the job's environment; ``steps``: the
    steps before the gate's (an OIDC exchange); ``step_env`` and ``inputs``: the gate step's
    ``env:`` and ``with:``; ``adopt``: the next steps' line on what to add to the repository."""

    needs: tuple[str, ...]
    adopt: str
    permissions: tuple[str, ...] = ()
    env: tuple[str, ...] = ()
    steps: tuple[str, ...] = ()
    step_env: tuple[str, ...] = ()
    inputs: tuple[str, ...] = ()


class StreamDecoder(abc.ABC):
    """Turns an upstream stream's bytes, as they arrive, into the Messages API's SSE bytes
    the meter reads usage from (the bytes the agent gets are never changed)."""

    @abc.abstractmethod
    def feed(self, chunk: bytes) -> bytes:
        """The SSE bytes ``chunk`` completes (``b""``: none yet)."""


@dataclass(frozen=True)
class Endpoint:
    """An upstream opened for one session: its base URL, its region, what the results
    record, and how each forwarded request is authenticated (``sign``: the headers to add;
    every credential header an agent sent was dropped before). It holds the credential, so it
    stays in the gate's process: never in a results file, a log or a child's environment."""

    upstream: Upstream
    base_url: str
    region: str | None
    sign: Callable[[Outgoing], Mapping[str, str]] = field(repr=False)
    #: how the results' ``upstream`` field names it (``simulator``: the built-in simulator)
    label: str = "api"

    @property
    def simulated(self) -> bool:
        return self.label == SIMULATOR

    @property
    def host(self) -> str | None:
        from urllib.parse import urlsplit

        return urlsplit(self.base_url).hostname

    def record(self, model: str | None) -> Record:
        """What the results record, for a run of configured ``model`` (None: no model)."""
        up = self.upstream
        called = up.model_id(model, self.region) if model else None
        return Record(up.name, up.provider, self.region, called, self.host,
                      up.pricing(self.region, called), up.project)


#: the label of an endpoint that is the built-in simulator
SIMULATOR = "simulator"


class Upstream(abc.ABC):
    """One model API the meter can forward to. Subclasses set the class attributes and
    implement :meth:`open`; the rest has the Messages API's answer by default."""

    name: ClassVar[str]  # as ``[agent] upstream`` names it
    provider: ClassVar[str]  # whose model API it is, as a results file records it
    #: the variables it reads a credential from: withheld from every child (a task, an agent),
    #: whichever upstream the run uses
    credential_env: ClassVar[tuple[str, ...]] = ()
    #: how a CI job passes its credential to the gate (the end of "add it as a repository
    #: secret and …"), for the one line that says it is missing
    credential_setup: ClassVar[str] = "set it in the step's environment"
    #: what ``gate init --upstream <name>`` writes into a measuring job for it
    ci: ClassVar[CISetup]
    #: prefixes of its clients' variables: never a task's, credential or not (withheld
    #: without a note unless they hold a credential)
    env_prefixes: ClassVar[tuple[str, ...]] = ()
    #: the routes the meter accepts from an agent (anything else: 403, never forwarded)
    routes: ClassVar[tuple[Route, ...]] = ()
    #: the request headers an agent may carry a credential (or the run's token) in: dropped,
    #: never forwarded; what the upstream needs, its ``sign`` sets
    credential_headers: ClassVar[tuple[str, ...]] = RUN_TOKEN_HEADERS
    #: a header of its own an agent may carry the run's token in (besides ``x-api-key`` and
    #: ``Authorization: Bearer``, which the meter always reads), for a client that signs
    #: nothing and sends neither; dropped, never forwarded
    token_header: ClassVar[str | None] = None
    #: the response header that names the upstream's request id
    request_id_header: ClassVar[str] = "request-id"
    server_tools: ClassVar[tuple[ServerTool, ...]] = ()
    #: the simulator's module that speaks this upstream's protocol in front of the Messages
    #: simulator (its ``start_front``); None: the simulator speaks the Messages API itself
    simulator_front: ClassVar[str | None] = None

    #: the cloud project an upstream opened for a session calls in (Vertex's), else None
    project: str | None = None

    @property
    def credential_name(self) -> str:
        """The credential variable a person sets (the first of :attr:`credential_env`)."""
        return self.credential_env[0] if self.credential_env else f"the {self.name} credential"

    @property
    def withheld_name(self) -> str:
        """What a run GitHub gives no secrets (a fork's, Dependabot's) lacks, in words: the
        credential variable, or for an upstream reached through OIDC the credential and the
        token GitHub withholds with it."""
        return self.credential_name

    # -- reaching it ------------------------------------------------------------------------
    def missing(self, environ: Mapping[str, str]) -> tuple[str, ...]:
        """What a real (not simulated) session needs from ``environ`` and does not find, each
        as a person sets it (``gate ci`` says them all in one line and exits 3 before anything
        runs); ``()``: nothing is missing. A malformed value is not missing: :meth:`open`
        refuses it (exit 2). By default: none of :attr:`credential_env` is set."""
        if any(environ.get(n, "").strip() for n in self.credential_env):
            return ()
        return (self.credential_name,)

    @abc.abstractmethod
    def open(self, environ: Mapping[str, str]) -> Endpoint:
        """The endpoint for a session, from the gate's environment: a missing credential is
        ``Unmeasurable`` (nothing can run), a malformed setting ``BadInput`` naming the
        variable (exit 2)."""

    @abc.abstractmethod
    def simulated(self, base_url: str, credential: str) -> Endpoint:
        """The endpoint of the built-in simulator at ``base_url``, authenticated as this
        upstream authenticates (the simulator checks it) with the simulator's ``credential``."""

    def simulator_auth(self) -> str:
        """How the simulator checks a request's credential (the upstream's name whose
        :meth:`simulator_refusal` it asks)."""
        return self.name

    def simulator_refusal(self, header: Callable[[str], str], credential: str | None
                          ) -> str | None:
        """Why the simulator, standing in for this upstream with ``credential`` (None: any),
        refuses a request's authentication (a 401), or None. By default: any credential in
        an API key's header or a bearer token, the one given if given."""
        given = self.run_token(header)
        if not given:
            return f"an {RUN_TOKEN_HEADERS[0]} header or a bearer token is required"
        if credential is not None and given != credential:
            return "invalid credential (the simulator's)"
        return None

    def run_token(self, header: Callable[[str], str]) -> str:
        """The run's token as an agent's request carries it (``header(name)``: a header's
        value, ``""`` if absent): an API key's header, else a bearer token, else the
        upstream's own header; ``""``: none."""
        given = header(RUN_TOKEN_HEADERS[0])
        auth = header(RUN_TOKEN_HEADERS[1])
        if not given and auth.lower().startswith("bearer "):
            given = auth[7:].strip()
        if not given and self.token_header:
            given = header(self.token_header)
        return given

    def match(self, method: str, rest: str) -> Matched | None:
        """The route ``method`` ``rest`` (relative to the run's root, exactly as sent) takes,
        or None: refused. By default it goes upstream by the same path."""
        for route in self.routes:
            found = route.path.fullmatch(rest) if method == route.method else None
            if found is not None:
                model = found.groupdict().get("model")
                return Matched(route, "/" + rest, model)
        return None

    def allowed(self) -> str:
        """The routes, as a refusal lists them."""
        return ", ".join(r.describe() for r in self.routes)

    # -- models and prices ------------------------------------------------------------------
    def model_id(self, model: str, region: str | None) -> str:
        """The id the configured ``model`` is called by on this upstream (in ``region``)."""
        return model

    def price_model(self, model_id: str) -> str:
        """The model a called id is priced (and compared) as, in the price table's names."""
        return model_id

    def pricing(self, region: str | None, model_id: str | None = None) -> str:
        """The name of the price rules a request in ``region`` (of ``model_id`` as called,
        when the rule depends on it) is priced by (recorded)."""
        return self.provider

    def cost(self, prices: Prices, model: str, usage: Usage, region: str | None) -> float:
        """USD for ``usage`` of ``model`` (as called) in ``region``: the price table's, by
        default; an upstream whose regional endpoints cost more applies its rule here.
        A model with no price is ``BadInput``."""
        return prices.cost(self.price_model(model), usage)

    # -- answers ----------------------------------------------------------------------------
    def fault(self, status: int, headers: Mapping[str, str], body: bytes) -> Fault:
        """Whose fault an error answer (``status`` ≥ 400 or an error in a 2xx) is: by
        default the provider's, as an answer no rule recognises."""
        return Fault("provider", f"HTTP {status}")

    def stream_decoder(self, content_type: str) -> StreamDecoder | None:
        """For a streamed answer of ``content_type``, what turns its bytes into the SSE the
        meter reads usage from; None: not a stream (a JSON answer). The default: an SSE
        stream, read as it is."""
        return _AsIs() if "text/event-stream" in content_type else None

    def credit_probe(self, model: str) -> Probe | None:
        """The meter's own smallest billable request, to confirm an account out of credit
        (None: the upstream has no such answer)."""
        return None

    def is_credit_answer(self, status: int, body: Any) -> bool:
        return False

    def count_probe(self, request: Mapping[str, Any]) -> Probe | None:
        """The meter's own request for the input tokens of a Messages ``request`` (None: the
        upstream counts none), answered ``{"input_tokens": n}``."""
        return None

    # -- agents -----------------------------------------------------------------------------
    def agent_env(self, base_url: str, token: str) -> dict[str, str]:
        """What a command agent (Claude Code, an SDK) gets to reach the meter at
        ``base_url`` with the run's ``token``."""
        return {}

    def model_env(self, model: str) -> dict[str, str]:
        """The variable that tells a command agent which model to ask for."""
        return {}

    def agent_model(self, model: str) -> str:
        """The model id an agent asks for when ``model`` is configured (the builtin agent's
        ``model``; a command agent's :meth:`model_env`)."""
        return model

    def sdk_client(self, base_url: str, token: str, **options: Any) -> Any:
        """The ``anthropic`` SDK client that speaks this upstream's format to the meter at
        the run's root ``base_url`` with the run's ``token`` (the builtin agent's; ``options``:
        the client's own, ``max_retries``, ``timeout``, ``http_client``)."""
        import anthropic

        return anthropic.Anthropic(base_url=base_url, api_key=token, **options)


class _AsIs(StreamDecoder):
    def feed(self, chunk: bytes) -> bytes:
        return chunk


#: what a regional (or multi-region) endpoint costs over the global one on the cloud platforms
#: (Anthropic's pricing page, "third-party platforms", read 2026-12: from Claude Sonnet 4.5 and
#: Haiku 4.5 on, Bedrock's regional endpoints and geographic inference profiles and Vertex's
#: regional and multi-region endpoints cost 10 % more than global; older models keep one price)
REGIONAL_PREMIUM = 1.10
#: the models that keep one price wherever they run (released before Claude Sonnet 4.5), as
#: the Messages API or the price table names them, their date dropped
_ONE_PRICE = re.compile(
    r"claude-(?:3-[0-9a-z-]+|(?:haiku|sonnet|opus)-3(?:-\d)?|(?:opus|sonnet)-4|opus-4-1)")
_DATE = re.compile(r"(?:@|-)[0-9]{8}$")


#: the ``if:`` of a step that exchanges the job's OIDC token: GitHub gives a fork's pull request
#: (and Dependabot's) none, so there the step is skipped and the gate says it was given nothing
OIDC_STEP_IF = ("if: github.event.pull_request.head.repo.fork != true && github.actor != "
                "'dependabot[bot]'")


def regional_factor(model: str, regional: bool) -> float:
    """What a request of ``model`` (a Messages API id, dated or not, ``@date`` too) costs as a
    multiple of the list price: 1 on a global endpoint; on a ``regional`` one
    :data:`REGIONAL_PREMIUM` from Claude Sonnet 4.5 on, 1 for the older models."""
    if not regional or _ONE_PRICE.fullmatch(_DATE.sub("", model)):
        return 1.0
    return REGIONAL_PREMIUM


_UPSTREAMS: dict[str, Upstream] = {}


U = TypeVar("U", bound=Upstream)


def register_upstream(upstream: U) -> U:
    """Register an upstream by its name (``ANTHROPIC = register_upstream(Anthropic())``)."""
    if upstream.name in _UPSTREAMS:
        raise ValueError(f"upstream {upstream.name!r} is registered twice")
    _UPSTREAMS[upstream.name] = upstream
    return upstream


def upstream_names() -> tuple[str, ...]:
    return tuple(_UPSTREAMS)


def get_upstream(name: str, *, where: str = "[agent] upstream") -> Upstream:
    """The registered upstream ``name``; an unknown one is ``BadInput`` naming ``where``."""
    try:
        return _UPSTREAMS[name]
    except KeyError:
        raise BadInput(f"{where}: unknown upstream {name[:60]!r} "
                       f"(known: {', '.join(_UPSTREAMS)})") from None


def credential_variables() -> tuple[str, ...]:
    """Every registered upstream's credential variables (the scrub withholds them all)."""
    return tuple(dict.fromkeys(n for u in _UPSTREAMS.values() for n in u.credential_env))


def provider_prefixes() -> tuple[str, ...]:
    """The variable prefixes of every registered upstream's clients."""
    return tuple(dict.fromkeys(p for u in _UPSTREAMS.values() for p in u.env_prefixes))
