"""``gate report``: a thin shell over :func:`gate.report._html.render_html`."""

from __future__ import annotations

from pathlib import Path

import click

from gate._files import atomic_write_text
from gate.compare import compare
from gate.config import load_config
from gate.results import load_results


@click.command("report")
@click.argument("results_path", metavar="RESULTS", type=click.Path(dir_okay=False))
@click.option("--baseline", "baseline_path", type=click.Path(dir_okay=False),
              help="Baseline (or a baseline run's own results file) to compare with; without "
                   "it the report shows RESULTS alone.")
@click.option("--html", "html_path", required=True, type=click.Path(dir_okay=False),
              help="Where to write the report: one self-contained HTML file.")
@click.option("--config", "config_path", type=click.Path(dir_okay=False), envvar="GATE_CONFIG",
              help="gate.toml whose [gate] settings (alpha, margins, block_on...) to use "
                   "(default: ./gate.toml if present).")
@click.option("--run-url", envvar="GATE_RUN_URL", help="Link to the CI run, shown in the page.")
def report(results_path: str, baseline_path: str | None, html_path: str,
           config_path: str | None, run_url: str | None) -> None:
    """Write RESULTS as one self-contained HTML report, against a baseline when given.

    The page holds the verdict (as `gate compare` reaches it), the four metrics with
    intervals, a task table that sorts and filters, plots, and every run's transcript (read
    from the RESULTS.transcripts/ directory `gate run` writes beside it; a baseline's too
    when it is a run's own results file), the PR's beside the baseline's. It loads nothing
    from anywhere and runs only its own script. Exit 0 once written, whatever the verdict.
    """
    from gate.report._html import render_html

    settings = load_config(config_path).gate
    results = load_results(results_path)
    baseline = comparison = None
    if baseline_path is not None:
        baseline = load_results(baseline_path, "baseline")
        comparison = compare(baseline, results, settings)
    effects = None
    named = list((results.schedule.conditions if results.schedule else None) or [])
    if len(named) > 1:  # a run of several skill conditions: their table and effects
        from gate.compare._effects import effects as condition_effects

        reference = "control" if "control" in named else named[0]
        have = {r.condition for r in results.runs}
        order = [reference, *(c for c in named if c != reference)]
        if all(c in have for c in order):
            effects = condition_effects(results, order, settings, where=results_path)
    page = render_html(results, results_path=Path(results_path), baseline=baseline,
                       baseline_path=Path(baseline_path) if baseline_path else None,
                       comparison=comparison, level=settings.ci_level, seed=settings.seed,
                       run_url=run_url, effects=effects)
    atomic_write_text(html_path, page)
    what = f"{comparison.verdict}, " if comparison else ""
    click.echo(f"{html_path}: report written ({what}{len(results.runs)} runs)")
