"""Stage 5, *publish*: what a judged run leaves behind — the report file, the step summary,
the step outputs and annotations, the HTML report, and this suite's PR comment (posted now, or
left for the action's posting step after the report's upload: the forge's ``defer_comment``).

Nothing here changes a verdict: a comment or a report that cannot be written is a warning.
The comment itself (finding it, editing it, the deferred file) is the forge's (``_forge``);
this module decides what goes where, by the comment mode (``[ci] comment_mode``).
"""

from __future__ import annotations

import re
import signal
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import ValidationError

from gate._files import atomic_write_text
from gate.ci._context import Context, num
from gate.ci._forge import ChangeRequest, CommentState, DeferredComment, PostedComment
from gate.core.config import DEFAULT_COMMENT_ID, CISettings, CommentMode, GateConfig, comment_mode
from gate.core.results import Results
from gate.errors import ForgeError, GateError
from gate.report import code_span, link_url, md, render_body

if TYPE_CHECKING:  # the comment job's path imports no statistics (numpy): types only
    from gate.ci._judge import Judgement
    from gate.compare import Comparison

DEPENDABOT = "dependabot[bot]"  # the actor of Dependabot's PRs: Dependabot secrets only


def failure_markdown(what: str, reason: str, run_url: str | None) -> str:
    """The body when the gate could not judge: from a template, the reason escaped (an error
    message can quote PR-controlled config: an @mention, an ``<img>``, a link)."""
    return render_body("failure.md.j2", what=what, reason=md(reason, 4000),
                       run_url=link_url(run_url))


def shows_change(c: Comparison) -> bool:
    """A pass that still has something to say: a metric that moved significantly (either way)
    or a task that newly fails or newly passes."""
    return (any(m.significant and m.comparable for m in c.metrics)
            or any(t.change in ("newly_failing", "newly_passing") for t in c.tasks))


def creates(mode: CommentMode, comparison: Comparison | None, *, failed: bool = False) -> bool:
    """Whether ``mode`` creates a comment for this outcome when none exists. ``comparison``
    None: the gate reached no verdict (``failed``: the check is red all the same)."""
    if mode == "always":
        return True
    if mode == "never":
        return False
    if comparison is None:
        return failed
    if comparison.verdict != "pass" or comparison.unjudged is not None:
        return True  # a pass the simulator could not judge says so (gate/compare/_simjudge.py)
    return mode == "on-change" and shows_change(comparison)

class Publisher:
    """Where one job's results go, by ``settings`` (``[ci]`` in force, with the overrides)."""

    def __init__(self, ctx: Context, settings: CISettings) -> None:
        self.ctx = ctx
        self.settings = settings

    # ----- the report, the summary, the outputs --------------------------------------------

    @property
    def comment_id(self) -> str:
        return self.settings.comment_id or self.ctx.opts.default_comment_id

    @property
    def report_artifact(self) -> str:
        """The report's artifact name: one per suite (its comment id), as a matrix over
        models uploads one each within a run."""
        if self.comment_id == DEFAULT_COMMENT_ID:
            return "agent-gate-report"
        return "agent-gate-report-" + (re.sub(r"[^A-Za-z0-9._-]+", "-", self.comment_id)
                                       .strip("-.") or "suite")

    def write_html(self, cfg: GateConfig, results: Results, results_path: Path,
                   baseline: Results | None, comparison: Comparison | None,
                   baseline_traces: str | None, base_arm: Path | None = None
                   ) -> dict[str, object]:
        """The run's HTML report and what the action uploads with it (its outputs).
        Whatever goes wrong here is a warning: the report never changes the verdict."""
        ctx = self.ctx
        path = ctx.opts.html_report
        if path is None:
            return {}
        try:
            from gate.core.traces import parse_sidecar
            from gate.report import render_html

            page = render_html(results, results_path=results_path, baseline=baseline,
                               baseline_path=base_arm, comparison=comparison,
                               level=cfg.gate.ci_level, seed=cfg.gate.seed,
                               run_url=ctx.env.run_url,
                               baseline_traces=parse_sidecar(baseline_traces)
                               if baseline_traces is not None else None)
            atomic_write_text(path, ctx.redact(page))
        except Exception as exc:  # any failure, a bug too: it must not cost the verdict
            ctx.io.warning(f"the HTML report was not written (the verdict stands): "
                           f"{type(exc).__name__}: {exc}", title="agent-gate")
            return {}
        from gate.core.results import transcripts_dir

        files = [path, ctx.opts.report_path]
        for results_file in (results_path, base_arm):
            if results_file is not None and results_file.is_file():
                files += [results_file, transcripts_dir(results_file)]
        ctx.log(f"gate ci: wrote the HTML report {path}")
        return {
            "html_report_path": str(path.resolve()),
            "report_artifact": self.report_artifact,
            "report_files": "\n".join(str(f.resolve()) for f in files if f.exists()),
        }

    def report(self, j: Judgement, cfg: GateConfig, output: Path,
               extra: dict[str, object]) -> dict[str, object]:
        """The judged run's report file, step summary, outputs and annotation; returns the
        HTML report's outputs (the deferred comment links its artifact)."""
        ctx = self.ctx
        verdict = str(j.comparison.verdict)
        headline = ctx.redact(str(j.comparison.headline))
        atomic_write_text(ctx.opts.report_path, j.markdown)
        ctx.io.summary(j.markdown)
        html = self.write_html(cfg, j.results, output, j.baseline, j.comparison,
                               j.baseline_traces, j.base_arm)
        ctx.io.set_outputs({
            **html,
            "verdict": verdict, "exit_code": j.exit_code, "headline": headline,
            "accepted": str(j.accepted).lower(),
            "baseline_pass_rate": num(j.baseline.summary.pass_rate),
            **resolution_outputs(j.comparison),
            **ctx.outputs_for(j.results, output),
            "report_path": str(ctx.opts.report_path.resolve()),
            **extra,
        })
        if verdict == "regression":
            if j.exit_code == 0:
                ctx.io.warning(headline, title="agent-gate: regression (not blocking)")
            else:
                ctx.io.error(headline, title="agent-gate: regression")
        elif verdict == "inconclusive":
            # exit 0: a metric past its margin the design could not settle ("unclear")
            (ctx.io.error if j.exit_code else ctx.io.warning)(
                headline, title="agent-gate: inconclusive")
        else:
            ctx.io.notice(headline, title="agent-gate")
        return html

    # ----- this suite's PR comment (the forge's ``comment``) ---------------------------------

    def can_comment(self) -> bool:
        """Whether this run may write the PR comment at all (the mode, a fork's read-only
        token, a token to write with)."""
        env = self.ctx.env
        return (comment_mode(self.settings) != "never" and not env.fork_repo
                and env.token is not None)

    def defer(self, pr: ChangeRequest, state: CommentState, markdown: str | None = None,
              create: bool = False, html: dict[str, object] | None = None) -> bool:
        """With ``defer_comment``: leave the comment for the action's posting step (after the
        report's upload). False when not deferring, or when the file cannot be written (the
        caller then posts itself)."""
        ctx = self.ctx
        if not ctx.opts.defer_comment:
            return False
        page = (html or {}).get("html_report_path")
        try:
            pending = ctx.forge.defer_comment(DeferredComment(
                number=pr.number, comment_id=self.comment_id,
                mode=comment_mode(self.settings),
                author=self.settings.comment_author, state=state,
                body=ctx.redact(markdown) if markdown is not None else None,
                create=create,
                artifact=self.report_artifact if page else "",
                html_name=Path(str(page)).name if page else ""))
        except (OSError, ValidationError) as exc:
            ctx.io.warning(f"the PR comment is posted now, not after the report's upload: "
                           f"{exc}", title="agent-gate")
            return False
        ctx.io.set_outputs({"comment_pending": str(pending)})
        return True

    def show(self, pr: ChangeRequest, markdown: str, *, create: bool, what: str,
             quiet: bool = False) -> PostedComment | None:
        """Put ``markdown`` in this suite's comment; a failure is a warning (``quiet``: a log
        line, when the verdict's own post will warn of the same cause), never a verdict."""
        ctx = self.ctx
        comment = ctx.forge.comment(pr.number, self.comment_id, comment_mode(self.settings),
                                    self.settings.comment_author)
        try:
            ref = comment.post(ctx.redact(markdown), create=create)
        except GateError as exc:
            message = (f"the PR comment was not {what} (the verdict stands): "
                       f"{self.comment_failure(exc)}")
            if quiet:
                ctx.log(f"gate ci: {message}")
            else:
                ctx.io.warning(message, title="agent-gate")
            return None
        if ref is not None:
            ctx.log(f"gate ci: {'created' if ref.created else 'updated'} the PR comment "
                    f"{ref.url} ({what}; comment id {self.comment_id})")
        return ref

    def comment_failure(self, exc: GateError) -> str:
        """Why the comment could not be written, naming the likely cause."""
        text = str(exc)
        if isinstance(exc, ForgeError) and exc.status == 403 and \
                self.ctx.env.actor == DEPENDABOT:
            text = ("this PR was opened by Dependabot, whose runs get a read-only token unless "
                    f"the workflow's `permissions:` grant more; {text}")
        return self.ctx.redact(text)

    def _head(self, pr: ChangeRequest) -> object:
        return code_span((pr.head_sha or self.ctx.env.sha or "HEAD")[:7])

    def announce_running(self, pr: ChangeRequest) -> None:
        """Before the suite: an existing comment stops showing the last verdict as current.
        Only ``always`` creates a comment for this."""
        if not self.can_comment():
            return
        # first: a step that dies from here on still has its "running" comment corrected
        self.defer(pr, "running")
        self.show(pr, render_body("running.md.j2", sha=self._head(pr),
                                  run_url=link_url(self.ctx.env.run_url)),
                  create=comment_mode(self.settings) == "always", what="marked as running",
                  quiet=True)

    def announce_cancelled(self, pr: ChangeRequest) -> None:
        """The run was stopped during the suite: the comment (if any) says so. A second
        signal while this is written is ignored: the runner escalates to SIGKILL anyway."""
        if not self.can_comment():
            return
        self.ctx.log("gate ci: cancelled during the suite")
        previous = {sig: signal.signal(sig, signal.SIG_IGN)
                    for sig in (signal.SIGINT, signal.SIGTERM)}
        try:
            self.show(pr, render_body("cancelled.md.j2", sha=self._head(pr),
                                      run_url=link_url(self.ctx.env.run_url)),
                      create=False, what="marked as cancelled")
            self.defer(pr, "cancelled")
            self.ctx.io.set_outputs({"verdict": "cancelled", "mode": "pr"})
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)

    def post_comment(self, pr: ChangeRequest, markdown: str, comparison: Comparison,
                     html: dict[str, object]) -> None:
        """The verdict's comment, created or updated by the comment mode."""
        ctx = self.ctx
        mode = comment_mode(self.settings)
        if mode == "never":
            ctx.io.set_outputs({"comment_url": "", "comment_id": ""})
            return
        if ctx.env.fork_repo:
            ctx.io.notice(
                "no PR comment: the token of a pull request from a fork is read-only. The "
                f"report is in the step summary and in {ctx.opts.report_path}; docs/github.md "
                "shows the two-workflow pattern that comments on fork PRs.")
            ctx.io.set_outputs({"comment_url": "", "comment_id": ""})
            return
        create = creates(mode, comparison)
        if self.defer(pr, "final", markdown, create, html):
            ctx.log("gate ci: the PR comment is posted after the report's upload")
            return
        ref = self.show(pr, markdown, create=create, what="posted")
        if ref is None and create is False:
            ctx.log(f"gate ci: no PR comment (comment-mode {mode}: nothing to report, and no "
                    "earlier comment to update)")
        ctx.io.set_outputs({"comment_url": ref.url if ref else "",
                            "comment_id": ref.id if ref else ""})

    def comment_failure_report(self, pr: ChangeRequest | None, reason: str, what: str,
                               exc: GateError) -> None:
        """A PR whose gate could not measure still says why on the PR, not only in a log."""
        if pr is None or not self.can_comment():
            return
        markdown = failure_markdown(what, reason, self.ctx.env.run_url)
        create = creates(comment_mode(self.settings), None, failed=True)
        if self.defer(pr, "final", markdown, create) or isinstance(exc, ForgeError):
            return
        self.show(pr, markdown, create=create, what="posted")

    def unchanged(self, pr: ChangeRequest, fingerprint: str) -> int:
        """A PR that leaves the agent exactly as the baseline measured it (docs, CI files,
        code the agent does not use): nothing is run, exit 0, and a comment an earlier push
        left is edited to say so (never created)."""
        reason = (f"Nothing under test changed: the agent (fingerprint {fingerprint[:16]}) is "
                  "the one the baseline measured, so this pull request cannot have made it "
                  "worse; nothing was run.")
        markdown = render_body("skipped.md.j2", unchanged=fingerprint, keyed=True,
                               gate_changed=False)
        if self.can_comment() and not self.defer(pr, "final", markdown, False):
            self.show(pr, markdown, create=False, what="marked as skipped")
        return self._skipped(pr, markdown, reason)

    def _skipped(self, pr: ChangeRequest, markdown: str, reason: str) -> int:
        ctx = self.ctx
        atomic_write_text(ctx.opts.report_path, markdown)
        ctx.io.summary(markdown)
        ctx.io.notice(reason, title="agent-gate: skipped")
        ctx.io.set_outputs({"verdict": "skipped", "exit_code": 0, "mode": "pr",
                            "pr_number": pr.number, "reason": reason, "comment_url": "",
                            "report_path": str(ctx.opts.report_path.resolve())})
        return 0

    def withheld(self, pr: ChangeRequest, unchanged: str | None, *,
                 gate_changed: bool = False, key: str, lacks: str) -> int:
        """A PR run GitHub gives no secrets (a fork, Dependabot): exit 3, or a skipped run
        that says why (exit 0) when nothing under test changed (``unchanged``: the agent's
        fingerprint, the baseline's) or ``[ci] fork_without_key = "skip"``. ``gate_changed``:
        only the builtin agent's own code differs (a bump of agent-gate's pin). ``key``: the
        upstream's credential variable, which GitHub withheld; ``lacks``: what the run lacks,
        in words (``Upstream.withheld_name``)."""
        from gate.errors import Unmeasurable

        ctx = self.ctx
        env = ctx.env
        who = f"the fork {env.fork_repo}" if env.fork_repo else env.actor
        dependabot = not env.fork_repo and env.actor == DEPENDABOT
        if unchanged is not None:
            reason = (f"Nothing under test changed: the agent (fingerprint {unchanged[:16]}) "
                      "is the one the baseline measured, so this pull request cannot have "
                      f"made it worse. GitHub gave this run no {lacks}, so nothing "
                      "was run.")
        elif gate_changed:
            reason = ("The gate's agent changed: this pull request runs another version of "
                      "agent-gate's builtin agent (its tool loop, tools or default prompt), a "
                      "new agent that must be measured, and GitHub gave this run no "
                      f"{lacks}: re-run it with a key (a Dependabot secret, or the "
                      "branch pushed to this repository). Once merged, main's refresh starts a "
                      "new baseline for it.")
        elif dependabot:  # its runs get Dependabot secrets: pushing the branch changes nothing
            reason = ("This pull request was opened by Dependabot: GitHub gives its runs only "
                      f"the repository's Dependabot secrets, so there is no {lacks} "
                      "and the suite cannot run against the model. To gate Dependabot's PRs, "
                      f"add {key} as a Dependabot secret too (Settings → Secrets "
                      "and variables → Dependabot); to let them through unmeasured, skip them "
                      "(`fork-without-key: skip`).")
        else:
            reason = (f"This pull request comes from {who}: GitHub gives such runs no secrets, "
                      f"so there is no {lacks} and the suite cannot run against the "
                      "model. A maintainer can run it by pushing the branch to this "
                      "repository; docs/github.md shows the safe two-workflow pattern for "
                      "fork PRs.")
        if unchanged is None and self.settings.fork_without_key == "fail":
            raise Unmeasurable(reason)
        markdown = render_body("skipped.md.j2", who=who, dependabot=dependabot,
                               unchanged=unchanged, keyed=False, gate_changed=gate_changed,
                               key=key, lacks=lacks)
        return self._skipped(pr, markdown, reason)


def resolution_outputs(comparison: Comparison) -> dict[str, str]:
    """What the comparison could have detected, as outputs: ``detectable`` true/false (empty
    when no task was compared) and ``resolution``, the plain sentence of the headline's."""
    res = comparison.resolution
    if res is None:
        return {"detectable": "", "resolution": ""}
    return {"detectable": str(res.detectable).lower(), "resolution": res.statement}
