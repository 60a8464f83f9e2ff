"""The jobs that measure: a PR's or a check's verdict, main's refresh, a shard of the suite.

Kept apart from ``_run`` so the comment job (``workflow_run``: post a report a fork's run
uploaded) imports none of it: no statistics, no runner — the posting half of the fork pattern
installs only what posting needs (action.yml).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from gate.ci._context import Context
from gate.ci._event import Event
from gate.ci._judge import Judgement, judge
from gate.ci._obtain import load_shards, obtain, run_fresh
from gate.ci._plan import Basis, agent_change, make_plan, open_basis, refresh_plan
from gate.ci._publish import Publisher
from gate.ci._refresh import refresh
from gate.ci._yardstick import base_baseline
from gate.core.config import CISettings
from gate.core.results import Results
from gate.core.traces import transcripts_dir
from gate.errors import GateError
from gate.execution.run import PlanFrom


def run_job(ctx: Context, event: Event, seen: Callable[[CISettings], None]) -> int:
    """Every job but the comment job, by its event."""
    opts = ctx.opts
    if event.source == "shard":
        return _shard(ctx, event, seen)
    merged = (load_shards(ctx, opts.merge, opts.run.output)
              if event.source == "merge" and opts.merge is not None else None)
    if event.kind == "main":
        return refresh(ctx, refresh_plan(ctx, event), merged)
    with open_basis(ctx, event.base, seen) as basis:
        if event.kind == "pr":
            return _pr(ctx, event, basis, merged)
        return _check(ctx, event, basis, merged)


def _pr(ctx: Context, event: Event, basis: Basis, merged: Results | None) -> int:
    pr = event.pr
    assert pr is not None
    publisher = Publisher(ctx, basis.settings)
    stored = event.source in ("rejudge", "merge")
    change = None if stored else agent_change(basis)
    unchanged = change.fingerprint if change is not None and not change.changed else None
    if ctx.env.secrets_withheld and not stored and ctx.missing(basis.request):
        gate_changed = change is not None and change.changed == ("code",)
        upstream = ctx.upstream(basis.request)
        return publisher.withheld(pr, unchanged, gate_changed=gate_changed,
                                  key=upstream.credential_name, lacks=upstream.withheld_name)
    if unchanged is not None and ctx.spends(basis.request):
        return publisher.unchanged(pr, unchanged)  # measuring it again would only spend
    if not stored:
        publisher.announce_running(pr)
    try:
        j = judge(ctx, plan := make_plan(ctx, event, basis), obtain(ctx, event, plan, merged))
    except KeyboardInterrupt:  # the job cancelled (SIGTERM/SIGINT) during the suite
        publisher.announce_cancelled(pr)
        raise
    html = publisher.report(j, basis.config, basis.request.output, {
        "mode": "pr", "pr_number": pr.number,
        "baseline_edited": str(j.baseline_edited).lower()})
    publisher.post_comment(pr, j.markdown, j.comparison, html)
    ctx.log(f"gate ci: {j.comparison.headline} (exit {j.exit_code})")
    return j.exit_code


def _check(ctx: Context, event: Event, basis: Basis, merged: Results | None) -> int:
    plan = make_plan(ctx, event, basis)
    j = judge(ctx, plan, obtain(ctx, event, plan, merged))
    publisher = Publisher(ctx, basis.settings)
    html = publisher.report(j, basis.config, basis.request.output, {"mode": "check"})
    if event.source == "rejudge":
        _comment_on_branch_pr(ctx, publisher, j, html)
    return j.exit_code


def _comment_on_branch_pr(ctx: Context, publisher: Publisher, j: Judgement,
                          html: dict[str, object]) -> None:
    """A re-judge dispatched on a PR's branch shows its verdict on that PR (the open PR
    whose head is this commit), by the comment mode like a PR run."""
    env = ctx.env
    branch = env.branch
    if not (branch and env.sha and env.token is not None and env.repository):
        return
    try:
        number = ctx.forge.find_change(env.repository, branch, env.sha)
    except GateError as exc:
        ctx.io.warning(f"cannot find the pull request of {branch}: {exc}")
        return
    if number is None:
        ctx.log(f"gate ci: no open pull request has {env.sha[:7]} as its head; no comment")
        return
    pr = ctx.forge.change_request(number, env.default_branch or "main", branch, env.sha)
    ctx.io.set_outputs({"pr_number": number})
    publisher.post_comment(pr, j.markdown, j.comparison, html)


def _shard(ctx: Context, event: Event, seen: Callable[[CISettings], None]) -> int:
    """One matrix job: run this shard of the suite (the base branch's tasks for pr/check,
    as a whole run would) and leave its results for the action's upload. No verdict, no
    comment, no refresh: the judge job merges the shards and does those once."""
    opts = ctx.opts
    assert opts.run.shard is not None
    index, count = opts.run.shard
    if event.kind in ("pr", "check"):
        # each shard plans the whole suite from the baseline the merged file is judged
        # against (one look: a matrix runs no sequential looks) and runs its tasks' part
        with open_basis(ctx, event.base, seen) as basis:
            results = run_fresh(ctx, dataclasses.replace(
                basis.request, plan_from=PlanFrom(base_baseline(basis.ys), "baseline")))
    else:  # main's refresh builds the baseline: every task the same runs, no plan
        results = run_fresh(ctx, opts.run)
    artifact = f"agent-gate-shard-{index}-of-{count}"
    s = results.summary
    ctx.log(f"gate ci: shard {index}/{count}: {s.passed}/{s.total} passed, {s.errors} "
            f"errors → {opts.run.output} (artifact {artifact}); the judge job merges "
            "the shards")
    ctx.io.summary(f"agent-gate: shard {index}/{count} of the suite ran "
                   f"({len(results.runs)} runs, {s.passed}/{s.total} passed); the verdict "
                   "comes from the job that merges the shards.\n")
    # what the artifact holds: the results and their transcripts, side by side (the
    # judge finds each shard's transcripts beside its results, as `gate merge` does)
    output, folder = opts.run.output, transcripts_dir(opts.run.output)
    files = [output, *([folder] if folder.is_dir() and not folder.is_symlink() else [])]
    ctx.io.set_outputs({"mode": event.kind, "verdict": "shard", "exit_code": 0,
                        "shard": f"{index}/{count}", "shard_artifact": artifact,
                        "shard_files": "\n".join(str(f.resolve()) for f in files),
                        **ctx.outputs_for(results, output)})
    return 0
