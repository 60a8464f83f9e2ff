"""``gate report``: a thin shell over :func:`gate.report._html.render_html`."""

from __future__ import annotations

from pathlib import Path

import click

from gate._files import atomic_write_text, read_text
from gate.core.config import load_config
from gate.core.results import load_results
from gate.core.traces import SIDECAR_LIMIT, Trace, parse_sidecar, sidecar_rel
from gate.errors import GateError


@click.command("report")
@click.argument("results_path", metavar="RESULTS", type=click.Path(dir_okay=False))
@click.option("--baseline", "baseline_path", type=click.Path(dir_okay=False),
              help="Baseline (or a baseline run's own results file) to compare with; without "
                   "it the report shows RESULTS alone.")
@click.option("--baseline-traces", "traces_path", type=click.Path(dir_okay=False),
              help="The traces kept next to the baseline (main's refresh writes them as "
                   "baseline.traces.jsonl), shown for baseline runs with no transcript here. "
                   "Default: the file of that name next to --baseline, when there is one.")
@click.option("--html", "html_path", required=True, type=click.Path(dir_okay=False),
              help="Where to write the report: one self-contained HTML file.")
@click.option("--config", "config_path", type=click.Path(dir_okay=False), envvar="GATE_CONFIG",
              help="gate.toml whose [gate] settings (alpha, margins, block_on...) to use "
                   "(default: ./gate.toml if present).")
@click.option("--run-url", envvar="GATE_RUN_URL", help="Link to the CI run, shown in the page.")
@click.option("--history", "history_path", type=click.Path(dir_okay=False),
              envvar="GATE_HISTORY",
              help="Main's history file (gate-history.jsonl): apply the drift guard as "
                   "`gate compare --history` and `gate ci` do (with --baseline; without one there "
                   "is no verdict to guard).")
def report(results_path: str, baseline_path: str | None, traces_path: str | None,
           html_path: str, config_path: str | None, run_url: str | None,
           history_path: str | None) -> None:
    """Write RESULTS as one self-contained HTML report, against a baseline when given.

    The page holds the verdict (the one `gate compare` reaches from the same files), the
    four metrics with intervals, a task table that sorts and filters, plots, and every run's
    transcript (read from the RESULTS.transcripts/ directory `gate run` writes beside it; a
    baseline's too when it is a run's own results file; else the traces main's refresh keeps
    next to the baseline, --baseline-traces), the PR's beside the baseline's. It loads
    nothing from anywhere and runs only its own script. Exit 0 once written, whatever the
    verdict.
    """
    from gate.report import render_html

    if traces_path is not None and baseline_path is None:
        raise click.UsageError("--baseline-traces needs --baseline (the baseline they belong to)")
    history_text = None
    if history_path is not None and baseline_path is not None:
        from gate._files import HISTORY_LIMIT

        history_text = read_text(history_path, HISTORY_LIMIT, "history")
    cfg = load_config(config_path)
    settings = cfg.gate
    results = load_results(results_path)
    baseline = comparison = None
    traces = None
    if baseline_path is not None:
        from gate.ci import verdict  # the one verdict: gate compare's and gate ci's

        baseline = load_results(baseline_path, "baseline")
        comparison = verdict(baseline, results, settings, history_text,
                             sim_unjudged=cfg.ci.sim_unjudged,
                             names=(str(baseline_path), str(results_path)))
        traces = _baseline_traces(Path(baseline_path), traces_path)
    effects = None
    named = list((results.schedule.conditions if results.schedule else None) or [])
    if len(named) > 1:  # a run of several skill conditions: their table and effects
        from gate.compare import effects as condition_effects

        reference = "control" if "control" in named else named[0]
        have = {r.condition for r in results.runs}
        order = [reference, *(c for c in named if c != reference)]
        if all(c in have for c in order):
            effects = condition_effects(results, order, settings, where=results_path)
    page = render_html(results, results_path=Path(results_path), baseline=baseline,
                       baseline_path=Path(baseline_path) if baseline_path else None,
                       comparison=comparison, level=settings.ci_level, seed=settings.seed,
                       run_url=run_url, effects=effects, baseline_traces=traces)
    atomic_write_text(html_path, page)
    what = f"{comparison.verdict}, " if comparison else ""
    click.echo(f"{html_path}: report written ({what}{len(results.runs)} runs)")


def _baseline_traces(baseline_path: Path, named: str | None) -> list[Trace] | None:
    """The baseline's traces: the file named, else the sidecar next to the baseline when there
    is one. Read bounded; a file that cannot be read is one warning line, never the report's
    failure (lines that are not traces are skipped, and counted)."""
    path = Path(named) if named is not None else \
        baseline_path.with_name(sidecar_rel(baseline_path.name))
    if named is None and not path.exists():
        return None
    try:
        text = read_text(path, SIDECAR_LIMIT, "baseline traces")
    except GateError as exc:
        click.echo(f"gate: warning: the baseline's traces were not read ({exc}); the report "
                   "shows the baseline's runs without them", err=True)
        return None
    traces = parse_sidecar(text)
    lines = sum(1 for line in text.splitlines() if line.strip())
    if lines > len(traces):
        click.echo(f"gate: warning: {path}: {lines - len(traces)} of {lines} lines are not "
                   "traces, skipped", err=True)
    return traces
