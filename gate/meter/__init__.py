"""The metering proxy: the single point every model request of every agent kind goes through.

Each run gets its own base URL (``http://127.0.0.1:PORT/r/<run-id>``) and its own token.
The proxy checks the token, swaps in the real credential (which only this process holds),
forwards the request upstream unchanged (path, query string, ``anthropic-*`` headers, body),
and passes the response back byte for byte — streams event by event, without buffering —
while parsing ``usage`` on the side (``message_start``, then each ``message_delta`` replaces
the fields it carries). A redirect is passed back, never followed, so the credential goes to the
configured API only; the environment's proxy and CA settings are honoured (read once). Without a
proxy, each agent connection has its own kept-alive upstream connection (``http.client``),
checked before each reuse and closed with the agent's; through a proxy, urllib3 pools them. A
stream that breaks after ``message_start`` still counts the input it was billed for. ``turns`` =
model requests of the run that the upstream answered.

A stream the agent cut short is counted from what passed: input from ``message_start``, output
from the last ``message_delta`` if one passed, else estimated at about 4 characters a token of
the content deltas relayed (``MeteredRequest.estimated``, the run's ``estimated`` note); one the
upstream cut or ended with an ``error`` event is billed as its ``message_start`` said. When
the agent goes away the upstream connection is closed at once: reading on would have the
provider generate, and bill, up to ``max_tokens`` for nobody.

Every request the upstream answers is in the run's totals, or the run says it is not: when a
run closes, its requests still in flight get a grace (10 s) to be counted; one still in flight
after it may yet be billed, so the run is marked *not fully metered* (``RunTotals.unmetered``),
never a cheaper pass. So does a billed model with no price (a command agent choosing its own):
it is never priced at $0 in silence; and a stream the agent cut before it began (nothing passed
to count it from). A request that reaches a closed run is not forwarded.

Who caused each problem is recorded (``Cause``): these are the agent's, and fail its run with
the reason (``unmetered_by``); so does an API error of the agent's making that it gives up on
(``agent_error``: a request the meter refused, a 400/413 from the API, a 404 for a model that
does not exist). The provider's and the machine's (5xx, 529, 429, a stream the upstream cut,
no connection, the gate's credential refused) are infra (``api_failure``), told apart by the
upstream's rule (``Upstream.fault``, gate/upstream: status and ``error.type`` for the Messages
API). An account out of credit is a 400 ``invalid_request_error`` too: it is infra only when
its message starts with the provider's credit message *and* the meter's own 1-token request on
the gate's credential gets the same answer (the API quotes a request's text in its validation
errors: a word anywhere in a message is the agent's to choose); what that check is billed is
the run's overhead.

Server tools (the provider runs them and may bill them per use: ``web_search_*``,
``web_fetch_*``, ``code_execution_*`` in ``tools``, a request's ``mcp_servers``) are refused
(400, the agent's) unless the suite allows them (``[suite].server_tools``, the base branch's).
Allowed, ``usage.server_tool_use``'s counts are priced from the price table's
``[server_tools]``; a billed count it has no price for, or a tool billed by time the usage does
not report (code execution), leaves the run not fully metered. Client tools may have a
``type`` too (``bash_*``, ``text_editor_*``, ``computer_*``, ``custom``): only the table's
prefixes make a server tool.

The meter forwards only what it parsed the way the API will: a POST body must be UTF-8 JSON in
which no object repeats a key (at any depth; parsers differ on which of two values wins, so
``{"model": cheap, "model": dear}`` could be priced as one model and run as the other); anything
else is a 400 ``invalid_request_error``, never forwarded. The gate's own headers (``X-Gate-*``,
any case) are dropped from what the agent sends; the meter sets its own.

Only an allow-list of endpoints is forwarded (the upstream's ``routes``: for the Messages API,
messages, count_tokens, the model list), matched on the path exactly as it will be sent — no
dot segments, percent-escapes or
doubled slashes that an HTTP library would normalise into something else — with a plain query
string. Anything else (batches, files, ``/v1/x/../messages``) gets a 403 in the API's error
shape and is recorded with the run, so it lands in the transcript; it never reaches the API
with the real key.

Measured vs billed (metering definition ``warm-prefix-v1``, docs/statistics.md): every run is
measured as if its shared prefix had been warm when it started, whatever the schedule. Each
messages request belongs to a *prefix family* (model + the ``tools`` and ``system`` it sends);
the first billed request of a family in a run that opens a conversation (no assistant turn yet)
has its cache writes counted as cache reads in the run's *measured* usage and cost, and the
write premium goes to the run's ``overhead_usd`` (suite overhead). What was billed is kept as
it was billed.

What is billed: the first messages request of each prefix family is single-flighted across
the suite (every run of a suite shares one meter). A cache entry is visible only once the
response that writes it has begun, so concurrent first requests (``--jobs N``) would each write
the shared tools + system. Instead the first request of a family that is not yet warm leads
and is forwarded at once; the family's other requests wait until the leader's response has
begun (``message_start`` of a stream; the whole answer of a JSON 2xx), then go and read it.
So a request may wait, once per family per suite. A leader that fails (an error status, a
connection error, a stream with no ``message_start``) hands the lead to the next request; a
wait ends, at the latest, after ``FIRST_FLIGHT_WAIT_S`` (the request then goes anyway) or when
the request's run is closed (answered with an error, not forwarded). Warm families, other
families and other endpoints never wait; the turn cap is checked before any wait. The
measurement (``warm-prefix-v1``) is unchanged: a request's standing (first of its family in its
run or not) is taken on arrival, before it waits, and a warm-start request measures the same
whether it wrote the shared part or read it.
"""

from gate.meter._flights import FIRST_FLIGHT_WAIT_S
from gate.meter._proxy import MeterProxy
from gate.meter._routes import MAX_REQUEST_BYTES, route
from gate.meter._run import (
    METERING,
    Cause,
    MeteredRequest,
    Prefix,
    RefusedRequest,
    RunMeter,
    RunTotals,
    prefix_family,
    warm,
)
from gate.meter._servertools import offered_server_tools
from gate.meter._sse import _SSELines, _SSEUsage
from gate.meter._upstream import CONNECT_TIMEOUT_S, upstream_pool, upstream_settings

__all__ = [
    "CONNECT_TIMEOUT_S",
    "FIRST_FLIGHT_WAIT_S",
    "MAX_REQUEST_BYTES",
    "METERING",
    "Cause",
    "MeterProxy",
    "MeteredRequest",
    "Prefix",
    "RefusedRequest",
    "RunMeter",
    "RunTotals",
    "_SSELines",
    "_SSEUsage",
    "offered_server_tools",
    "prefix_family",
    "route",
    "upstream_pool",
    "upstream_settings",
    "warm",
]
