"""``run_ci``: one ``gate ci`` job, as stages over frozen data.

    event ──▶ plan ──▶ obtain ──▶ judge ──▶ publish
    (_event)  (_plan)  (_obtain)  (_judge,   (_publish; main: _refresh;
                                   _policy)   workflow_run: _comment)

``find_event`` decides what kind of run this is (pure); the plan opens the base branch's
yardstick and decides how the run is judged before anything runs; obtain gets the results from
the one place the event names; judge applies ``compare.judge`` and the policy; publish writes
what the job leaves behind. A ``GateError`` anywhere is reported the same way (annotation,
step summary, outputs, the report file and — on a PR — the comment) and re-raised for the
CLI to print and exit with its code.
"""

from __future__ import annotations

from collections.abc import Callable

from gate._files import atomic_write_text
from gate.ci._comment import post_uploaded_report
from gate.ci._context import Context
from gate.ci._event import Event, find_event, resolve_mode
from gate.ci._judge import Judgement, judge
from gate.ci._obtain import load_shards, obtain, run_fresh
from gate.ci._options import CIOptions
from gate.ci._plan import Basis, agent_change, make_plan, open_basis, refresh_plan
from gate.ci._publish import Publisher, failure_markdown
from gate.ci._refresh import refresh
from gate.config import CISettings
from gate.errors import GateError
from gate.github import ActionsIO, CIEnvironment
from gate.results import Results
from gate.traces import transcripts_dir


def run_ci(opts: CIOptions, env: CIEnvironment | None = None,
           io: ActionsIO | None = None) -> int:
    """Run ``gate ci`` and return its exit code. A ``GateError`` is reported (annotation,
    step summary, outputs) and re-raised so the CLI prints it and exits with its code."""
    env = env or CIEnvironment.from_environ()
    ctx = Context.make(opts, env, io)
    for secret in env.secrets:
        ctx.io.add_mask(secret)
    # the [ci] settings in force: the checkout's, then (once the yardstick is open) the base
    # branch's; a failure is reported by the latest
    seen: list[CISettings] = [opts.overrides.apply(opts.run.config.ci)]
    mode = "?"
    try:
        mode = resolve_mode(opts.mode, env)
        event = find_event(opts.mode, env, rejudge=opts.rejudge is not None,
                           merge=opts.merge is not None, shard=opts.run.shard is not None)
        return _dispatch(ctx, event, seen.append)
    except GateError as exc:
        reason = ctx.redact(str(exc))
        _report_failure(ctx, mode, reason, exc)
        what = "unmeasurable" if exc.exit_code == 3 else "error"
        pr = env.pull_request if mode == "pr" else None
        Publisher(ctx, seen[-1]).comment_failure_report(pr, reason, what, exc)
        exc.args = (reason,)  # the CLI prints str(exc): never with a secret in it
        raise
    finally:
        ctx.github.close()


def _report_failure(ctx: Context, mode: str, reason: str, exc: GateError) -> None:
    what = "unmeasurable" if exc.exit_code == 3 else "error"
    markdown = failure_markdown(what, reason, ctx.env.run_url)
    ctx.io.error(reason, title=f"agent-gate: {what}")
    ctx.io.summary(markdown)
    outputs: dict[str, object] = {"mode": mode, "verdict": what,
                                  "exit_code": exc.exit_code, "reason": reason}
    if mode in ("pr", "check"):  # the two-workflow pattern posts this file
        try:
            atomic_write_text(ctx.opts.report_path, markdown)
            outputs["report_path"] = str(ctx.opts.report_path.resolve())
        except OSError:
            pass
    ctx.io.set_outputs(outputs)


def _dispatch(ctx: Context, event: Event, seen: Callable[[CISettings], None]) -> int:
    opts = ctx.opts
    if event.source == "shard":
        return _shard(ctx, event, seen)
    merged = (load_shards(ctx, opts.merge, opts.run.output)
              if event.source == "merge" and opts.merge is not None else None)
    if event.kind == "main":
        return refresh(ctx, refresh_plan(ctx, event), merged)
    if event.kind == "comment":
        return post_uploaded_report(ctx, Publisher(ctx, opts.overrides.apply(opts.run.config.ci)))
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
    if (ctx.needs_key(basis.request) and ctx.env.anthropic_api_key is None
            and ctx.env.secrets_withheld and not stored):
        gate_changed = change is not None and change.changed == ("code",)
        return publisher.withheld(pr, unchanged, gate_changed=gate_changed)
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
    from gate.github import PullRequestInfo, find_pr_for_run

    env = ctx.env
    branch = env.branch
    if not (branch and env.sha and env.token is not None and env.repository):
        return
    try:
        number = find_pr_for_run(ctx.github.client, env.repository, branch, env.sha)
    except GateError as exc:
        ctx.io.warning(f"cannot find the pull request of {branch}: {exc}")
        return
    if number is None:
        ctx.log(f"gate ci: no open pull request has {env.sha[:7]} as its head; no comment")
        return
    pr = PullRequestInfo(number=number, base_ref=env.default_branch or "main",
                         head_ref=branch, head_sha=env.sha)
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
        with open_basis(ctx, event.base, seen) as basis:
            results = run_fresh(ctx, basis.request)
    else:
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
