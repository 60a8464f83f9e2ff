"""``main``: pool this run into the baseline and the history, and put them where they live
(committed to the branch, pushed to the data branch, or left for an artifact).

Publish for a refresh: main's self-check against the baseline it replaces (the A/A check
behind drift guards; never blocking), the HTML report, the pooled files, and the summary. How
a run is pooled is ``gate.pool.baseline.repool`` (pure, over the files' texts); where the files live
and what is left in the workspace is ``gate.pool.refresh``; the push with the token, re-pooling on a
branch that moved, is the forge's (``push_data``). This module decides what is pooled and what
the job says about it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from markupsafe import Markup

from gate import _git
from gate.ci._context import Context
from gate.ci._forge import DataPush
from gate.ci._obtain import budgeted, run_fresh, with_conditions
from gate.ci._plan import RefreshPlan, code, seed
from gate.ci._policy import check_budget, check_infra
from gate.ci._publish import Publisher
from gate.compare import Comparison
from gate.core.history import HistoryEntry, entry_for
from gate.core.results import Results, parse_results
from gate.core.traces import Trace
from gate.errors import GateError, Unmeasurable
from gate.pool.baseline import dump_baseline, repool, same_agent
from gate.pool.refresh import Outcome, Pooled, State, traces_path, write_files
from gate.report import md, render_body, trend_markdown
from gate.sandbox import assert_no_task_alive


def refresh(ctx: Context, plan: RefreshPlan, merged: Results | None) -> int:
    """Run (or take the merged shards), check, pool and publish main's refresh."""
    cfg = plan.request.config
    if merged is not None:
        results = merged
    else:
        req = with_conditions(ctx, plan.request, plan.conditions)
        results = run_fresh(ctx, req)
        check_budget(results, budgeted(req))
    check_infra(results, cfg.gate.max_infra_rate, refresh=True)
    publisher = Publisher(ctx, plan.settings)
    verdict, markdown, checked = self_check(ctx, plan.start.baseline_text, results)
    # the report of main's run, against the baseline it replaces (the self-check's), for
    # the action to upload as on a PR; a report error is a warning
    output = plan.request.output
    html = publisher.write_html(cfg, results, output, checked[0] if checked else None,
                                checked[1] if checked else None, plan.start.traces_text)
    from gate.compare import plain_runs

    entry = entry_for(plain_runs(results), verdict=verdict, run_url=ctx.env.run_url)
    # stamped with the refresh pooling gives their runs (the sidecar drops tool output)
    traces = [t.model_copy(update={"refresh": t.refresh or results.created_at})
              for t in ctx.traces(results, output)]
    # an upload step (`if: !cancelled()`) finds the files even when the push fails below
    ctx.io.set_outputs({
        "mode": "main", "exit_code": 0, **ctx.outputs_for(results, output),
        "baseline_path": str(plan.baseline_path.resolve()),
        "history_path": str(plan.history_path.resolve()),
        "traces_path": str(traces_path(plan.baseline_path).resolve()),
        **html,
    })
    if plan.place is None:
        outcome = _pool_files(ctx, plan, results, entry, traces)
    else:
        from gate.ci._pages import announce_main, main_pages

        # the badge and (a public repository) main's report, in the same push as the baseline
        pages = main_pages(ctx, plan.place, html, results, verdict, publisher.report_artifact)
        outcome = _push(ctx, plan, results, entry, traces, pages)
        if outcome.status == "committed":
            announce_main(ctx, plan.place, pages)
    _summary(ctx, plan, outcome, markdown)
    ctx.io.set_outputs({"verdict": verdict or "refreshed", "baseline_commit": outcome.commit,
                        "refresh": outcome.status})
    return 0


def _summary(ctx: Context, plan: RefreshPlan, outcome: Outcome, markdown: str) -> None:
    """The log lines, annotations and step summary of a refresh."""
    place, branch = plan.place, ctx.env.branch
    ctx.log(f"gate ci: {outcome.message}")
    for line in outcome.lines:
        if outcome.status in ("superseded", "artifact"):
            ctx.io.warning(line, title="agent-gate: baseline not pushed")
        else:
            ctx.io.notice(line, title="agent-gate")
    committed = outcome.commit
    if place is not None and outcome.status == "committed":
        ctx.log(f"gate ci: pushed the refreshed baseline to {place.name} ({committed[:7]})")
    elif outcome.status == "unchanged":
        ctx.log("gate ci: the baseline did not change; nothing to commit")
    trend = trend_markdown(outcome.entries)
    ctx.io.summary(ctx.redact(render_body(
        "refresh.md.j2", where=Markup(code(branch or ctx.env.ref or "HEAD")),
        message=md(" ".join([outcome.message, *outcome.lines]), 3000),
        committed=Markup(f"{committed[:7]} on {'the data branch ' if place.data else ''}"
                         f"{code(place.branch)}") if place and committed else "",
        artifact=(outcome.status in ("artifact", "superseded")
                  or plan.settings.baseline_refresh == "artifact"),
        baseline=Markup(code(_git.repo_relative(plan.root, plan.baseline_path))),
        trend=Markup(trend or ""), report=Markup(markdown))))


def _push(ctx: Context, plan: RefreshPlan, results: Results, entry: HistoryEntry,
          traces: Sequence[Trace], pages: dict[str, str]) -> Outcome:
    """Pool and push to the plan's place; the pooled files are left in the workspace whatever
    happens to the push (an upload step with ``if: !cancelled()`` keeps them)."""
    place, root = plan.place, plan.root
    assert place is not None

    def guard() -> None:
        assert_no_task_alive()  # a process of a run still alive: never push or fetch with it
        if ctx.forge.git_state(root) != plan.git_state:
            raise Unmeasurable(
                "the checkout's git configuration changed while the suite ran (.git/config, "
                ".git/hooks or the user's git config): the refreshed baseline is not pushed "
                "with the token; see the threat model in docs/github.md")

    job = ctx.forge.push_data(DataPush(
        root=root, place=place, results=results, pool=_pool(plan, results, entry, traces),
        same_agent=same_agent, source_branch=ctx.env.branch or "", guard=guard,
        seed=seed(ctx, root, plan.settings, _git.head(root)) if place.data else None,
        published=pages), ctx.log)
    # a data branch is read again: as it is now, not as it was when the suite began
    first = job.fetch() if place.data else plan.start
    short = (results.commit or ctx.env.sha or "")[:7]
    try:
        outcome = job.run(first, plan.start.baseline_text,
                          f"gate: refresh {place.baseline_rel} from {short or 'HEAD'}")
    except GateError:
        if job.last is not None:  # pooled but not pushed (a protected branch)
            write_files(job.last, plan.baseline_path, plan.history_path, dump_baseline)
            ctx.io.set_outputs({"refresh": "artifact"})
        raise
    write_files(outcome, plan.baseline_path, plan.history_path, dump_baseline)
    return outcome


def _pool_files(ctx: Context, plan: RefreshPlan, results: Results, entry: HistoryEntry,
                traces: Sequence[Trace]) -> Outcome:
    """``baseline_refresh = "artifact"``: pool into the workspace's files."""
    pooled = _pool(plan, results, entry, traces)(plan.start, str(plan.baseline_path))
    outcome = Outcome("artifact", pooled.message, baseline=pooled.baseline,
                      entries=pooled.entries, traces=pooled.traces)
    write_files(outcome, plan.baseline_path, plan.history_path, dump_baseline)
    if pooled.unchanged:
        outcome.status = "unchanged"
    return outcome


def _pool(plan: RefreshPlan, results: Results, entry: HistoryEntry, traces: Sequence[Trace]
          ) -> Callable[[State, str], Pooled]:
    """The judge's re-pooling with this run bound: a branch's files (and where they are, for
    errors) → the pooled files. Pure: the push loop calls it again on a branch that moved."""
    pool_size, history_size = plan.request.config.gate.pool_size, plan.settings.history_size

    def pool(state: State, where: str) -> Pooled:
        return repool(results, entry, traces, baseline_text=state.baseline_text,
                      history_text=state.history_text, traces_text=state.traces_text,
                      where=where, pool_size=pool_size, history_size=history_size)

    return pool


def self_check(ctx: Context, baseline_text: str | None, results: Results
               ) -> tuple[str | None, str, tuple[Results, Comparison] | None]:
    """Main against its own baseline before pooling: the A/A check behind drift guards.
    Never blocks main; a regression is a warning, since the change has already landed.
    (verdict, its markdown, (the baseline, the comparison)); None where there was none."""
    from gate.compare import compare, plain_runs
    from gate.report import render_markdown

    if baseline_text is None:
        return None, "", None
    try:
        baseline = parse_results(baseline_text.encode(), "the baseline", "baseline")
        # the suite's runs only: the A/A check measures the pass-rate test's false blocks
        comparison = compare(plain_runs(baseline), plain_runs(results),
                             ctx.opts.run.config.gate)
        markdown = render_markdown(comparison, run_url=ctx.env.run_url)
    except GateError as exc:
        ctx.io.warning(f"main was not compared with its previous baseline: {exc}")
        return None, "", None
    if comparison.verdict == "regression":
        ctx.io.warning(str(comparison.headline), title="agent-gate: main regressed")
    return str(comparison.verdict), markdown, (baseline, comparison)
