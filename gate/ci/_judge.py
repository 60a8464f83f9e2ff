"""Stage 4, *judge*: ``compare.judge`` over the obtained results and the plan's baseline, then
the policy (gate/ci/_policy.py: accept label, fail-on-regression, exit code), then the report
the comment and the step summary show. Reads the PR's live labels and who set the accept
label (the forge, ``_forge``); everything else is a function of the stages before.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from markupsafe import Markup

from gate.ci._context import Context
from gate.ci._forge import ChangeRequest
from gate.ci._obtain import Obtained
from gate.ci._plan import Plan, code
from gate.ci._policy import acceptance, outcome
from gate.ci._verdict import verdict
from gate.compare import Comparison
from gate.core.history import parse_history, trend_entries
from gate.core.results import Results
from gate.core.traces import Trace, parse_sidecar
from gate.errors import GateError


@dataclass(frozen=True)
class Judgement:
    """A run judged against a baseline: everything the report, outputs and exit need."""

    results: Results
    baseline: Results
    comparison: Comparison
    exit_code: int
    accepted: bool
    baseline_edited: bool
    notes: tuple[str, ...]
    markdown: str
    # the traces kept next to the baseline (the sidecar's text), for the HTML report's
    # baseline runs that have no transcript here; None: none (or a same-job A/B's own runs)
    baseline_traces: str | None
    base_arm: Path | None  # a same-job A/B's base arm results file


def judge(ctx: Context, plan: Plan, got: Obtained) -> Judgement:
    """The verdict on this run, the job's exit code, and the report."""
    history = None if got.by_ab else (plan.basis.ys.history_text or "")
    basis = plan.basis  # the base branch's [gate], and its [ci] with the CLI's overrides
    comparison = verdict(got.baseline, got.results, basis.config.gate, history,
                         basis.settings.sim_unjudged)
    return _finish(ctx, plan, got, comparison)


def _finish(ctx: Context, plan: Plan, got: Obtained, comparison: Comparison) -> Judgement:
    """The verdict's policy on a PR (the accept label, fail-on-regression) and its report."""
    from gate.report import render_markdown

    pr, ys, settings = plan.pr, plan.basis.ys, plan.basis.settings
    notes = [*plan.notes, *got.notes]
    labels = _labels(ctx, pr) if pr is not None else []
    accepted = (comparison.verdict == "regression" and pr is not None
                and _accepted_by(ctx, pr, settings.accept_label, labels, notes) is not None)
    policy = outcome(comparison, accepted=accepted,
                     fail_on_regression=settings.fail_on_regression,
                     accept_label=settings.accept_label, on_pr=pr is not None,
                     label_code=code(settings.accept_label))
    if policy.note is not None:
        notes.append(policy.note)
    text = ys.history_text
    trend = [e.model_dump() for e in trend_entries(parse_history(text))] if text else None
    ys.validate_changed_tasks(registry=ctx.opts.run.registry)
    for line in ys.lines(markdown=False):
        ctx.log(f"gate ci: yardstick: {line}")
    shown = comparison
    if pr is not None and pr.head_sha:
        # the PR's head commit, as its author knows it: not the merge commit under test,
        # which a pull_request run checks out (refs/pull/N/merge) and no one has seen
        shown = comparison.model_copy(update={
            "candidate": comparison.candidate.model_copy(update={"commit": pr.head_sha})})
    markdown = render_markdown(shown, run_url=ctx.env.run_url, notes=tuple(notes),
                               trend=trend, yardstick=ys.note(), mode=got.mode,
                               evidence=_evidence(ctx, plan, got, comparison),
                               accepted=policy.accepted, command=reproduce(plan, got))
    return Judgement(got.results, got.baseline, comparison, policy.exit_code, policy.accepted,
                     plan.edited, tuple(notes), ctx.redact(markdown),
                     ys.traces_text if not got.by_ab else None, got.base_arm)


def reproduce(plan: Plan, got: Obtained) -> str:
    """The command that judges this run again on a developer's machine, from the files the
    report artifact holds: the base branch's baseline and settings read with git, as here
    (``gate compare --base-ref``), or a same-job A/B's two arms."""
    import shlex

    results = plan.basis.request.output.name
    if got.base_arm is not None:
        return shlex.join(["gate", "compare", got.base_arm.name, results])
    label = plan.basis.ys.label
    ref = label if label.startswith("origin/") else f"origin/{label}"
    return shlex.join(["gate", "compare", "--base-ref", ref, results])


def _evidence(ctx: Context, plan: Plan, got: Obtained, comparison: Comparison
              ) -> Markup | None:
    """What the runs did (gate/pool/evidence.py): this run's transcripts beside the traces kept
    next to the baseline (or, in a same-job A/B, the base arm's own transcripts). It
    explains the verdict and never changes it: a problem here leaves it out."""
    from gate.pool import evidence

    try:
        mine = ctx.traces(got.results, plan.basis.request.output)
        theirs: list[Trace] | None = None
        missing = None
        if got.ab_base_path is not None:
            theirs = ctx.traces(got.baseline, got.ab_base_path)
        elif plan.basis.ys.traces_text is not None:
            theirs = parse_sidecar(plan.basis.ys.traces_text)
        else:
            missing = ("No traces are kept next to this baseline yet (main's refresh keeps "
                       "them from this version of the gate on): only this PR's runs are "
                       "shown.")
        return evidence.render(evidence.build(comparison, got.results, got.baseline, mine,
                                              theirs, base_missing=missing))
    except (GateError, OSError, ValueError) as exc:
        ctx.io.warning(f"the comment's evidence was left out: {exc}")
        return None


def _labels(ctx: Context, pr: ChangeRequest) -> list[str]:
    """Live labels (a re-run after labelling has a stale payload); the payload's as a
    fallback when the API cannot be asked."""
    if ctx.env.token is None:
        return list(pr.labels)
    try:
        return ctx.forge.labels(pr.number)
    except GateError as exc:
        ctx.io.warning(f"cannot read the PR's labels, using the event's: {exc}")
        return list(pr.labels)


def _accepted_by(ctx: Context, pr: ChangeRequest, label: str, labels: list[str],
                 notes: list[str]) -> str | None:
    """Who accepted this regression with the accept label, or None (``_policy``'s
    ``acceptance``); the label's note goes into ``notes``."""
    result = acceptance(ctx.forge, pr.number, label, labels)
    if result.note:
        notes.append(result.note)
    if result.warning:
        ctx.io.warning(ctx.redact(result.warning), title="agent-gate")
    if result.log:
        ctx.log(f"gate ci: {result.log}")
    return result.who
