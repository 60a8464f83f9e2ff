"""Stage 3, *obtain*: the results a run is judged (or pooled) by, from the one place the event
and the plan name — a fresh run of the suite, sequential looks, a same-job A/B, stored results
re-judged, one shard of a matrix, or the matrix's shards merged — plus the skill conditions the
plan adds. One dispatch (``obtain``); what it returns (``Obtained``) is all the judge needs.

Budget: a run the budget stopped is refused here (gate/ci/_policy.py), before any verdict.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path

from markupsafe import Markup

from gate.ci import _skills
from gate.ci._context import Context
from gate.ci._event import Event
from gate.ci._plan import Plan, code
from gate.ci._policy import budget_note, check_budget
from gate.ci._skills import ConditionPlan
from gate.ci._yardstick import base_baseline
from gate.core.results import Results
from gate.errors import BadInput, Unmeasurable
from gate.execution.run import PlanFrom, RunRequest, run_suite
from gate.report import render_note


@dataclass(frozen=True)
class Obtained:
    """A run's results and what judging them needs besides the plan."""

    results: Results
    baseline: Results  # the plan's baseline, or a same-job A/B's base arm
    notes: tuple[str, ...] = ()  # the comment's notes on where the results came from
    mode: Markup | None = None  # a same-job A/B's line in the comment
    base_arm: Path | None = None  # a same-job A/B's base arm results file (for the report)
    # a same-job A/B's base arm as it ran: its transcripts are the baseline's evidence
    ab_base_path: Path | None = None

    @property
    def by_ab(self) -> bool:
        return self.ab_base_path is not None


def run_fresh(ctx: Context, req: RunRequest) -> Results:
    """One run of the suite, as requested."""
    return run_suite(ctx.run_request(req), on_result=ctx.land, on_start=ctx.opts.on_start)


def obtain(ctx: Context, event: Event, plan: Plan, merged: Results | None) -> Obtained:
    """The results of this pr/check run, from where the event says."""
    if plan.by_ab:
        return _ab(ctx, plan)
    assert plan.baseline is not None
    req = plan.basis.request
    notes: list[str] = []
    if event.source == "merge":
        assert merged is not None
        results = merged
        notes.append(render_note("merged", count=_merged_count(results)))
    elif event.source == "rejudge":
        results = stored_results(ctx, req.output)
        notes.append(render_note("rejudged", path=code(req.output.name)))
    else:
        req = with_conditions(ctx, req, plan.conditions)
        if plan.basis.config.gate.sequential:
            from gate.execution.sequential import run_sequential

            # the looks are recorded in the results file: the judge applies each look's share
            # of the levels from there; every look is the plan's, made from the baseline
            # before the first; the conditions run with the first look and are kept by the rest
            results = run_sequential(ctx.run_request(req), plan.baseline,
                                     plan.basis.config.gate, ctx.land,
                                     ctx.opts.on_start).results
        else:  # one look, planned from the baseline it is judged against
            results = run_fresh(ctx, dataclasses.replace(
                req, plan_from=PlanFrom(plan.baseline, "baseline")))
        check_budget(results, budgeted(req))
        if (budget := budget_note(results)) is not None:
            notes.append(budget)
    return Obtained(results, plan.baseline, tuple(notes))


def with_conditions(ctx: Context, req: RunRequest, plan: ConditionPlan | None) -> RunRequest:
    """``req`` with the plan's skill conditions run beside the suite, as arms of its session
    (one pool, one budget for the job, one journal, one results file: what is judged or
    pooled)."""
    if plan is None:
        return req
    ctx.log(f"gate ci: skill conditions {', '.join(plan.conditions)} on "
            f"{len(plan.tasks)} task{'' if len(plan.tasks) == 1 else 's'} "
            f"({', '.join(plan.tasks)}): {plan.why}")
    return _skills.condition_request(req, plan)


def budgeted(req: RunRequest) -> str:
    """What the job's budget covered: the suite's run, and the skill conditions beside it."""
    return "the suite's run" + (" (with its skill conditions)" if req.beside is not None else "")


def _ab(ctx: Context, plan: Plan) -> Obtained:
    """The two arms of a same-job A/B (gate/execution/ab.py): the base commit's agent and this
    checkout's, run here interleaved (or, on a re-judge, the stored pair); and the
    comment's line saying so, with what it cost."""
    from gate.execution.ab import (
        ABRun,
        base_arm_config,
        base_output,
        describe,
        resolve_commit,
        run_ab,
    )

    basis = plan.basis
    ys, req = basis.ys, basis.request
    why = plan.ab_why or Markup("")
    notes: tuple[str, ...] = ()
    if ctx.opts.rejudge is not None:
        base_path = base_output(req.output)
        base = stored_results(ctx, base_path)
        pair = ABRun(base, stored_results(ctx, req.output), base_path, req.output, base.commit)
        base_arm = base_path
        notes = (render_note("rejudged", path=code(req.output.name)),)
    else:
        commit = resolve_commit(basis.root, ys.ref)
        ctx.log(f"gate ci: judged by a same-job A/B against {ys.label} "
                f"({(commit or '?')[:7]})'s agent: {why.striptags()}")
        if basis.config.gate.sequential:
            ctx.log("gate ci: [gate] sequential does not apply to a same-job A/B: every "
                    "replication runs in both arms")
        # both arms planned alike from the base's committed baseline, when there is one
        # (it is not the arm the PR is judged against: "independent"), else uniform
        run = dataclasses.replace(ctx.run_request(req), plan_from=PlanFrom(
            base_baseline(ys), "independent"))
        with base_arm_config(ys.config, root=basis.root, ref=ys.ref, label=ys.label) as cfg:
            pair = run_ab(run, cfg, base_commit=commit, on_result=ctx.land)
        base_arm = base_output(run.output)
    ctx.log(f"gate ci: {describe(pair, markdown=False)}")
    mode = Markup(f"{describe(pair, markdown=True)}: {why}. Both arms ran on "
                  f"{code(ys.label)}'s tasks and settings, interleaved run by run, "
                  "so provider drift cannot tell them apart.")
    return Obtained(pair.pr, pair.base, notes, mode, base_arm, pair.base_path)


def stored_results(ctx: Context, path: Path) -> Results:
    """A finished run's results, judged again without a new suite run."""
    from gate.core.results import load_results

    if not path.is_file():
        raise BadInput(f"{path}: no results to re-judge (download the artifact of the run "
                       "that wrote them first)")
    results = load_results(path)
    if results.interrupted is not None:
        raise Unmeasurable(f"{path}: {results.interruption_note() or 'interrupted'}: an "
                           "incomplete run is not judged")
    ctx.log(f"gate ci: re-judging {path} ({len(results.runs)} runs); no suite run")
    return results


def load_shards(ctx: Context, where: Path, output: Path) -> Results:
    """The judge job: every shard's results under ``where`` (the downloaded artifacts),
    merged into ``output``; judged (pr/check) or pooled (main) like a run of the whole
    suite. A missing or foreign shard is refused."""
    from gate.core.results import load_results, write_results
    from gate.execution.shards import carry_transcripts, merge

    if not where.is_dir():
        raise BadInput(f"{where}: no directory of shard results (download the shards' "
                       "artifacts into it first: actions/download-artifact with "
                       "`pattern: agent-gate-shard-*`)")
    files = sorted(p for p in where.rglob("*.json") if p.is_file())
    if linked := [p for p in files if p.is_symlink()]:
        # an artifact holds regular files: a link here points at something else's file
        raise BadInput(f"{linked[0]}: a symlink, not a shard's results: not read")
    if not files:
        raise BadInput(f"{where}: no shard results (*.json) in it")
    parts = [(p, load_results(p)) for p in files]
    try:
        merged = merge(parts)
    except BadInput as exc:
        if "missing" not in str(exc):
            raise
        raise BadInput(f"{exc}: a shard job whose gate failed uploads nothing (see that "
                       "job's log)") from None
    # each shard's transcripts (its artifact's `.transcripts/`), beside the merged results:
    # the comment's evidence and the report read them there
    merged, carried, warnings = carry_transcripts(parts, merged, output)
    for line in warnings:
        ctx.io.warning(line)
    write_results(output, merged)
    if merged.interrupted is not None:
        raise Unmeasurable(f"the merged {merged.interruption_note()}: an incomplete run "
                           "is neither judged nor pooled")
    ctx.log(f"gate ci: merged {len(files)} shards from {where}: {len(merged.runs)} runs "
            f"({carried} transcript{'' if carried == 1 else 's'}) → {output}; no suite run")
    return merged


def _merged_count(results: Results) -> int:
    merged_from = (results.model_extra or {}).get("merged_from")
    return len(merged_from) if isinstance(merged_from, list) else 0
