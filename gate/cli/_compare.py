"""``gate compare`` and ``gate baseline``: thin shells over the compare, report, baseline libs.

The statistics (scipy, numpy), the results models and rich load after the config is read: a
config error costs no more than ``gate --help`` (tests/e2e/test_cli_fast_start.py)."""

from __future__ import annotations

import contextlib
import shlex
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import click

from gate.cli._options import command_config
from gate.errors import Unmeasurable

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table

    from gate.compare import Comparison
    from gate.core.results import Results
    from gate.execution.yardstick import Yardstick


def _table(headers: Sequence[str], rows: Sequence[Sequence[str]], *,
           wrap: Sequence[int] = ()) -> Table:
    """Cells as ``Text``, never parsed as rich markup: task ids and reasons are untrusted.

    Columns not in ``wrap`` stay on one line and are cut with an ellipsis when the terminal is
    narrow.
    """
    from rich import box
    from rich.table import Table
    from rich.text import Text

    t = Table(box=box.SIMPLE_HEAD, pad_edge=False)
    for i, h in enumerate(headers):
        t.add_column(h, no_wrap=i not in wrap, overflow="fold" if i in wrap else "ellipsis")
    for row in rows:
        t.add_row(*(Text(cell) if i in wrap else Text(cell, no_wrap=True, overflow="ellipsis")
                    for i, cell in enumerate(row)))
    return t


def console() -> Console:
    """The terminal's console (gate/cli/_output.py), rich loaded only for a terminal view."""
    from gate.cli._output import console as terminal

    return terminal()


def _rich_report(c: Comparison) -> None:
    """The terminal view: the same facts as ``render_text``, as rich tables."""
    from rich.text import Text

    from gate.report import (
        health_lines,
        is_interesting,
        metric_change,
        metric_value,
        metric_verdict,
        overhead_note,
        plan_lines,
        schedule_note,
        task_rank,
        task_row,
    )

    out = console()
    out.print(Text(c.headline, style="bold"))
    if c.why:
        out.print(Text("Why: " + " · ".join(c.why)))
    for note in c.notes:
        out.print(Text(note))
    rows = [[m.label, metric_value(m.name, m.baseline), metric_value(m.name, m.candidate),
             metric_change(m).replace("<sub>", "_").replace("</sub>", ""),
             metric_verdict(m, c.resolution, icon=False)]
            for m in c.metrics]
    out.print(_table(["metric", "baseline", "this run", "change", "verdict"], rows, wrap=(3,)))
    if (reason := schedule_note(c)):
        out.print(Text(f"Note: {reason}"))
    if (overhead := overhead_note(c)):
        out.print(Text(overhead))
    if c.power:
        out.print(Text(c.power.statement))
    if c.verdict == "inconclusive":
        for r in c.reasons:
            out.print(Text(f"  - {r}"))
    tasks = sorted((t for t in c.tasks if is_interesting(t)), key=task_rank)
    if tasks:
        task_rows = []
        for t in tasks:
            row = task_row(t)
            task_rows.append([t.task, str(row["baseline"]), str(row["candidate"]), str(row["p"]),
                              str(row["change"])])
        # failure reasons are in --format text/markdown/json; here they would crowd the table
        out.print(_table(["task", "baseline", "this run", "p", "change"], task_rows))
    if c.agent_changes:
        out.print(_table(["agent part", "baseline", "this run"],
                         [[a.part, a.baseline or "—", a.candidate or "—"]
                          for a in c.agent_changes]))
    for line in health_lines(c):  # the suite's health, named once (gate/compare/_health.py)
        out.print(Text(line))
    for line in plan_lines(c):  # how the plan spread the runs (gate/compare/_plancheck.py)
        out.print(Text(line))


@click.command("compare")
@click.argument("paths", metavar="[BASELINE] RESULTS", nargs=-1,
                type=click.Path(dir_okay=False))
@click.option("--format", "fmt", type=click.Choice(["text", "markdown", "json"]),
              default="text", show_default=True, envvar="GATE_FORMAT",
              help="text: a table (plain outside a terminal); markdown: the PR comment body; "
                   "json: the full comparison.")
@click.option("--config", "config_path", type=click.Path(dir_okay=False), envvar="GATE_CONFIG",
              help="gate.toml whose [gate] settings (alpha, margins, block_on...) to use "
                   "(default: ./gate.toml if present).")
@click.option("--run-url", envvar="GATE_RUN_URL",
              help="Link to the CI run, shown at the foot of the markdown report.")
@click.option("--history", "history_path", type=click.Path(dir_okay=False),
              envvar="GATE_HISTORY",
              help="Main's history file (gate-history.jsonl): apply the drift guard as "
                   "`gate ci` does on a pull request.")
@click.option("--base-ref", metavar="REF", envvar="GATE_BASE_REF",
              help="Judge exactly as `gate ci` judges a pull request into REF: REF's "
                   "baseline, [gate] settings and history (read with git; no BASELINE "
                   "argument), and what this checkout changes in them listed. Pair it with "
                   "`gate run --base-ref REF`.")
@click.option("--conditions", "conditions", metavar="A,B[,C...]",
              help="The skill's effect instead of a verdict: compare conditions of one "
                   "RESULTS file (`gate run --condition`), the first (e.g. control) the "
                   "reference for every other, paired by task (docs/skills.md).")
def compare_cmd(paths: tuple[str, ...], fmt: str, config_path: str | None,
                run_url: str | None, history_path: str | None, base_ref: str | None,
                conditions: str | None) -> None:
    """Compare RESULTS with BASELINE and give the verdict.

    Exit 0 when there is no regression (or a metric past its margin reads "unclear": its test
    could not reliably block a change of the margin's size, and the first line says what would
    settle it), 1 on a regression (the gate blocks), 2 on bad input,
    3 when the comparison is inconclusive (too few comparable tasks, too many infra errors, a
    design too small to have detected even a collapse, a simulator baseline judging runs
    through the API or the reverse) or there is no BASELINE file to compare with.
    Noise is not a regression: pass rates are judged by an exact stratified test, turns, cost
    and cache hits by a permutation test plus a practical margin (docs/statistics.md).

    With --conditions A,B: the effect of condition B against A in one RESULTS file (pass
    rate with its confidence interval, turns, cost, tokens, prompt size, wall time), and a
    table of every condition; exit 0 (a report, not a verdict) or 2 on bad input.
    """
    if conditions is not None:
        _effects(paths, conditions, fmt, config_path, base_ref)
        return
    if len(paths) != (1 if base_ref else 2):
        raise click.UsageError("--base-ref REF takes one argument, RESULTS" if base_ref else
                               "BASELINE and RESULTS are required (or --base-ref REF RESULTS)")
    with contextlib.ExitStack() as stack:
        if base_ref:
            ys = stack.enter_context(_yardstick(config_path, base_ref))
            from gate.core.results import load_results

            settings, sim_unjudged = ys.config.gate, ys.config.ci.sim_unjudged
            results = load_results(paths[0])
            baseline = _base_baseline(ys)
            history_text = ys.history_text if history_path is None else None
            if results.suite.digest != ys.base_digest:
                click.echo(f"warning: {paths[0]} ran a different suite than {base_ref}'s: "
                           "CI runs the base's tasks (`gate run --base-ref "
                           f"{base_ref}`); tasks that differ are left out of this verdict",
                           err=True)
            from gate.github import in_actions

            ys.validate_changed_tasks(registry=in_actions())
            yardstick = ys.note()
            for line in ys.lines(markdown=False):
                click.echo(f"yardstick: {line}", err=True)
        else:
            cfg = command_config(config_path)
            settings, sim_unjudged = cfg.gate, cfg.ci.sim_unjudged
            from gate.core.results import load_results

            results = load_results(paths[1])
            if not Path(paths[0]).exists():  # nothing to measure against: not bad input
                raise Unmeasurable(f"{paths[0]}: baseline not found: this suite has no "
                                   "baseline yet (make one with `gate run` and `gate "
                                   "baseline` on the default branch)")
            baseline = load_results(paths[0], "baseline")
            history_text, yardstick = None, None
    if history_path:
        from gate._files import HISTORY_LIMIT, read_text

        history_text = read_text(history_path, HISTORY_LIMIT, "history")
    from gate.ci import verdict  # as gate ci judges a PR

    names = (f"{base_ref}'s baseline" if base_ref else paths[0], paths[-1])
    comparison = verdict(baseline, results, settings, history_text or "", sim_unjudged,
                         names=names)
    if fmt == "json":
        click.echo(comparison.to_json())
    elif fmt == "markdown":
        from gate.report import render_markdown

        click.echo(render_markdown(comparison, run_url=run_url, yardstick=yardstick,
                                   command=_command(paths, base_ref, config_path,
                                                    history_path)), nl=False)
    elif sys.stdout.isatty():
        _rich_report(comparison)
    else:
        from gate.report import render_text

        click.echo(render_text(comparison), nl=False)
    sys.exit(comparison.exit_code)


def _command(paths: tuple[str, ...], base_ref: str | None, config_path: str | None,
             history_path: str | None) -> str:
    """This comparison as a user types it again (the comment's first screen shows it)."""
    args = ["gate", "compare"]
    for flag, value in (("--config", config_path), ("--history", history_path),
                        ("--base-ref", base_ref)):
        if value:
            args += [flag, value]
    return shlex.join([*args, *paths])


def _effects(paths: tuple[str, ...], conditions: str, fmt: str, config_path: str | None,
             base_ref: str | None) -> None:
    if base_ref or len(paths) != 1:
        raise click.UsageError("--conditions A,B takes one argument, RESULTS (one run of "
                               "several conditions), and no --base-ref")
    settings = command_config(config_path).gate
    from gate.compare import effects
    from gate.core.results import load_results

    names = [c.strip() for c in conditions.split(",") if c.strip()]
    report = effects(load_results(paths[0]), names, settings, where=paths[0])
    if fmt == "json":
        click.echo(report.model_dump_json(indent=2))
    elif fmt == "markdown":
        from gate.report import render_effects_markdown

        click.echo(render_effects_markdown(report), nl=False)
    else:
        from gate.report import render_effects_text

        click.echo(render_effects_text(report), nl=False)


@contextlib.contextmanager
def _yardstick(config_path: str | None, ref: str) -> Iterator[Yardstick]:
    """``ref``'s yardstick, opened as gate ci and ``gate run --base-ref`` open it."""
    from gate.ci import open_base

    with open_base(command_config(config_path), ref) as ys:
        yield ys


def _base_baseline(ys: Yardstick) -> Results:
    """The yardstick's baseline, read as gate ci reads it."""
    from gate.ci import base_baseline

    baseline = base_baseline(ys)
    if baseline is None:
        raise Unmeasurable(f"no {ys.baseline_rel} on {ys.label}: nothing to compare with (a "
                           f"PR into {ys.label} would be unmeasurable too)")
    return baseline


@click.command("baseline")
@click.argument("results_path", metavar="RESULTS", type=click.Path(dir_okay=False))
@click.option("--baseline", "baseline_path", type=click.Path(dir_okay=False),
              envvar="GATE_BASELINE", help="Baseline file to update (default: [gate].baseline).")
@click.option("--config", "config_path", type=click.Path(dir_okay=False), envvar="GATE_CONFIG",
              help="gate.toml to read (default: ./gate.toml if present).")
@click.option("--pool-size", type=click.IntRange(min=1), envvar="GATE_POOL_SIZE",
              help="Newest runs kept per task (default: [gate].pool_size, 20).")
@click.option("--other-suite", "replace_other_suite", is_flag=True,
              help="Replace a baseline measured on another suite (no task in common), "
                   "which is refused without it.")
def baseline_cmd(results_path: str, baseline_path: str | None, config_path: str | None,
                 pool_size: int | None, replace_other_suite: bool) -> None:
    """Promote RESULTS into the baseline.

    Runs of the same agent fingerprint are pooled with the existing baseline (the newest
    runs per task kept); a new fingerprint starts a new baseline; a task whose digest changed
    keeps only its new runs. Each run keeps its commit and date. Written atomically. A
    baseline of another suite (no task in common) is refused, naming both, unless
    --other-suite.
    """
    cfg = command_config(config_path)
    from gate.pool.baseline import promote_file

    target = baseline_path or str(cfg.path(cfg.gate.baseline))
    message = promote_file(results_path, target, pool_size or cfg.gate.pool_size,
                           replace_other_suite=replace_other_suite)
    click.echo(f"{target}: {message}")

