"""``gate run``. The runner, the agents and rich load after the config is read: a config
error costs no more than ``gate --help`` (tests/e2e/test_cli_fast_start.py)."""

from __future__ import annotations

import contextlib
import dataclasses
from typing import TYPE_CHECKING, Any

import click

from gate.cli._options import progress, run_options, run_request

if TYPE_CHECKING:
    from gate.core.results import Results
    from gate.execution.run import RunRequest


@click.command()
@run_options
@click.option("--base-ref", metavar="REF", envvar="GATE_BASE_REF",
              help="Measure as a pull request into REF is measured: this checkout's [agent], "
                   "REF's tasks, [suite] and [gate] (read with git). Then `gate compare "
                   "--base-ref REF` judges exactly as CI does.")
@click.option("--ab", "ab_ref", metavar="REF",
              help="Same-job A/B: run REF's agent configuration ([agent] and the files it "
                   "names, read with git) and this checkout's, interleaved, on REF's tasks and "
                   "settings; writes OUTPUT (this checkout's) and OUTPUT's .base.json (REF's) "
                   "for `gate compare`.")
@click.option("--baseline", "baseline_path", metavar="FILE", type=click.Path(dir_okay=False),
              help="Plan each task's runs from this baseline (the one `gate compare` will judge "
                   "OUTPUT against): [suite].replications scaled by the task's band of its "
                   "baseline pass rate ([gate] plan), recorded in OUTPUT. Without it every task "
                   "gets the same runs.")
@click.option("--resume", is_flag=True,
              help="Continue a killed run from its journal (OUTPUT's .journal.jsonl): the runs "
                   "it finished are kept, the rest are run. Same configuration, suite, seed "
                   "and schedule required.")
@click.option("--max-cost", type=click.FloatRange(min=0), metavar="USD", envvar="GATE_MAX_COST",
              help="Budget for the whole run: forecast from the baseline's per-task costs; no "
                   "run starts once spent + in flight would pass it (exit 3, partial result).")
@click.option("--max-run-cost", type=click.FloatRange(min=0, min_open=True), metavar="USD",
              envvar="GATE_MAX_RUN_COST",
              help="Per-run cost cap, enforced by the meter for every agent kind (as the "
                   "turn cap, max_turns, is).")
@click.option("--condition", "conditions", metavar="NAME", multiple=True,
              help="Run under this skill condition (repeatable): control, target, negative, "
                   "full, target_plus_one, target_plus_unrelated (from each task's "
                   "metadata.json) or a [conditions.NAME] of gate.toml. Each (task, condition, "
                   "replication) is a run; the conditions are interleaved. `gate compare "
                   "OUTPUT --conditions A,B` reports the effect (docs/skills.md).")
@click.option("--shard", metavar="I/N", envvar="GATE_SHARD",
              help="Run only the I-th of N parts of the suite's tasks (balanced by the "
                   "baseline's durations); `gate merge` joins the parts.")
def run(base_ref: str | None, ab_ref: str | None, baseline_path: str | None, resume: bool,
        max_cost: float | None, max_run_cost: float | None, shard: str | None,
        conditions: tuple[str, ...], **kw: Any) -> None:
    """Run the suite and write a results file (each run journaled as it lands; the file
    is written from the journal at the end, and marked incomplete until then).

    Exit 3 when more than [gate].max_infra_rate of the runs were infra errors, or when
    --max-cost stopped the run early.
    """
    req = run_request(kw)
    from gate.execution.run import run_suite
    from gate.execution.shards import parse_shard

    req = dataclasses.replace(req, resume=resume, max_cost=max_cost,
                              max_run_cost=max_run_cost,
                              shard=parse_shard(shard) if shard else None,
                              conditions=list(conditions))
    if baseline_path is not None:
        req = _planned_by(req, baseline_path, base_ref=base_ref, ab_ref=ab_ref,
                          conditions=conditions)
    if ab_ref:
        if conditions:
            from gate.errors import BadInput

            raise BadInput("--condition: not with --ab (an A/B compares two agent "
                           "configurations; run the conditions on each side instead)")
        from gate.execution.ab import run_ab_command

        shown_ab = progress()
        try:
            from gate.ci import base_baseline

            pair = run_ab_command(req, ab_ref, base_ref, shown_ab.on_result,
                                  baseline_of=base_baseline)
        finally:
            shown_ab.stop()
        from gate.ci import check_infra  # the one rule, as gate ci applies it

        for res in (pair.base, pair.pr):
            check_infra(res, req.config.gate.max_infra_rate)
        return
    with contextlib.ExitStack() as stack:
        if base_ref:
            from gate.ci import measured_by  # as gate ci measures a PR

            ys, req = stack.enter_context(measured_by(req, base_ref))
            for line in ys.lines(markdown=False):
                click.echo(f"yardstick: {line}", err=True)
            from gate.ci import base_baseline
            from gate.execution.run import PlanFrom

            # planned from the baseline `gate compare --base-ref` judges it against (one look);
            # a run of skill conditions is not planned (each condition runs every replication)
            if not req.conditions:
                req = dataclasses.replace(req, plan_from=PlanFrom(base_baseline(ys),
                                                                  "baseline"))
        shown = progress()

        def start(results: Results, todo: int) -> None:
            announce(results, todo)
            shown.on_start(results, todo)

        try:
            results = run_suite(req, on_result=shown.on_result, on_start=start)
        finally:
            shown.stop()
        shown.finish(results)
    s = results.summary
    from gate.report import dollars, rate

    hit = f"{s.cache_hit_rate:.2f}" if s.cache_hit_rate is not None else "n/a"
    turns = f"{s.mean_turns:.1f}" if s.mean_turns is not None else "n/a"
    click.echo(f"{results.model}: {s.passed}/{s.total} passed ({rate(s.pass_rate)}), "
               f"{s.errors} errors, mean turns {turns}, cost {dollars(s.cost_usd)} "
               f"(+ {dollars(s.overhead_usd or 0)} suite overhead), cache hit {hit} → "
               f"{req.output}")
    problems = (results.model_extra or {}).get("problems") or {}
    for name, reason in problems.items():  # names and reasons escaped by the loader
        click.echo(f"gate: warning: task {name} not run: {reason}", err=True)
    for name, skipped in ((results.model_extra or {}).get("skipped_conditions") or {}).items():
        click.echo(f"gate: note: task {name}: condition{'s' if len(skipped) > 1 else ''} "
                   f"{', '.join(skipped)} do{'es' if len(skipped) == 1 else ''} not apply "
                   "(its metadata.json names no such skill): skipped", err=True)
    for name, keys in ((results.model_extra or {}).get("unhonoured") or {}).items():
        click.echo(f"gate: note: task {name}: task.toml keys the gate does not honour: "
                   f"{', '.join(keys)}", err=True)
    from gate.ci import check_budget, check_infra  # the one rule, as gate ci applies it

    check_infra(results, req.config.gate.max_infra_rate)
    check_budget(results, "the run", RESUME_THEN.format(output=req.output))


def _planned_by(req: RunRequest, path: str, *, base_ref: str | None, ab_ref: str | None,
                conditions: tuple[str, ...]) -> RunRequest:
    """``req`` planned from the baseline at ``path`` (one look: a fixed schedule)."""
    from gate.errors import BadInput

    for flag, given, why in (
            ("--base-ref", base_ref, "the base ref's baseline plans the run"),
            ("--ab", ab_ref, "REF's committed baseline plans both arms"),
            ("--condition", conditions, "skill conditions run every replication, unplanned")):
        if given:
            raise BadInput(f"--baseline: not with {flag} ({why})")
    from gate.core.results import load_results
    from gate.execution.run import PlanFrom

    baseline = load_results(path, "baseline")
    return dataclasses.replace(req, plan_from=PlanFrom(baseline, "baseline"))


#: what a ``gate run`` that the budget stopped tells its user
RESUME_THEN = ("{output} holds the partial result, its skipped runs listed (`gate run "
               "--resume` with a larger budget finishes it)")


def announce(results: Results, todo: int) -> None:
    """Before the first run starts: what the run is, its forecast and what it resumes."""
    extra = results.model_extra or {}
    if shard := extra.get("shard"):
        click.echo(f"shard {shard['index']}/{shard['count']}: {len(shard['tasks'])} tasks "
                   f"(balanced by {shard['balanced_by']})", err=True)
    if results.runs:
        click.echo(f"resuming: {len(results.runs)} runs kept from the journal, {todo} to run",
                   err=True)
    from gate.core.results import cache_prefix

    if (prefix := cache_prefix(results)) is not None and not prefix.cached:
        click.echo(f"gate: note: {prefix.statement()}; the conversation is cached once it is "
                   "that long", err=True)
    if budget := extra.get("budget"):
        from gate.report import dollars

        f = budget.get("forecast_usd")
        forecast = (f"forecast {dollars(f)} ({budget['forecast_basis']})" if f is not None
                    else "no baseline to forecast from: the budget binds on spend so far")
        click.echo(f"budget {dollars(budget['max_cost_usd'])}: {forecast}", err=True)
