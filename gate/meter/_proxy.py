"""The metering proxy itself: a real HTTP server on loopback in front of the upstream API,
which checks each run's token, swaps in the real credential and meters what passes."""

from __future__ import annotations

import contextlib
import http.client
import json
import secrets
import threading
import time
from collections.abc import Callable, Collection, Mapping
from http.server import ThreadingHTTPServer
from typing import Any

import urllib3
from urllib3.util.wait import wait_for_read

from gate.core.cost import PriceTable
from gate.errors import BadInput
from gate.meter._flights import FIRST_FLIGHT_WAIT_S, _FirstFlights, _Lead
from gate.meter._http import _Handler
from gate.meter._routes import (
    _RESPONSE_DROP,
    MAX_REQUEST_BYTES,
    AmbiguousBody,
    forwarded_headers,
    parse_body,
    route,
)
from gate.meter._run import Cause, MeteredRequest, Prefix, RefusedRequest, RunMeter
from gate.meter._servertools import (
    refused_server_tool,
    server_tool_counts,
    unmetered_server_tool,
)
from gate.meter._sse import _Broken, _SSEUsage
from gate.meter._upstream import (
    _UPSTREAM_ERRORS,
    CONNECT_TIMEOUT_S,
    _Answer,
    _chunks,
    _tls_context,
    upstream_pool,
    upstream_settings,
)
from gate.upstream import ANTHROPIC, Endpoint, Matched, Outgoing, Probe, StreamDecoder
from gate.usage import Usage

#: how long the meter's own check of the account's credit holds for every run
CREDIT_CHECK_TTL_S = 30.0
#: how long the gate waits for a count of tokens (a count not given is never guessed)
COUNT_TIMEOUT_S = 20.0


class MeterProxy:
    """A real HTTP server on loopback in front of the upstream API."""

    def __init__(
        self,
        upstream: str | Endpoint,
        credential: str | None,
        prices: PriceTable,
        *,
        credential_header: str | None = None,
        host: str = "127.0.0.1",
        timeout: float = 600,
        observer: Callable[[str, bytes], None] | None = None,
        run_header: str | None = None,
        first_flight_wait: float = FIRST_FLIGHT_WAIT_S,
        server_tools: Collection[str] = (),
    ) -> None:
        """``observer(run_id, body)`` sees each authenticated request body (benchmarks).
        ``first_flight_wait``: how long a request waits at most for its family's first
        response to begin (then it goes anyway, and may write the prefix again).
        ``run_header``: a header naming the run (``<task>-r<replication>``) on every forwarded
        request — for the simulator only, which derives the run's randomness from it.
        ``server_tools``: the server tools a request may offer (``[suite].server_tools``);
        a request that offers another is refused, as the agent's.

        ``upstream``: the opened upstream (:class:`gate.upstream.Endpoint`: its routes, its
        authentication, its answers), or the base URL of the Messages API direct with
        ``credential`` in ``credential_header`` (by default the API key's)."""
        self._run_header = run_header
        if isinstance(upstream, str):
            upstream = ANTHROPIC.direct(upstream, credential or "", *(
                (credential_header,) if credential_header else ()))
        self.endpoint = upstream
        self.api = upstream.upstream
        self.upstream = upstream.base_url.rstrip("/")
        self.prices = prices
        self.timeout = timeout
        self.first_flight_wait = first_flight_wait
        self._observer = observer
        self._runs: dict[str, RunMeter] = {}
        self._flights = _FirstFlights()
        self.unpriced: set[str] = set()
        self.server_tools = frozenset(server_tools)
        self._credit_check: tuple[float, bool] | None = None  # (when, out of credit)
        self._lock = threading.Lock()
        proxy, verify = upstream_settings(self.upstream)
        url = urllib3.util.parse_url(self.upstream)
        if url.host in ("127.0.0.1", "localhost"):
            proxy = None  # a loopback upstream (the simulator) is never reached through a proxy
        self._origin = (url.scheme or "http", url.host or "", url.port)
        self._base_path = url.path or ""
        self._tls = _tls_context(verify) if url.scheme == "https" else None
        self._timeout = urllib3.Timeout(connect=CONNECT_TIMEOUT_S, read=timeout)
        # through a proxy: urllib3's pool manager (http, https or socks proxies, as requests
        # would use them); without one, each agent connection gets its own upstream connection
        # (http.client, kept alive): urllib3's layers were a quarter of the meter's time
        self._pool = upstream_pool(proxy, verify) if proxy else None
        self._server = ThreadingHTTPServer((host, 0), self._handler_class())
        self._server.daemon_threads = True
        self._thread: threading.Thread | None = None

    def __repr__(self) -> str:
        return f"MeterProxy(upstream={self.upstream!r}, url={self.url!r})"

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self) -> MeterProxy:
        # a short poll: close() (shutdown) returns at once, not after up to half a second
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,),
                                        name="gate-meter", daemon=True)
        self._thread.start()
        return self

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        if self._pool is not None:
            self._pool.clear()

    def __enter__(self) -> MeterProxy:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def open_run(self, run_name: str, *, max_turns: int | None = None,
                 max_cost_usd: float | None = None) -> RunMeter:
        run_id = f"{run_name}-{secrets.token_hex(4)}"
        meter = RunMeter(run_id=run_id, token="gate-run-" + secrets.token_urlsafe(24),
                         base_url=f"{self.url}/r/{run_id}", _proxy=self,
                         max_turns=max_turns, max_cost_usd=max_cost_usd, run_name=run_name,
                         api=self.api)
        with self._lock:
            self._runs[run_id] = meter
        return meter

    def _forget(self, run_id: str) -> None:
        with self._lock:
            self._runs.pop(run_id, None)
        self._flights.wake()

    def _lookup(self, run_id: str) -> RunMeter | None:
        with self._lock:
            return self._runs.get(run_id)

    # -- request handling -----------------------------------------------------------------
    def _handler_class(self) -> type[_Handler]:
        proxy = self

        class Handler(_Handler):
            def do_POST(self) -> None:
                proxy._handle(self)

            do_GET = do_PUT = do_PATCH = do_DELETE = do_POST

        return Handler

    def _send_error(self, h: _Handler, status: int, kind: str, msg: str) -> None:
        body = json.dumps({"type": "error", "error": {"type": kind, "message": msg},
                           "request_id": None}).encode()
        h.respond(status, [("content-type", "application/json")], body)

    def _handle(self, h: _Handler) -> None:
        path, _, query = h.path.partition("?")
        parts = path.split("/", 3)  # "", "r", run_id, rest
        run = self._lookup(parts[2]) if len(parts) == 4 and parts[1] == "r" else None
        if run is None:
            h.close_connection = True  # its body is not read: it must not pass for a request
            self._send_error(h, 404, "not_found_error", "unknown run (the gate's meter)")
            return
        given = self.api.run_token(h.header)
        if not secrets.compare_digest(given.encode(), run.token.encode()):
            h.close_connection = True  # as above
            run.agent_fault("a request without the run's token (401 from the gate's meter)")
            self._send_error(h, 401, "authentication_error", "invalid run token")
            return
        length = h.content_length
        if length > MAX_REQUEST_BYTES:  # the API's own limit is lower; never read it in
            h.close_connection = True
            run.agent_fault(f"a request body over {MAX_REQUEST_BYTES} bytes (413 from the "
                            "gate's meter)")
            self._send_error(h, 413, "request_too_large",
                             f"request body over {MAX_REQUEST_BYTES} bytes (the gate's meter)")
            return
        body = h.rfile.read(length) if length > 0 else b""
        endpoint = route(self.api, h.command, parts[3], query)
        if endpoint is None:
            shown = h.path.split("/", 3)[3][:300]
            run.refuse(RefusedRequest(h.command, "/" + shown))
            self._send_error(h, 403, "permission_error", (
                f"the gate's meter does not forward {h.command} /{shown[:120]}: only "
                f"{self.api.allowed()} are allowed during a gated run"))
            return
        self._meter(h, run, endpoint, query, body)

    def _meter(self, h: _Handler, run: RunMeter, endpoint: Matched, query: str,
               body: bytes) -> None:
        """An allowed request of a known run: parsed, admitted, forwarded and counted. Each
        refusal is a 400 ``invalid_request_error`` (a 404 once the run is closed): clients
        (the SDKs, Claude Code) do not retry it, and it is never forwarded, so it is neither
        billed nor counted as an API failure."""
        billable = endpoint.billable
        tools = self.api.server_tools
        try:  # parsed as the meter prices it; what parses two ways is never forwarded
            payload: Any = parse_body(body) if h.command == "POST" else {}
        except AmbiguousBody as exc:
            run.agent_fault(f"400 from the gate's meter: {exc}")
            self._send_error(h, 400, "invalid_request_error", f"{exc} (the gate's meter)")
            return
        if billable and (why := refused_server_tool(payload, tools, self.server_tools)) is not None:
            run.agent_fault(f"400 from the gate's meter: {why}")
            self._send_error(h, 400, "invalid_request_error", f"{why} (the gate's meter)")
            return
        if billable and (refusal := run.admit_message()) is not None:
            self._send_error(h, 400, "invalid_request_error", refusal)
            return
        if not run.begin(billable):
            if billable:
                run.message_done()
            self._send_error(h, 404, "not_found_error", "run closed (the gate's meter)")
            return
        if self._observer is not None:
            self._observer(run.run_id, body)
        if billable and (unbilled := unmetered_server_tool(payload, tools)) is not None:
            run.not_metered(unbilled)
        prefix = run.prefix(payload)  # where the request stands on arrival, before any wait
        lead: _Lead | None = None
        try:
            if billable and prefix.family is not None:
                leads = self._flights.enter(prefix.family, run, self.first_flight_wait)
                if leads is None:
                    with contextlib.suppress(OSError):
                        self._send_error(h, 404, "not_found_error",
                                         "run closed while its request waited (the gate's meter)")
                    return
                if leads:
                    lead = _Lead(self._flights, prefix.family)
            self._forward(h, run, endpoint, query, body, payload, prefix, lead)
        finally:
            if lead is not None:
                lead.release()
            run.end(billable)
            if billable:
                run.message_done()

    def _forward(self, h: _Handler, run: RunMeter, endpoint: Matched, query: str,
                 body: bytes, payload: Any, prefix: Prefix, lead: _Lead | None) -> None:
        model, stream = endpoint.model or "unknown", bool(endpoint.route.stream)
        with contextlib.suppress(AttributeError):
            model = endpoint.model or str(payload.get("model") or "unknown")
            stream = endpoint.route.stream if endpoint.route.stream is not None \
                else bool(payload.get("stream"))
        target = endpoint.target + (f"?{query}" if query else "")
        headers = forwarded_headers(h.header_list, self.api)
        headers["accept-encoding"] = "identity"  # pass bytes through unchanged
        if self._run_header:
            headers[self._run_header] = run.run_name
        headers.update(self._signed(h.command, target, headers, body))
        is_messages = endpoint.billable
        # sent as is: no retry, and a redirect is passed back, never followed with the
        # credential; the body is read as it arrives, never decoded
        try:
            if self._pool is None:
                resp = self._send_direct(h, target, body, headers)
                answer = _Answer(resp.status, resp.msg, resp.read, resp.read1)
            else:
                up = self._pool.urlopen(
                    h.command, self.upstream + target, body=body, headers=headers,
                    preload_content=False, decode_content=False, redirect=False,
                    retries=False, timeout=self._timeout)
                answer = _Answer(up.status, up.headers, up.read, up.read1)
        except _UPSTREAM_ERRORS as exc:
            if is_messages:
                run.add(MeteredRequest(model, 0, stream, Usage(), 0.0,
                                       error=f"connection error: {type(exc).__name__}",
                                       prefix=prefix))
            self._send_error(h, 502, "api_error", "upstream unreachable (the gate's meter)")
            return
        try:
            self._relay(h, answer, run, model, is_messages, prefix, lead)
        finally:
            # a response not read to its end (the agent went away, a broken stream): the
            # upstream may still be sending on that connection; never reuse it
            if self._pool is None:
                if not resp.isclosed() or resp.will_close:
                    self._drop_direct(h)
            else:
                if not up.closed:
                    up.close()
                up.release_conn()

    def _signed(self, method: str, target: str, headers: dict[str, str], body: bytes
                ) -> Mapping[str, str]:
        """The upstream's authentication of a request to ``target`` (its key, its bearer
        token, its signature over what is sent)."""
        return self.endpoint.sign(Outgoing(method, self.upstream + target, dict(headers), body))

    def _send_direct(self, h: _Handler, target: str, body: bytes,
                     headers: dict[str, str]) -> http.client.HTTPResponse:
        """The request on the agent connection's own upstream connection: reused while the
        upstream keeps it open (idle and not readable: an idle connection that reads as ready
        was closed, or holds bytes nobody asked for), else a new one."""
        conn = h.upstream_conn
        if conn is not None and (conn.sock is None or wait_for_read(conn.sock, timeout=0.0)):
            self._drop_direct(h)
            conn = None
        try:
            if conn is None:
                conn = h.upstream_conn = self._connect()
            conn.request(h.command, self._base_path + target, body=body or None,
                         headers=headers)
            return conn.getresponse()
        except BaseException:
            self._drop_direct(h)
            raise

    def _connect(self) -> http.client.HTTPConnection:
        scheme, host, port = self._origin
        conn = (http.client.HTTPSConnection(host, port, timeout=CONNECT_TIMEOUT_S,
                                            context=self._tls)
                if scheme == "https" else
                http.client.HTTPConnection(host, port, timeout=CONNECT_TIMEOUT_S))
        try:
            conn.connect()
        except BaseException:
            conn.close()
            raise
        assert conn.sock is not None
        conn.sock.settimeout(self.timeout)  # connecting: 10 s; waiting on the model: long
        return conn

    @staticmethod
    def _drop_direct(h: _Handler) -> None:
        if h.upstream_conn is not None:
            h.upstream_conn.close()
            h.upstream_conn = None

    def _relay(self, h: _Handler, up: _Answer, run: RunMeter,
               model: str, is_messages: bool, prefix: Prefix | None = None,
               lead: _Lead | None = None) -> None:
        """Pass the response back; a leading request's family is warm once its message has
        started (``message_start`` of a stream; the whole body of a JSON 2xx answer)."""
        decoder = self.api.stream_decoder(up.headers.get("content-type", ""))
        head = [(k, v) for k, v in up.headers.items() if k.lower() not in _RESPONSE_DROP]
        request_id = up.headers.get(self.api.request_id_header)
        if decoder is not None:
            self._relay_sse(h, up, run, model, is_messages, prefix, lead, head, request_id,
                            decoder)
            return
        try:
            data = up.read()
        except _UPSTREAM_ERRORS as exc:
            if is_messages:
                run.add(MeteredRequest(model, up.status, False, Usage(), 0.0,
                                       error=f"response broken: {type(exc).__name__}",
                                       request_id=request_id, prefix=prefix))
            h.close_connection = True  # nothing was sent: a cut connection tells the client
            return
        if lead is not None and 200 <= up.status < 300:
            lead.began()
        if is_messages:
            metered = self._metered_json(run, model, up.status, data, request_id,
                                         {k.lower(): v for k, v in up.headers.items()})
            metered.prefix = prefix
            run.add(metered, self._pricer(run))
        with contextlib.suppress(OSError):
            h.respond(up.status, head, data)

    def _relay_sse(self, h: _Handler, up: _Answer, run: RunMeter, model: str,
                   is_messages: bool, prefix: Prefix | None, lead: _Lead | None,
                   head: list[tuple[str, str]], request_id: str | None,
                   decoder: StreamDecoder) -> None:
        """A stream, event by event (read for usage through the upstream's ``decoder``). When
        the agent goes away mid-stream the upstream is closed at once (the caller drops it:
        reading on would have the provider generate, and bill, up to ``max_tokens`` for
        nobody), and the output is counted from what passed."""
        tracker = _SSEUsage()
        broken: str | None = None
        by: Cause | None = None
        try:
            h.respond(up.status, [*head, ("transfer-encoding", "chunked")])
            for chunk in _chunks(up):
                tracker.feed(decoder.feed(chunk))
                if lead is not None and tracker.started:
                    lead.began()
                h.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                h.wfile.flush()
            if tracker.started and not tracker.stopped and tracker.error is None:
                raise _Broken("upstream closed the stream before message_stop")
        except _Broken as exc:
            broken, by = f"stream broken: {exc}"[:200], "provider"
        except OSError:  # writing to the agent (reading the upstream raises _Broken)
            broken, by = "client went away mid-stream", "agent"
        if is_messages:  # recorded before the client can see the end of the stream
            self._record_stream(run, model, up.status, tracker, broken, by, request_id,
                                prefix)
        if broken:
            h.close_connection = True  # no terminating chunk: the client sees the break
        else:
            with contextlib.suppress(OSError):
                h.wfile.write(b"0\r\n\r\n")
                h.wfile.flush()

    def _record_stream(self, run: RunMeter, model: str, status: int, tracker: _SSEUsage,
                       broken: str | None, by: Cause | None, request_id: str | None,
                       prefix: Prefix | None) -> None:
        """A stream's request, billed from its ``message_start``. Cut by the agent before a
        ``message_delta`` carried the output, its output tokens are an estimate from what
        passed, marked so; cut before it began, nothing passed to count it from: the run is
        not fully metered, by the agent's doing. A stream the upstream cut or ended with an
        ``error`` event is billed as its ``message_start`` said (as the provider bills it)."""
        usage = Usage.from_api(tracker.usage) if tracker.usage else Usage()
        estimate = tracker.output_estimate()
        estimated = (by == "agent" and tracker.started and not tracker.delta_usage
                     and estimate is not None)
        if estimated:
            usage = usage.model_copy(update={"output_tokens": estimate})
        if by == "agent" and not tracker.started:
            run.not_metered("not fully metered: the agent cut a model stream before it began "
                            "(the upstream may bill it; nothing passed to count it from)")
        error = tracker.error or broken
        fee = self._tool_fee(run, tracker.usage) if tracker.started else 0.0
        run.add(MeteredRequest(
            model, status, True, usage,
            self._price(run, model, usage) + fee if tracker.started else 0.0,
            error=error, request_id=request_id, billed=tracker.started, prefix=prefix,
            by=(by or "provider") if error else None, estimated=estimated,
            tool_fee_usd=fee), self._pricer(run))

    def _metered_json(self, run: RunMeter, model: str, status: int, data: bytes,
                      request_id: str | None, headers: Mapping[str, str]) -> MeteredRequest:
        if status == 200:
            try:
                raw = json.loads(data).get("usage")
                usage = Usage.from_api(raw)
            except (ValueError, AttributeError):
                raw, usage = None, Usage()
            fee = self._tool_fee(run, raw)
            return MeteredRequest(model, 200, False, usage,
                                  self._price(run, model, usage) + fee,
                                  request_id=request_id, billed=True, tool_fee_usd=fee)
        fault = self.api.fault(status, headers, data)
        by, why = fault.cause, fault.why
        if by == "credit?":
            out = self._out_of_credit(run, model)
            by = "provider" if out else "agent"
            why += (": the account's credit is too low (the gate's meter checked)" if out else
                    ": quotes the provider's credit message, but the account has credit (the "
                    "gate's meter checked)")
        return MeteredRequest(model, status, False, Usage(), 0.0, error=why,
                              request_id=request_id, by=by)

    def _out_of_credit(self, run: RunMeter, model: str) -> bool:
        """Whether the account behind the gate's credential is out of credit, by the meter's
        own 1-token request (the answer the agent got may quote the message; this one cannot):
        asked once per ``CREDIT_CHECK_TTL_S`` for every run. What it is billed is the run's
        overhead, not the agent's cost. No answer: not confirmed."""
        with self._lock:
            seen = self._credit_check
            if seen is not None and time.monotonic() - seen[0] < CREDIT_CHECK_TTL_S:
                return seen[1]
        probe = self.api.credit_probe(model)
        if probe is None:
            return False
        try:
            status, data = self._ask(probe)
        except _UPSTREAM_ERRORS:
            return False
        try:
            answer: Any = json.loads(data)
        except ValueError:
            answer = None
        out = self.api.is_credit_answer(status, answer)
        if status == 200 and isinstance(answer, dict):
            with contextlib.suppress(BadInput, AttributeError):
                run.overhead(self.api.cost(self.prices, model,
                                          Usage.from_api(answer.get("usage")),
                                          self.endpoint.region))
        with self._lock:
            self._credit_check = (time.monotonic(), out)
        return out

    def count_tokens(self, body: Mapping[str, Any]) -> int | None:
        """The input tokens of ``body`` (a Messages request's ``model``, ``system``, ``tools``,
        ``messages``) by the upstream's own count (``count_tokens``: free, so never a run's
        cost), as the gate's request, not an agent's; None when the upstream gives no count."""
        probe = self.api.count_probe(body)
        if probe is None:
            return None
        try:
            status, data = self._ask(probe, timeout=COUNT_TIMEOUT_S)
            answer: Any = json.loads(data) if status == 200 else None
        except (*_UPSTREAM_ERRORS, ValueError):
            return None
        n = answer.get("input_tokens") if isinstance(answer, dict) else None
        return n if type(n) is int and n >= 0 else None

    def _ask(self, probe: Probe, timeout: float | None = None) -> tuple[int, bytes]:
        """One request of the meter's own (the upstream's ``probe``, authenticated as every
        forwarded request; waiting ``timeout`` seconds for the answer, else as long as on a
        model's): (status, body)."""
        target, body = probe.target, probe.body
        headers = {**probe.headers, "accept-encoding": "identity"}
        headers.update(self._signed("POST", target, headers, body))
        if self._pool is not None:
            wait = (self._timeout if timeout is None
                    else urllib3.Timeout(connect=CONNECT_TIMEOUT_S, read=timeout))
            up = self._pool.urlopen("POST", self.upstream + target, body=body, headers=headers,
                                    redirect=False, retries=False, timeout=wait)
            return up.status, up.data
        conn = self._connect()
        if timeout is not None and conn.sock is not None:
            conn.sock.settimeout(timeout)
        try:
            conn.request("POST", self._base_path + target, body=body, headers=headers)
            resp = conn.getresponse()
            return resp.status, resp.read()
        finally:
            conn.close()

    def _tool_fee(self, run: RunMeter, usage: Any) -> float:
        """USD for a billed request's server-tool uses (``usage.server_tool_use``); a count
        the price table has no price for leaves the run not fully metered (the agent's doing,
        as a model with no price): never a silent $0."""
        fee, unpriced = self.prices.tool_fees(server_tool_counts(usage))
        if unpriced:
            run.not_metered(f"not fully metered: the provider billed server-tool use "
                            f"{', '.join(unpriced)}, which the price table of "
                            f"{self.prices.date} has no price for")
        return fee

    def _price(self, run: RunMeter, model: str, usage: Usage) -> float:
        """Priced by the model the request asked for. The run checked its configured model has
        a price up front; a billed model with none (one a command agent picks on its own) adds
        nothing to the run's cost and leaves the run not fully metered by the agent's doing (a
        failed run), with the way to add its price: never a silent $0."""
        try:
            return self.api.cost(self.prices, model, usage, self.endpoint.region)
        except BadInput:
            with self._lock:
                self.unpriced.add(model)
            run.not_metered(f"not fully metered: the agent asked for model {model!r}, which "
                            f'has no price: add [agent.prices."{model}"] (input, output: USD '
                            "per million tokens) to gate.toml on the base branch (price "
                            f"table of {self.prices.date})")
            return 0.0

    def _pricer(self, run: RunMeter) -> Callable[[str, Usage], float]:
        return lambda model, usage: self._price(run, model, usage)
