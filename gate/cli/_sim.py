"""``gate sim``: the simulator as a standalone server (every option also a ``GATE_SIM_*`` var)."""

from __future__ import annotations

import logging
import sys
from pathlib import Path

import click

from gate.sim import FaultConfig, Latency, Simulator
from gate.upstream import get_upstream, upstream_names

_RATE = click.FloatRange(0.0, 1.0)


@click.group()
def sim() -> None:
    """The simulator: a local Messages API with a simulated model (no network, no key)."""


@sim.command()
@click.option("--host", default="127.0.0.1", show_default=True, envvar="GATE_SIM_HOST",
              help="Address to listen on (keep it loopback unless you know why not).")
@click.option("--port", type=click.IntRange(0, 65535), default=0, show_default=True,
              envvar="GATE_SIM_PORT", help="Port to listen on; 0 picks a free one.")
@click.option("--tasks", "tasks_dir", type=click.Path(exists=True, file_okay=False),
              envvar="GATE_SIM_TASKS", help="Suite whose tasks the model can solve "
              "(default: none, so only generic answers).")
@click.option("--seed", type=int, default=0, show_default=True, envvar="GATE_SIM_SEED",
              help="Fixes task outcomes and faults: same seed, same results.")
@click.option("--fault-429", "f429", type=_RATE, default=0.0, envvar="GATE_SIM_FAULT_429",
              help="Share of requests answered 429 rate_limit_error (with retry-after).")
@click.option("--fault-529", "f529", type=_RATE, default=0.0, envvar="GATE_SIM_FAULT_529",
              help="Share of requests answered 529 overloaded_error.")
@click.option("--fault-500", "f500", type=_RATE, default=0.0, envvar="GATE_SIM_FAULT_500",
              help="Share of requests answered 500 api_error.")
@click.option("--fault-stream-error", "fstream", type=_RATE, default=0.0,
              envvar="GATE_SIM_FAULT_STREAM_ERROR",
              help="Share of streams that send an error event after HTTP 200.")
@click.option("--fault-disconnect", "fdrop", type=_RATE, default=0.0,
              envvar="GATE_SIM_FAULT_DISCONNECT",
              help="Share of requests whose connection is dropped mid-response.")
@click.option("--fault-credit", "fcredit", type=_RATE, default=0.0,
              envvar="GATE_SIM_FAULT_CREDIT",
              help="Share of requests answered as an account out of credit (400).")
@click.option("--retry-after", type=click.FloatRange(min=0), default=1.0, show_default=True,
              envvar="GATE_SIM_RETRY_AFTER", help="retry-after of a 429, in seconds.")
@click.option("--latency-ms", type=click.FloatRange(min=0), default=0.0, show_default=True,
              envvar="GATE_SIM_LATENCY_MS", help="Fixed delay before each response starts.")
@click.option("--jitter-ms", type=click.FloatRange(min=0), default=0.0, show_default=True,
              envvar="GATE_SIM_JITTER_MS", help="Extra random delay, uniform in [0, N) ms.")
@click.option("--tokens-per-second", type=click.FloatRange(min=0), default=0.0,
              envvar="GATE_SIM_TOKENS_PER_SECOND",
              help="Output speed; 0 (default) sends the answer at once.")
@click.option("--ledger", "ledger", type=click.Path(dir_okay=False), envvar="GATE_SIM_LEDGER",
              help="JSONL file recording every request served and its usage "
              "(default: a temporary file, removed on exit).")
@click.option("--upstream", default="anthropic", show_default=True, envvar="GATE_SIM_UPSTREAM",
              help="The upstream whose protocol and authentication it stands in for "
              f"(gate/upstream: {', '.join(upstream_names())}).")
@click.option("--credential", envvar="GATE_SIM_CREDENTIAL",
              help="The only credential it accepts (a gateway's bearer token, an API key); "
              "default: any its upstream's rule accepts.")
@click.option("-v", "--verbose", is_flag=True, envvar="GATE_SIM_VERBOSE",
              help="Log every request to stderr.")
def serve(host: str, port: int, tasks_dir: str | None, seed: int, f429: float, f529: float,
          f500: float, fstream: float, fdrop: float, fcredit: float, retry_after: float,
          latency_ms: float, jitter_ms: float, tokens_per_second: float, ledger: str | None,
          upstream: str, credential: str | None, verbose: bool) -> None:
    """Serve the Messages API (JSON, SSE, count_tokens, prompt caching) with a simulated model.

    Point any client at it with its upstream's variables (printed on start) and any
    credential, or the one --credential names. Reported model ids carry a "-sim" suffix.
    Stop with Ctrl-C.
    """
    logging.basicConfig(level=logging.INFO if verbose else logging.WARNING,
                        format="%(asctime)s %(message)s")
    faults = FaultConfig(rate_429=f429, rate_529=f529, rate_500=f500, rate_stream_error=fstream,
                         rate_disconnect=fdrop, rate_credit=fcredit, retry_after=retry_after)
    get_upstream(upstream, where="--upstream")  # an unknown one: exit 2 before anything starts
    simulator = Simulator(
        tasks_dir=Path(tasks_dir) if tasks_dir else None, seed=seed, faults=faults,
        latency=Latency(latency_ms, jitter_ms, tokens_per_second or None),
        ledger_path=Path(ledger) if ledger else None, host=host, port=port,
        auth=upstream, credential=credential,
    ).start()
    click.echo(f"gate simulator listening on {simulator.base_url}", err=False)
    shown = get_upstream(upstream).agent_env(simulator.base_url, "<credential>")
    for name, value in shown.items():
        click.echo(f"  export {name}={value}")
    if credential is None:
        click.echo("  (any credential works)")
    if ledger:
        click.echo(f"  ledger: {simulator.ledger_path}")
    sys.stdout.flush()  # whoever started us may be waiting for the URL on a pipe
    try:
        simulator.serve_forever()
    except KeyboardInterrupt:
        click.echo("gate simulator stopped", err=True)
