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
from gate.ci._comment import default_branch_ci, post_uploaded_report
from gate.ci._context import Context
from gate.ci._event import Event, find_event, resolve_mode
from gate.ci._forge import CIFacts, Sink
from gate.ci._options import CIOptions
from gate.ci._publish import Publisher, failure_markdown
from gate.core.config import CISettings
from gate.errors import GateError


def run_ci(opts: CIOptions, env: CIFacts | None = None, io: Sink | None = None) -> int:
    """Run ``gate ci`` and return its exit code. A ``GateError`` is reported (annotation,
    step summary, outputs) and re-raised so the CLI prints it and exits with its code."""
    ctx = Context.make(opts, env, io)
    env = ctx.env  # read by the forge's adapter when not given
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
        ctx.forge.close()


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
    if event.kind == "comment" and event.source != "shard":
        settings = ctx.opts.overrides.apply(default_branch_ci(ctx))
        seen(settings)
        return post_uploaded_report(ctx, Publisher(ctx, settings))
    from gate.ci._jobs import run_job  # the measuring stages: never on the comment job's path

    return run_job(ctx, event, seen)
