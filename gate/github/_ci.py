"""``gate ci``: what one CI job does, by event.

- ``pr``: run the suite, judge it against the **base branch's** baseline, upsert one comment,
  write the step summary and outputs, exit by the verdict (a label can accept a regression).
- ``main``: run the suite, pool it into ``baseline.json``, append to the history, and commit
  both back or leave them for an artifact upload.
- ``check``: a run on another branch (manual dispatch): judged like a PR, without a comment.
- ``comment``: in a ``workflow_run`` job, post the report a fork PR's run uploaded.

The library is the product: the CLI and ``action.yml`` are thin shells over ``run_ci``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import re
import signal
import stat
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from markupsafe import Markup
from pydantic import ValidationError

from gate._files import (
    HISTORY_LIMIT,
    RESULTS_LIMIT,
    atomic_write_text,
    describe_validation_error,
    printable,
    read_text,
)
from gate.config import CISettings, GateConfig
from gate.errors import BadInput, GateError, Unmeasurable
from gate.github import _git, _skills
from gate.github._accept import acceptance
from gate.github._comment import (
    DEFAULT_COMMENT_ID,
    CommentRef,
    find_pr_for_run,
    pr_files,
    pr_labels,
    render_body,
    render_note,
    token_login,
)
from gate.github._env import CIEnvironment, PullRequestInfo
from gate.github._history import (
    HistoryEntry,
    entry_for,
    parse_history,
    trend_entries,
    trend_markdown,
)
from gate.github._modes import MODES
from gate.github._outputs import ActionsIO
from gate.github._refresh import (
    Outcome,
    Place,
    Refresh,
    State,
    data_paths,
    read_state,
    traces_path,
    write_files,
)
from gate.github._rest import GitHubClient, GitHubError
from gate.github._skills import ConditionPlan
from gate.github._sticky import PRComment, comment_mode, creates
from gate.report._escape import code_span, md
from gate.results import Results, RunResult, parse_results
from gate.run import RunRequest, run_suite, spend
from gate.secrets import Redactor
from gate.traces import (
    SIDECAR_LIMIT,
    Trace,
    landed_trace,
    parse_sidecar,
    pooled_sidecar,
    results_traces,
    transcripts_dir,
)

if TYPE_CHECKING:
    from gate.compare import Comparison
    from gate.yardstick import BaselineSource, Yardstick

Mode = Literal["auto", "pr", "main", "check", "comment"]

NO_KEY = ("ANTHROPIC_API_KEY is empty: add it as a repository secret and pass it to the action "
          "(`anthropic-api-key: ${{ secrets.ANTHROPIC_API_KEY }}`), or set `sim: true` to run "
          "against the built-in simulator")


@dataclass
class CIOverrides:
    """CLI/env values that override ``[ci]`` in gate.toml; None keeps the file's value."""

    comment: bool | None = None
    fail_on_regression: bool | None = None
    accept_label: str | None = None
    baseline_refresh: str | None = None
    data_branch: str | None = None
    history: str | None = None
    fork_without_key: str | None = None
    comment_author: str | None = None
    comment_id: str | None = None
    comment_mode: str | None = None

    def apply(self, base: CISettings) -> CISettings:
        update = {k: v for k, v in vars(self).items() if v is not None}
        try:
            return CISettings.model_validate({**base.model_dump(), **update})
        except ValidationError as exc:
            raise BadInput(f"gate ci: {describe_validation_error(exc)}") from None


@dataclass
class CIOptions:
    run: RunRequest
    mode: str = "auto"
    overrides: CIOverrides = field(default_factory=CIOverrides)
    report_path: Path = Path("gate-report.md")
    # the comment id when neither the input nor [ci] names one: from the config path
    default_comment_id: str = DEFAULT_COMMENT_ID
    # judge these stored results (a run's artifact) instead of running the suite
    rejudge: Path | None = None
    # a matrix's judge job: the directory of the shards' downloaded results, merged into
    # ``run.output`` and judged (pr/check) or pooled (main) instead of running the suite
    merge: Path | None = None
    # the HTML report of a judged run (gate/report/_html.py); None: none
    html_report: Path | None = None
    # the action's comment is posted by a later step, after the report's upload: the final
    # comment goes to a file (gate/github/_deferred.py) instead of to GitHub
    defer_comment: bool = False
    on_result: Callable[[RunResult], None] | None = None
    on_start: Callable[[Results, int], None] | None = None  # before the first run (its plan)
    log: Callable[[str], None] = field(default=lambda line: print(line, file=sys.stderr))


@dataclass
class _Judgement:
    """A run judged against a baseline: everything the report, outputs and exit need."""

    results: Results
    baseline: Results
    comparison: Comparison
    exit_code: int
    accepted: bool
    baseline_edited: bool
    notes: list[str]
    markdown: str
    # the traces kept next to the baseline (the sidecar's text), for the HTML report's
    # baseline runs that have no transcript here; None: none (or a same-job A/B's own runs)
    baseline_traces: str | None = None


class _CI:
    """One ``gate ci`` invocation. Holds the context every mode shares."""

    def __init__(self, opts: CIOptions, env: CIEnvironment, io: ActionsIO | None) -> None:
        if opts.rejudge is not None:  # the results judged are the stored ones
            opts.run = dataclasses.replace(opts.run, output=opts.rejudge)
        self.opts = opts
        self.env = env
        self.cfg: GateConfig = opts.run.config
        self.settings = opts.overrides.apply(self.cfg.ci)
        self.redact = Redactor(env.secrets)
        self.io = io or ActionsIO(env.output, env.step_summary, redact=self.redact)
        self._client: GitHubClient | None = None
        self._author: str | None = None
        self._comment: PRComment | None = None
        self.merged: Results | None = None  # the shards' results, merged (opts.merge)
        self.base_arm: Path | None = None  # a same-job A/B's base arm results file
        self.pending: Path | None = None  # the deferred comment's file, once written
        self.report_outputs: dict[str, object] = {}  # the HTML report's, once written
        self.ab_base_path: Path | None = None  # a same-job A/B's base arm results
        # each run's trace, read from its transcript as it lands (gate/traces.py): the
        # comment's evidence; nothing of the checkout is read once the suite is over
        self.landed: dict[tuple[object, ...], Trace] = {}
        self._on_result = opts.on_result
        opts.on_result = self.land

    # ----- shared pieces -------------------------------------------------------------------

    @property
    def client(self) -> GitHubClient:
        if self._client is None:
            if not self.env.repository:
                raise BadInput("GITHUB_REPOSITORY is not set: gate ci talks to GitHub only "
                               "inside Actions (locally: `gate run` and `gate compare`)")
            token = self.env.token.get_secret_value() if self.env.token else None
            if not token:
                raise BadInput("no GitHub token: pass `github-token` to the action (default "
                               "`${{ github.token }}`) or set GITHUB_TOKEN; or --no-comment")
            self._client = GitHubClient(self.env.api_url, self.env.repository, token)
        return self._client

    def land(self, run: RunResult) -> None:
        trace = landed_trace(run, redact=self.redact)
        if trace is not None:
            self.landed[_trace_key(run)] = trace
        if self._on_result is not None:
            self._on_result(run)

    def traces(self, results: Results, path: Path) -> list[Trace]:
        """The traces of ``results``' runs: as they landed in this job, else (stored results,
        re-judged or merged: no suite ran here) from the transcripts beside ``path``."""
        if any(_trace_key(r) in self.landed for r in results.runs):
            return [self.landed[k] for r in results.runs
                    if (k := _trace_key(r)) in self.landed]
        return results_traces(results, path, redact=self.redact)

    def log(self, line: str) -> None:
        self.opts.log(self.redact(line))

    @property
    def agent_kind(self) -> str:
        return self.opts.run.agent_kind or self.cfg.agent.kind

    @property
    def needs_key(self) -> bool:
        from gate.agents import agent_kind

        return agent_kind(self.agent_kind).uses_model and not getattr(self.opts.run, "sim", False)

    def mode(self) -> str:
        mode = self.opts.mode
        if mode != "auto":
            return mode
        event = self.env.event_name
        if event == "pull_request":
            return "pr"
        if event == "pull_request_target":
            raise BadInput("gate ci refuses pull_request_target: it would run the PR's code "
                           "with the base repository's secrets and write token. Use "
                           "`pull_request` (plus the two-workflow pattern in docs/github.md for "
                           "fork PRs)")
        if event == "workflow_run":
            return "comment"
        if event in ("push", "workflow_dispatch", "schedule", "merge_group"):
            branch = self.env.branch
            default = self.env.default_branch or "main"
            return "main" if branch == default and event != "merge_group" else "check"
        if not event:
            raise BadInput("gate ci runs inside GitHub Actions (GITHUB_EVENT_NAME is not set): "
                           "locally use `gate run` and `gate compare`, or pass --mode")
        raise BadInput(f"gate ci does not know what to do on a {event!r} event: pass --mode "
                       "pr, main or check")

    def run_request(self) -> RunRequest:
        """The run as configured, checked for a key, seeded per CI run under the simulator."""
        if self.needs_key and self.env.anthropic_api_key is None:
            raise Unmeasurable(NO_KEY)
        req = self.opts.run
        if req.sim and req.seed is None and self.env.run_id.isdigit():
            # Each CI run is a fresh sample, as with a real model: repeated refreshes of main
            # must not pool identical copies of one simulated run into the baseline.
            req = dataclasses.replace(req, seed=int(self.env.run_id) % 2**31)
        self.log(f"gate ci: running the suite ({self.agent_kind} agent"
                 + (f", simulator seed {req.seed or 0}" if req.sim else "") + ")")
        return req

    def run_suite(self) -> Results:
        return run_suite(self.run_request(), on_result=self.opts.on_result,
                         on_start=self.opts.on_start)

    def repo_root(self) -> Path:
        return _git.toplevel(self.cfg.root)

    def base_trend(self, ys: Yardstick) -> list[dict[str, Any]] | None:
        """Main's recent runs from the base branch's history file, for the comment's chart."""
        text = ys.history_text
        return [e.model_dump() for e in trend_entries(parse_history(text))] if text else None

    def outputs_for(self, results: Results | None) -> dict[str, object]:
        from gate.compare._judge import plain_runs

        # the suite's runs: a skill condition's runs are the skill-effect check's
        s = plain_runs(results).summary if results else None
        return {
            "pass_rate": _num(s.pass_rate if s else None),
            "passed": s.passed if s else "",
            "total": s.total if s else "",
            "errors": s.errors if s else "",
            "mean_turns": _num(s.mean_turns if s else None),
            "cost_usd": _num(s.cost_usd if s else None),
            "cache_hit_rate": _num(s.cache_hit_rate if s else None),
            "model": results.model if results else "",
            "results_path": str(self.opts.run.output.resolve()) if results else "",
        }

    # ----- pr / check ----------------------------------------------------------------------

    @contextlib.contextmanager
    def yardstick(self, base_branch: str) -> Iterator[Yardstick]:
        """From here on, everything that measures is ``base_branch``'s: the tasks, [suite],
        [gate], [ci], the baseline and the history. Only [agent] is the checkout's."""
        from gate.report._render import preload_templates
        from gate.yardstick import open_yardstick

        preload_templates()  # nothing that tells the verdict is read after the suite
        import numpy.random  # noqa: F401  (numpy loads it on first use: the judge's draws)

        import gate.evidence  # noqa: F401  (nor imported: the comment's evidence)
        from gate.report import _html

        _html.preload()  # the HTML report is written after the suite too
        root = self.repo_root()
        token = self.env.token.get_secret_value() if self.env.token else None
        base_ref = _git.ensure_base_ref(root, base_branch, token=token,
                                        server_url=self.env.server_url)
        from gate.ab import GATE_IS_NEW, config_rel, gate_is_new

        if gate_is_new(self.opts.run.config, root=root, ref=base_ref):
            raise Unmeasurable(GATE_IS_NEW.format(config=config_rel(self.opts.run.config, root),
                                                  label=base_branch))
        with open_yardstick(self.opts.run.config, root=root, ref=base_ref, label=base_branch,
                            tasks_override=self.opts.run.tasks_dir,
                            sources=self.baseline_sources(root, base_branch, base_ref)) as ys:
            self.cfg = ys.config
            self.settings = self.opts.overrides.apply(ys.config.ci)
            self.opts.run = dataclasses.replace(self.opts.run, config=ys.config,
                                                tasks_dir=ys.tasks_dir)
            yield ys

    def baseline_sources(self, root: Path, base_branch: str, base_ref: str
                         ) -> Callable[[GateConfig], Iterator[BaselineSource]]:
        """Where the base branch's baseline is looked for, in order: the data branch (when the
        base's [ci] keeps it there), the base branch's own copy, then the same two for the
        default branch (a PR into a branch that has no baseline of its own). Fetched lazily."""
        from gate.yardstick import BaselineSource

        token = self.env.token.get_secret_value() if self.env.token else None
        default = self.env.default_branch

        def sources(joined: GateConfig) -> Iterator[BaselineSource]:
            settings = self.opts.overrides.apply(joined.ci)
            data = settings.data_branch
            data_ref: str | None = None
            if settings.baseline_refresh == "branch":
                if _git.fetch_branch(root, data, token=token, server_url=self.env.server_url):
                    data_ref = _git.remote_ref(data)
                else:
                    self.log(f"gate ci: the data branch {data} does not exist yet")
            branches = [base_branch] + ([default] if default and default != base_branch
                                        else [])
            for branch in branches:
                fallback = (f"{_code(base_branch)} has no baseline of its own: this PR is "
                            f"judged against {_code(branch)}'s (the default branch)."
                            if branch != base_branch else None)
                if data_ref:
                    yield BaselineSource(data_ref, data_paths(branch, ""),
                                         f"{data} ({data_paths(branch, '')})", fallback)
                try:
                    ref = base_ref if branch == base_branch else _git.ensure_base_ref(
                        root, branch, token=token, server_url=self.env.server_url)
                except BadInput as exc:
                    self.io.warning(f"no fallback baseline from {branch}: {exc}")
                    continue
                note = fallback
                if data_ref and branch == base_branch:
                    note = (f"The data branch {_code(data)} has no baseline for "
                            f"{_code(branch)} yet: judged against the copy committed on "
                            f"{_code(branch)}.")
                yield BaselineSource(ref, "", branch, note)

        return sources

    def assess(self, ys: Yardstick, pr: PullRequestInfo | None) -> _Judgement:
        """Run the suite and compare it with the base branch's baseline, or (``[ci] judge``,
        or no baseline anywhere) with the base commit's agent run in this job."""
        from gate.compare import judge

        root = self.repo_root()
        base_ref, base_branch = ys.ref, ys.label
        rel, text = ys.baseline_rel, ys.baseline_text
        how = self.settings.judge
        edited = pr is not None and self.pr_edits(root, base_ref, rel, pr)
        notes: list[str] = []
        if edited:
            notes.append(render_note("baseline_edited", path=_code(rel),
                                     branch=_code(base_branch)))
        if how == "ab" or (how == "auto" and text is None):
            forced = _code('[ci] judge = "ab"')
            why = (Markup(f"{forced} on {_code(base_branch)}")
                   if how == "ab" else Markup(
                       f"no baseline for {_code(base_branch)} anywhere (the data branch, the "
                       "branch itself, the default branch): the first one comes from the "
                       f"refresh on a push to {_code(base_branch)}"))
            baseline, results, mode = self.assess_ab(ys, why)
            if self.opts.rejudge is not None:
                notes.append(render_note("rejudged", path=_code(self.opts.rejudge.name)))
            comparison = judge(baseline, results, self.cfg.gate)  # same job: no drift guard
            return self.finish(ys, pr, baseline, results, comparison, notes, edited, mode)
        if text is None:
            raise Unmeasurable(
                f"no {rel} on the base branch {base_branch}: the gate has nothing to compare "
                f"with. Refresh it on {base_branch} first (this action on a push to "
                f"{base_branch}, with baseline-refresh: commit or branch), or commit one made "
                "by `gate run` + `gate baseline`; or set [ci] judge = \"auto\" on "
                f"{base_branch} to judge PRs by a same-job A/B until then")
        baseline = parse_results(text.encode(), f"{rel} on {ys.baseline_from}", "baseline")
        notes[:0] = ys.baseline_notes(baseline, stale_after_days=self.settings.stale_after_days)
        # which skill conditions this PR adds: decided (git, task metadata) before any agent
        # runs, like everything else the verdict depends on
        plan = (self.pr_plan(ys, pr, baseline)
                if self.merged is None and self.opts.rejudge is None else None)
        if self.merged is not None:
            results = self.merged
            notes.append(render_note("merged", count=_merged_count(results)))
        elif self.opts.rejudge is not None:
            results = self.stored_results(self.opts.rejudge)
            notes.append(render_note("rejudged", path=_code(self.opts.rejudge.name)))
        elif self.cfg.gate.sequential:
            from gate.sequential import run_sequential

            # the looks are recorded in the results file: the judge applies α/2 from there
            results = run_sequential(self.run_request(), baseline, self.cfg.gate,
                                     self.opts.on_result, self.opts.on_start).results
        else:
            results = self.run_suite()
        if self.merged is None and self.opts.rejudge is None:
            self.check_budget(results)
            results = self.with_conditions(results, plan)
            if (budget := budget_note(results)) is not None:
                notes.append(budget)
        comparison = judge(baseline, results, self.cfg.gate,
                           parse_history(ys.history_text or ""))
        return self.finish(ys, pr, baseline, results, comparison, notes, edited, None)

    # ----- skill conditions (gate/github/_skills.py) ---------------------------------------

    def pr_plan(self, ys: Yardstick, pr: PullRequestInfo | None, baseline: Results
                ) -> ConditionPlan | None:
        """The conditions this PR runs besides the suite: it touches a skill."""
        root = self.repo_root()
        rel = _skills.skills_rel(self.cfg, root)
        if rel is None:
            return None
        files = _git.pr_changed_files(root, ys.ref, rel)
        if files is None and pr is not None:  # a shallow checkout: GitHub knows the files
            try:
                files = pr_files(self.client, pr.number)
            except GateError as exc:
                self.io.warning(f"cannot tell whether this PR changes a skill: {exc}")
        changed = _skills.changed_skills(files or [], rel)
        if not changed:
            return None
        plan = _skills.pr_plan(self.cfg, self.opts.run.tasks_dir or self.cfg.path(
            self.cfg.suite.tasks), changed, baseline)
        if plan is None:
            self.log(f"gate ci: the PR changes the skill(s) {', '.join(changed)}, but no task "
                     "names one as its target_skill: no skill conditions to run")
        return plan

    def with_conditions(self, results: Results, plan: ConditionPlan | None) -> Results:
        """``results`` with the plan's condition runs joined in (written to the results
        file: the artifact holds what was judged or pooled)."""
        from gate.results import write_results

        if plan is None:
            return results
        self.log(f"gate ci: skill conditions {', '.join(plan.conditions)} on "
                 f"{len(plan.tasks)} task(s) ({', '.join(plan.tasks)}): {plan.why}")
        req = _skills.condition_request(self.run_request(), plan)
        if req.max_cost is not None:  # one budget for the job: what the suite left of it
            req = dataclasses.replace(req, max_cost=max(0.0, req.max_cost - spent(results)))
        conditions = run_suite(req, on_result=self.opts.on_result)
        self.check_budget(conditions, "the skill conditions' run")
        joined = _skills.joined(results, conditions)
        if self.opts.run.max_cost is not None:
            # the job's budget as a whole, in the results (and the comment's note)
            joined.budget = {  # type: ignore[attr-defined]
                **((results.model_extra or {}).get("budget") or {}),
                "max_cost_usd": self.opts.run.max_cost,
                "spent_usd": round(spent(joined), 6)}
        write_results(self.opts.run.output, joined)
        return joined

    def check_budget(self, results: Results, what: str = "the suite's run") -> None:
        """A run the budget stopped is a partial sample: not judged, never pooled (exit 3)."""
        stop = results.interrupted
        if stop is not None and stop.reason.startswith("budget"):
            raise Unmeasurable(f"{what} was stopped by the budget with {len(stop.missing)} "
                               f"planned run(s) not started ({printable(stop.reason)}): a "
                               "partial run is not judged and refreshes nothing; raise "
                               "max-cost, or run fewer replications or tasks")

    def assess_ab(self, ys: Yardstick, why: Markup) -> tuple[Results, Results, Markup]:
        """The two arms of a same-job A/B (gate/ab.py): the base commit's agent and this
        checkout's, run here interleaved (or, on a re-judge, the stored pair); and the
        comment's line saying so, with what it cost."""
        from gate.ab import ABRun, base_arm_config, base_output, describe, resolve_commit, run_ab

        root = self.repo_root()
        if self.opts.rejudge is not None:
            base_path = base_output(self.opts.rejudge)
            base = self.stored_results(base_path)
            pair = ABRun(base, self.stored_results(self.opts.rejudge), base_path,
                         self.opts.rejudge, base.commit)
            self.base_arm = base_path
        else:
            commit = resolve_commit(root, ys.ref)
            self.log(f"gate ci: judged by a same-job A/B against {ys.label} "
                     f"({(commit or '?')[:7]})'s agent: {why.striptags()}")
            if self.cfg.gate.sequential:
                self.log("gate ci: [gate] sequential does not apply to a same-job A/B: every "
                         "replication runs in both arms")
            req = self.run_request()
            with base_arm_config(ys.config, root=root, ref=ys.ref, label=ys.label) as base_cfg:
                pair = run_ab(req, base_cfg, base_commit=commit, on_result=self.opts.on_result)
            self.base_arm = base_output(req.output)
        self.log(f"gate ci: {describe(pair, markdown=False)}")
        self.ab_base_path = pair.base_path  # its transcripts are the baseline's evidence
        mode = Markup(f"{describe(pair, markdown=True)}: {why}. Both arms ran on "
                      f"{_code(ys.label)}'s tasks and settings, interleaved run by run, "
                      "so provider drift cannot tell them apart.")
        return pair.base, pair.pr, mode

    def finish(self, ys: Yardstick, pr: PullRequestInfo | None, baseline: Results,
               results: Results, comparison: Comparison, notes: list[str], edited: bool,
               mode: Markup | None) -> _Judgement:
        """The verdict's policy on a PR (the accept label, fail-on-regression) and its report."""
        from gate.report import render_markdown

        labels = self.labels(pr) if pr is not None else []
        verdict = comparison.verdict
        code = int(comparison.exit_code)
        label = self.settings.accept_label
        accepted = verdict == "regression" and pr is not None and \
            self.accepted_by(pr, labels, notes) is not None
        if accepted:
            code = 0
        elif verdict == "regression" and not self.settings.fail_on_regression:
            notes.append(render_note("not_failing"))
            code = 0
        elif verdict == "regression" and label and pr is not None:
            notes.append(render_note("how_to_accept", label=_code(label)))
        trend = self.base_trend(ys)
        ys.validate_changed_tasks()
        for line in ys.lines(markdown=False):
            self.log(f"gate ci: yardstick: {line}")
        shown = comparison
        if pr is not None and pr.head_sha:
            # the PR's head commit, as its author knows it: not the merge commit under test,
            # which a pull_request run checks out (refs/pull/N/merge) and no one has seen
            shown = comparison.model_copy(update={
                "candidate": comparison.candidate.model_copy(update={"commit": pr.head_sha})})
        markdown = render_markdown(shown, run_url=self.env.run_url, notes=tuple(notes),
                                   trend=trend, yardstick=ys.note(), mode=mode,
                                   evidence=self.evidence(ys, comparison, baseline, results))
        return _Judgement(results, baseline, comparison, code, accepted, edited, notes,
                          self.redact(markdown),
                          ys.traces_text if self.ab_base_path is None else None)

    def evidence(self, ys: Yardstick, comparison: Comparison, baseline: Results,
                 results: Results) -> Markup | None:
        """What the runs did (gate/evidence.py): this run's transcripts beside the traces kept
        next to the baseline (or, in a same-job A/B, the base arm's own transcripts). It
        explains the verdict and never changes it: a problem here leaves it out."""
        from gate import evidence

        try:
            mine = self.traces(results, self.opts.run.output)
            theirs: list[Trace] | None = None
            missing = None
            if self.ab_base_path is not None:
                theirs = self.traces(baseline, self.ab_base_path)
            elif ys.traces_text is not None:
                theirs = parse_sidecar(ys.traces_text)
            else:
                missing = ("No traces are kept next to this baseline yet (main's refresh keeps "
                           "them from this version of the gate on): only this PR's runs are "
                           "shown.")
            return evidence.render(evidence.build(comparison, results, baseline, mine, theirs,
                                                  base_missing=missing))
        except (GateError, OSError, ValueError) as exc:
            self.io.warning(f"the comment's evidence was left out: {exc}")
            return None

    def stored_results(self, path: Path) -> Results:
        """A finished run's results, judged again without a new suite run."""
        from gate.results import load_results

        if not path.is_file():
            raise BadInput(f"{path}: no results to re-judge (download the artifact of the run "
                           "that wrote them first)")
        results = load_results(path)
        if results.interrupted is not None:
            raise Unmeasurable(f"{path}: {results.interruption_note() or 'interrupted'}: an "
                               "incomplete run is not judged")
        self.log(f"gate ci: re-judging {path} ({len(results.runs)} runs); no suite run")
        return results

    def pr_edits(self, root: Path, base_ref: str, rel: str, pr: PullRequestInfo) -> bool:
        changed = _git.pr_changes_file(root, base_ref, rel)
        if changed is not None:
            return changed
        # a shallow checkout has no merge base: GitHub knows the PR's files
        try:
            return rel in pr_files(self.client, pr.number)
        except GateError as exc:
            self.io.warning(f"cannot tell whether this PR edits {rel}: {exc}")
            return False

    def labels(self, pr: PullRequestInfo) -> list[str]:
        """Live labels (a re-run after labelling has a stale payload); the payload's as a
        fallback when the API cannot be asked."""
        if self.env.token is None:
            return list(pr.labels)
        try:
            return pr_labels(self.client, pr.number)
        except GateError as exc:
            self.io.warning(f"cannot read the PR's labels, using the event's: {exc}")
            return list(pr.labels)

    def accepted_by(self, pr: PullRequestInfo, labels: list[str], notes: list[str]
                    ) -> str | None:
        """Who accepted this regression with the accept label, or None (gate/github/_accept.py);
        the label's note goes into ``notes``."""
        result = acceptance(self.client, pr.number, self.settings.accept_label, labels)
        if result.note:
            notes.append(result.note)
        if result.warning:
            self.io.warning(self.redact(result.warning), title="agent-gate")
        if result.log:
            self.log(f"gate ci: {result.log}")
        return result.who

    def comment_author(self) -> str:
        """The login whose marker comment is the gate's (found once per run)."""
        if self._author is None:
            login, how = token_login(self.client, self.settings.comment_author)
            self.log(f"gate ci: the gate's comment is the one {login} wrote ({how})")
            self._author = login
        return self._author

    def comment_failure(self, exc: GateError) -> str:
        """Why the comment could not be written, naming the likely cause."""
        text = str(exc)
        if isinstance(exc, GitHubError) and exc.status == 403 and \
                self.env.actor == "dependabot[bot]":
            text = ("this PR was opened by Dependabot, whose runs get a read-only token unless "
                    f"the workflow's `permissions:` grant more; {text}")
        return self.redact(text)

    def write_html(self, j: _Judgement) -> dict[str, object]:
        """The judged run's HTML report and what the action uploads with it (its outputs).
        Whatever goes wrong here is a warning: the report never changes the verdict."""
        return self.write_html_of(j.results, j.baseline, j.comparison, j.baseline_traces)

    def write_html_of(self, results: Results, baseline: Results | None,
                      comparison: Comparison | None,
                      baseline_traces: str | None) -> dict[str, object]:
        path = self.opts.html_report
        if path is None:
            return {}
        try:
            from gate.report._html import render_html

            results_path = self.opts.run.output
            page = render_html(results, results_path=results_path, baseline=baseline,
                               baseline_path=self.base_arm, comparison=comparison,
                               level=self.cfg.gate.ci_level, seed=self.cfg.gate.seed,
                               run_url=self.env.run_url,
                               baseline_traces=parse_sidecar(baseline_traces)
                               if baseline_traces is not None else None)
            atomic_write_text(path, self.redact(page))
        except Exception as exc:  # any failure, a bug too: it must not cost the verdict
            self.io.warning(f"the HTML report was not written (the verdict stands): "
                            f"{type(exc).__name__}: {exc}", title="agent-gate")
            return {}
        from gate.report._html import transcript_dir

        files = [path, self.opts.report_path]
        for results_file in (results_path, self.base_arm):
            if results_file is not None and results_file.is_file():
                files += [results_file, transcript_dir(results_file)]
        self.log(f"gate ci: wrote the HTML report {path}")
        self.report_outputs = {
            "html_report_path": str(path.resolve()),
            "report_artifact": self.report_artifact,
            "report_files": "\n".join(str(f.resolve()) for f in files if f.exists()),
        }
        return self.report_outputs

    @property
    def report_artifact(self) -> str:
        """The report's artifact name: one per suite (its comment id), as a matrix over
        models uploads one each within a run."""
        if self.comment_id == DEFAULT_COMMENT_ID:
            return "agent-gate-report"
        return "agent-gate-report-" + (re.sub(r"[^A-Za-z0-9._-]+", "-", self.comment_id)
                                       .strip("-.") or "suite")

    def report(self, j: _Judgement, *, extra: dict[str, object]) -> None:
        verdict = str(j.comparison.verdict)
        headline = self.redact(str(j.comparison.headline))
        atomic_write_text(self.opts.report_path, j.markdown)
        self.io.summary(j.markdown)
        self.io.set_outputs({
            **self.write_html(j),
            "verdict": verdict, "exit_code": j.exit_code, "headline": headline,
            "accepted": str(j.accepted).lower(),
            "baseline_pass_rate": _num(j.baseline.summary.pass_rate),
            **self.outputs_for(j.results),
            "report_path": str(self.opts.report_path.resolve()),
            **extra,
        })
        if verdict == "regression":
            if j.exit_code == 0:
                self.io.warning(headline, title="agent-gate: regression (not blocking)")
            else:
                self.io.error(headline, title="agent-gate: regression")
        elif verdict == "inconclusive":
            self.io.error(headline, title="agent-gate: inconclusive")
        else:
            self.io.notice(headline, title="agent-gate")

    def pr(self) -> int:
        pr = self.env.pull_request
        if pr is None:
            raise BadInput("--mode pr needs a pull_request event (GITHUB_EVENT_PATH with a "
                           "pull_request payload)")
        if not pr.base_ref:
            raise BadInput("the pull_request event names no base branch")
        with self.yardstick(pr.base_ref) as ys:
            stored = self.opts.rejudge is not None or self.merged is not None
            if (self.needs_key and self.env.anthropic_api_key is None
                    and self.env.secrets_withheld and not stored):
                return self.withheld(pr)
            if not stored:
                self.announce_running(pr)
            try:
                j = self.assess(ys, pr)
            except KeyboardInterrupt:  # the job cancelled (SIGTERM/SIGINT) during the suite
                self.announce_cancelled(pr)
                raise
        extra: dict[str, object] = {
            "mode": "pr", "pr_number": pr.number,
            "baseline_edited": str(j.baseline_edited).lower(),
        }
        self.report(j, extra=extra)
        self.post_comment(pr, j.markdown, j.comparison)
        self.log(f"gate ci: {j.comparison.headline} (exit {j.exit_code})")
        return j.exit_code

    def check(self) -> int:
        with self.yardstick(self.env.default_branch or "main") as ys:
            j = self.assess(ys, None)
        self.report(j, extra={"mode": "check"})
        if self.opts.rejudge is not None:
            self.comment_on_branch_pr(j)
        return j.exit_code

    def comment_on_branch_pr(self, j: _Judgement) -> None:
        """A re-judge dispatched on a PR's branch shows its verdict on that PR (the open PR
        whose head is this commit), by the comment mode like a PR run."""
        branch = self.env.branch
        if not (branch and self.env.sha and self.env.token is not None and self.env.repository):
            return
        try:
            number = find_pr_for_run(self.client, self.env.repository, branch, self.env.sha)
        except GateError as exc:
            self.io.warning(f"cannot find the pull request of {branch}: {exc}")
            return
        if number is None:
            self.log(f"gate ci: no open pull request has {self.env.sha[:7]} as its head; "
                     "no comment")
            return
        pr = PullRequestInfo(number=number, base_ref=self.env.default_branch or "main",
                             head_ref=branch, head_sha=self.env.sha)
        self.io.set_outputs({"pr_number": number})
        self.post_comment(pr, j.markdown, j.comparison)

    # ----- this suite's PR comment (gate/github/_sticky.py) --------------------------------

    @property
    def comment_id(self) -> str:
        return self.settings.comment_id or self.opts.default_comment_id

    def pr_comment(self, number: int) -> PRComment:
        if self._comment is None or self._comment.number != number:
            self._comment = PRComment(
                client=lambda: self.client, author=self.comment_author, number=number,
                comment_id=self.comment_id, mode=comment_mode(self.settings))
        return self._comment

    def can_comment(self) -> bool:
        """Whether this run may write the PR comment at all (the mode, a fork's read-only
        token, a token to write with)."""
        return (comment_mode(self.settings) != "never" and not self.env.fork_repo
                and self.env.token is not None)

    def defer(self, pr: PullRequestInfo, state: str, markdown: str | None = None,
              create: bool = False) -> bool:
        """With ``defer_comment``: leave the comment for the action's posting step (after the
        report's upload). False when not deferring, or when the file cannot be written (the
        caller then posts itself)."""
        if not self.opts.defer_comment:
            return False
        from gate.github._deferred import PendingComment, pending_path, write_pending

        html = self.report_outputs.get("html_report_path")
        try:
            self.pending = self.pending or pending_path()
            write_pending(self.pending, PendingComment.model_validate({
                "pr": pr.number, "comment_id": self.comment_id,
                "mode": comment_mode(self.settings),
                "comment_author": self.settings.comment_author, "state": state,
                "body": self.redact(markdown) if markdown is not None else None,
                "create": create,
                "artifact": self.report_artifact if html else "",
                "html_name": Path(str(html)).name if html else ""}))
        except (OSError, ValidationError) as exc:
            self.io.warning(f"the PR comment is posted now, not after the report's upload: "
                            f"{exc}", title="agent-gate")
            return False
        self.io.set_outputs({"comment_pending": str(self.pending)})
        return True

    def show(self, pr: PullRequestInfo, markdown: str, *, create: bool, what: str,
             quiet: bool = False) -> CommentRef | None:
        """Put ``markdown`` in this suite's comment; a failure is a warning (``quiet``: a log
        line, when the verdict's own post will warn of the same cause), never a verdict."""
        try:
            ref = self.pr_comment(pr.number).post(self.redact(markdown), create=create)
        except GateError as exc:
            message = (f"the PR comment was not {what} (the verdict stands): "
                       f"{self.comment_failure(exc)}")
            if quiet:
                self.log(f"gate ci: {message}")
            else:
                self.io.warning(message, title="agent-gate")
            return None
        if ref is not None:
            self.log(f"gate ci: {'created' if ref.created else 'updated'} the PR comment "
                     f"{ref.url} ({what}; comment id {self.comment_id})")
        return ref

    def head(self, pr: PullRequestInfo) -> Markup:
        return code_span((pr.head_sha or self.env.sha or "HEAD")[:7])

    def announce_running(self, pr: PullRequestInfo) -> None:
        """Before the suite: an existing comment stops showing the last verdict as current.
        Only ``always`` creates a comment for this."""
        if not self.can_comment():
            return
        from gate.report._render import _url

        # first: a step that dies from here on still has its "running" comment corrected
        self.defer(pr, "running")
        self.show(pr, render_body("running.md.j2", sha=self.head(pr),
                                  run_url=_url(self.env.run_url)),
                  create=comment_mode(self.settings) == "always", what="marked as running",
                  quiet=True)

    def announce_cancelled(self, pr: PullRequestInfo) -> None:
        """The run was stopped during the suite: the comment (if any) says so. A second
        signal while this is written is ignored: the runner escalates to SIGKILL anyway."""
        if not self.can_comment():
            return
        from gate.report._render import _url

        self.log("gate ci: cancelled during the suite")
        previous = {sig: signal.signal(sig, signal.SIG_IGN)
                    for sig in (signal.SIGINT, signal.SIGTERM)}
        try:
            self.show(pr, render_body("cancelled.md.j2", sha=self.head(pr),
                                      run_url=_url(self.env.run_url)),
                      create=False, what="marked as cancelled")
            self.defer(pr, "cancelled")
            self.io.set_outputs({"verdict": "cancelled", "mode": "pr"})
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)

    def post_comment(self, pr: PullRequestInfo, markdown: str, comparison: Comparison) -> None:
        if comment_mode(self.settings) == "never":
            self.io.set_outputs({"comment_url": "", "comment_id": ""})
            return
        if self.env.fork_repo:
            self.io.notice(
                "no PR comment: the token of a pull request from a fork is read-only. The "
                f"report is in the step summary and in {self.opts.report_path}; docs/github.md "
                "shows the two-workflow pattern that comments on fork PRs.")
            self.io.set_outputs({"comment_url": "", "comment_id": ""})
            return
        create = creates(comment_mode(self.settings), comparison)
        if self.defer(pr, "final", markdown, create):
            self.log("gate ci: the PR comment is posted after the report's upload")
            return
        ref = self.show(pr, markdown, create=create, what="posted")
        if ref is None and create is False:
            self.log(f"gate ci: no PR comment (comment-mode {comment_mode(self.settings)}: "
                     "nothing to report, and no earlier comment to update)")
        self.io.set_outputs({"comment_url": ref.url if ref else "",
                             "comment_id": ref.id if ref else ""})

    def withheld(self, pr: PullRequestInfo) -> int:
        who = f"the fork {self.env.fork_repo}" if self.env.fork_repo else self.env.actor
        reason = (f"This pull request comes from {who}: GitHub gives such runs no secrets, so "
                  "there is no ANTHROPIC_API_KEY and the suite cannot run against the model. "
                  "A maintainer can run it by pushing the branch to this repository; "
                  "docs/github.md shows the safe two-workflow pattern for fork PRs.")
        if self.settings.fork_without_key == "fail":
            raise Unmeasurable(reason)
        markdown = render_body("skipped.md.j2", who=who)
        atomic_write_text(self.opts.report_path, markdown)
        self.io.summary(markdown)
        self.io.notice(reason, title="agent-gate: skipped")
        self.io.set_outputs({"verdict": "skipped", "exit_code": 0, "mode": "pr",
                             "pr_number": pr.number, "reason": reason, "comment_url": "",
                             "report_path": str(self.opts.report_path.resolve())})
        return 0

    # ----- main ----------------------------------------------------------------------------

    def main(self) -> int:
        """Pool this run into the baseline and the history, and put them where they live."""
        if self.env.pull_request is not None:
            raise BadInput("--mode main on a pull request would let the PR refresh the "
                           "baseline it is judged by: use mode pr (or auto)")
        branch = self.env.branch
        how = self.settings.baseline_refresh
        if how != "artifact" and not branch:
            raise BadInput(f"baseline-refresh {how} needs a run on a branch (GITHUB_REF="
                           f"refs/heads/…), not {self.env.ref or 'no ref'}")
        root = self.repo_root()
        baseline_path = self.cfg.path(self.cfg.gate.baseline)
        history_path = self.cfg.path(self.settings.history)
        place = self.refresh_place(root, baseline_path, history_path) if branch else None
        git_state = _git.config_state(root) if place else ""
        start = self.refresh_start(root, place, baseline_path, history_path)
        if self.merged is not None:
            results = self.merged
        else:
            suite = self.run_suite()
            self.check_budget(suite)
            results = self.with_conditions(suite, self.refresh_plan(start))
        s = results.summary
        if s.total == 0:
            raise Unmeasurable("every run of this refresh was an infra error: the baseline was "
                               "not refreshed")
        infra = s.errors / (s.total + s.errors)
        if infra > self.cfg.gate.max_infra_rate:
            raise Unmeasurable(f"{infra:.0%} of this refresh's runs were infra errors (limit "
                               f"{self.cfg.gate.max_infra_rate:.0%}): the baseline was not "
                               "refreshed")
        verdict, markdown, checked = self.self_check(start.baseline_text, results)
        # the report of main's run, against the baseline it replaces (the self-check's), for
        # the action to upload as on a PR; a report error is a warning
        html = self.write_html_of(results, checked[0] if checked else None,
                                  checked[1] if checked else None, start.traces_text)
        from gate.compare._judge import plain_runs

        entry = entry_for(plain_runs(results), verdict=verdict, run_url=self.env.run_url)
        # stamped with the refresh pooling gives their runs (the sidecar drops tool output)
        traces = [t.model_copy(update={"refresh": t.refresh or results.created_at})
                  for t in self.traces(results, self.opts.run.output)]
        outputs: dict[str, object] = {
            "mode": "main", "exit_code": 0, **self.outputs_for(results),
            "baseline_path": str(baseline_path.resolve()),
            "history_path": str(history_path.resolve()),
            "traces_path": str(traces_path(baseline_path).resolve()),
            **html,
        }
        # an upload step (`if: !cancelled()`) finds the files even when the push fails below
        self.io.set_outputs(outputs)
        if place is None:
            outcome = self.refresh_files(results, start, entry, baseline_path, history_path,
                                         traces)
        else:
            outcome = self.refresh_push(root, place, results, start, entry, git_state,
                                        baseline_path, history_path, traces)
        self.log(f"gate ci: {outcome.message}")
        for line in outcome.lines:
            if outcome.status in ("superseded", "artifact"):
                self.io.warning(line, title="agent-gate: baseline not pushed")
            else:
                self.io.notice(line, title="agent-gate")
        committed = outcome.commit
        if place is not None and outcome.status == "committed":
            self.log(f"gate ci: pushed the refreshed baseline to {place.name} ({committed[:7]})")
        elif outcome.status == "unchanged":
            self.log("gate ci: the baseline did not change; nothing to commit")
        trend = trend_markdown(outcome.entries)
        self.io.summary(self.redact(render_body(
            "refresh.md.j2", where=Markup(_code(branch or self.env.ref or "HEAD")),
            message=md(" ".join([outcome.message, *outcome.lines]), 3000),
            committed=Markup(f"{committed[:7]} on {'the data branch ' if place.data else ''}"
                             f"{_code(place.branch)}") if place and committed else "",
            artifact=outcome.status in ("artifact", "superseded") or how == "artifact",
            baseline=Markup(_code(_git.repo_relative(root, baseline_path))),
            trend=Markup(trend or ""), report=Markup(markdown))))
        self.io.set_outputs({
            "verdict": verdict or "refreshed", "baseline_commit": committed,
            "refresh": outcome.status,
        })
        return 0

    def refresh_plan(self, start: State) -> ConditionPlan | None:
        """The conditions main's refresh runs besides the suite, for the baseline to keep."""
        if not self.cfg.agent.skills:
            return None
        baseline = None
        if start.baseline_text is not None:
            try:
                baseline = parse_results(start.baseline_text.encode(), "the baseline",
                                         "baseline")
            except GateError:
                baseline = None  # a damaged baseline is replaced by the refresh
        return _skills.refresh_plan(self.cfg, self.opts.run.tasks_dir or self.cfg.path(
            self.cfg.suite.tasks), baseline)

    def refresh_place(self, root: Path, baseline_path: Path, history_path: Path
                      ) -> Place | None:
        """Where the refresh commits (None: it leaves files for an artifact)."""
        branch = self.env.branch or ""
        baseline_rel = _git.repo_relative(root, baseline_path)
        history_rel = _git.repo_relative(root, history_path)
        how = self.settings.baseline_refresh
        if how == "commit":
            return Place(branch, baseline_rel, history_rel)
        if how == "branch":
            data = self.settings.data_branch
            if data == branch:
                raise BadInput(f"[ci] data_branch {data!r} is the branch being refreshed: "
                               "name a branch of its own (default agent-gate-data)")
            return Place(data, data_paths(branch, baseline_rel),
                         data_paths(branch, history_rel), data=True)
        return None

    def refresh_start(self, root: Path, place: Place | None, baseline_path: Path,
                      history_path: Path) -> State:
        """The baseline and history this refresh starts from, read before the suite runs:
        the checkout's committed files, or the data branch's (seeded from the checkout's
        committed files on its first refresh), or the workspace's files for an artifact."""
        if place is None:
            return State(None, _read_optional(baseline_path, RESULTS_LIMIT, "baseline"),
                         _read_optional(history_path, HISTORY_LIMIT, "history"),
                         traces_text=_read_sidecar(traces_path(baseline_path)))
        head = _git.head(root)
        if not place.data:
            return read_state(root, place, head)
        tip = _git.fetch_branch(root, place.branch, token=self.token(),
                                server_url=self.env.server_url)
        return read_state(root, place, tip, seed=self.seed(root, head))

    def seed(self, root: Path, head: str | None) -> Callable[[], State]:
        """A data branch without this branch's baseline starts from the checkout's committed
        baseline and history: moving onto a data branch keeps the depth."""
        base_rel = _git.repo_relative(root, self.cfg.path(self.cfg.gate.baseline))
        hist_rel = _git.repo_relative(root, self.cfg.path(self.settings.history))
        where = f"the {base_rel} committed on {self.env.branch}"
        return lambda: read_state(root, Place("", base_rel, hist_rel), head, seeded_from=where)

    def token(self) -> str | None:
        return self.env.token.get_secret_value() if self.env.token else None

    def refresh_push(self, root: Path, place: Place, results: Results, start: State,
                     entry: HistoryEntry, git_state: str, baseline_path: Path,
                     history_path: Path, traces: Sequence[Trace] = ()) -> Outcome:
        """Pool and push to ``place``; the pooled files are left in the workspace whatever
        happens to the push (an upload step with ``if: !cancelled()`` keeps them)."""
        def guard() -> None:
            if _git.config_state(root) != git_state:
                raise Unmeasurable(
                    "the checkout's git configuration changed while the suite ran (.git/config, "
                    ".git/hooks or the user's git config): the refreshed baseline is not pushed "
                    "with the token; see the threat model in docs/github.md")

        refresh = Refresh(
            root=root, place=place, results=results, entry=entry,
            pool_size=self.cfg.gate.pool_size, history_size=self.settings.history_size,
            token=self.token(), server_url=self.env.server_url,
            source_branch=self.env.branch or "", guard=guard, log=self.log,
            seed=self.seed(root, _git.head(root)) if place.data else None, traces=traces)
        # a data branch is read again: as it is now, not as it was when the suite began
        first = refresh.fetch() if place.data else start
        short = (results.commit or self.env.sha or "")[:7]
        try:
            outcome = refresh.run(first, start.baseline_text,
                                  f"gate: refresh {place.baseline_rel} from {short or 'HEAD'}")
        except GateError:
            if refresh.last is not None:  # pooled but not pushed (a protected branch)
                write_files(refresh.last, baseline_path, history_path)
                self.io.set_outputs({"refresh": "artifact"})
            raise
        write_files(outcome, baseline_path, history_path)
        return outcome

    def refresh_files(self, results: Results, start: State, entry: HistoryEntry,
                      baseline_path: Path, history_path: Path,
                      traces: Sequence[Trace] = ()) -> Outcome:
        """``baseline_refresh = "artifact"``: pool into the workspace's files."""
        from gate.baseline import promote

        baseline = (parse_results(start.baseline_text.encode(), baseline_path, "baseline")
                    if start.baseline_text is not None else None)
        pooled, message = promote(results, baseline, pool_size=self.cfg.gate.pool_size)
        entries = [*parse_history(start.history_text or ""), entry][-self.settings.history_size:]
        outcome = Outcome("artifact", message, baseline=pooled, entries=entries,
                          traces=pooled_sidecar(pooled, traces, parse_sidecar(start.traces_text)))
        write_files(outcome, baseline_path, history_path)
        if pooled is baseline:
            outcome.status = "unchanged"
        return outcome

    def self_check(self, baseline_text: str | None, results: Results
                   ) -> tuple[str | None, str, tuple[Results, Comparison] | None]:
        """Main against its own baseline before pooling: the A/A check behind drift guards.
        Never blocks main; a regression is a warning, since the change has already landed.
        (verdict, its markdown, (the baseline, the comparison)); None where there was none."""
        from gate.compare import compare
        from gate.compare._judge import plain_runs
        from gate.report import render_markdown

        if baseline_text is None:
            return None, "", None
        try:
            baseline = parse_results(baseline_text.encode(), "the baseline", "baseline")
            # the suite's runs only: the A/A check measures the pass-rate test's false blocks
            comparison = compare(plain_runs(baseline), plain_runs(results), self.cfg.gate)
            markdown = render_markdown(comparison, run_url=self.env.run_url)
        except GateError as exc:
            self.io.warning(f"main was not compared with its previous baseline: {exc}")
            return None, "", None
        if comparison.verdict == "regression":
            self.io.warning(str(comparison.headline), title="agent-gate: main regressed")
        return str(comparison.verdict), markdown, (baseline, comparison)

    def try_comment_failure(self, mode: str, reason: str, what: str, exc: GateError) -> None:
        """A PR whose gate could not measure still says why on the PR, not only in a log."""
        pr = self.env.pull_request if mode == "pr" else None
        if pr is None or not self.can_comment():
            return
        markdown = _failure_markdown(what, reason, self.env.run_url)
        create = creates(comment_mode(self.settings), None, failed=True)
        if self.defer(pr, "final", markdown, create) or isinstance(exc, GitHubError):
            return
        self.show(pr, markdown, create=create, what="posted")

    # ----- a matrix of shards (docs/github.md, "Big suites") -------------------------------

    def shard(self, mode: str) -> int:
        """One matrix job: run this shard of the suite (the base branch's tasks for pr/check,
        as a whole run would) and leave its results for the action's upload. No verdict, no
        comment, no refresh: the judge job merges the shards and does those once."""
        assert self.opts.run.shard is not None
        index, count = self.opts.run.shard
        if self.opts.rejudge is not None or self.opts.merge is not None:
            raise BadInput("--shard runs one part of the suite; --rejudge and --merge judge "
                           "finished results: the matrix's jobs and its judge job are separate")
        if mode == "comment":
            raise BadInput("--shard runs a part of the suite: not in comment mode")
        if mode == "main" and self.env.pull_request is not None:
            raise BadInput("--mode main on a pull request: use mode pr (or auto)")
        if mode in ("pr", "check"):
            pr = self.env.pull_request if mode == "pr" else None
            if mode == "pr" and (pr is None or not pr.base_ref):
                raise BadInput("--mode pr needs a pull_request event with a base branch")
            base = pr.base_ref if pr is not None else (self.env.default_branch or "main")
            with self.yardstick(base):
                results = self.run_suite()
        else:
            results = self.run_suite()
        artifact = f"agent-gate-shard-{index}-of-{count}"
        s = results.summary
        self.log(f"gate ci: shard {index}/{count}: {s.passed}/{s.total} passed, {s.errors} "
                 f"errors → {self.opts.run.output} (artifact {artifact}); the judge job merges "
                 "the shards")
        self.io.summary(f"agent-gate: shard {index}/{count} of the suite ran "
                        f"({len(results.runs)} runs, {s.passed}/{s.total} passed); the verdict "
                        "comes from the job that merges the shards.\n")
        # what the artifact holds: the results and their transcripts, side by side (the
        # judge finds each shard's transcripts beside its results, as `gate merge` does)
        output, folder = self.opts.run.output, transcripts_dir(self.opts.run.output)
        files = [output, *([folder] if folder.is_dir() and not folder.is_symlink() else [])]
        self.io.set_outputs({"mode": mode, "verdict": "shard", "exit_code": 0,
                             "shard": f"{index}/{count}", "shard_artifact": artifact,
                             "shard_files": "\n".join(str(f.resolve()) for f in files),
                             **self.outputs_for(results)})
        return 0

    def merge_shards(self, mode: str, where: Path) -> None:
        """The judge job: every shard's results under ``where`` (the downloaded artifacts),
        merged into the results file; judged (pr/check) or pooled into the baseline (main)
        like a run of the whole suite. A missing or foreign shard is refused."""
        from gate.results import load_results, write_results
        from gate.shards import carry_transcripts, merge

        if self.opts.rejudge is not None:
            raise BadInput("--merge and --rejudge both name the results to judge: give one")
        if mode not in ("pr", "check", "main"):
            raise BadInput(f"--merge judges or refreshes a matrix's shards: not in mode {mode}")
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
        merged, carried, warnings = carry_transcripts(parts, merged, self.opts.run.output)
        for line in warnings:
            self.io.warning(line)
        write_results(self.opts.run.output, merged)
        if merged.interrupted is not None:
            raise Unmeasurable(f"the merged {merged.interruption_note()}: an incomplete run "
                               "is neither judged nor pooled")
        self.log(f"gate ci: merged {len(files)} shards from {where}: {len(merged.runs)} runs "
                 f"({carried} transcript{'' if carried == 1 else 's'}) → {self.opts.run.output}; "
                 "no suite run")
        self.merged = merged

    # ----- comment (workflow_run) ----------------------------------------------------------

    def comment(self) -> int:
        run = self.env.event.get("workflow_run")
        if not isinstance(run, dict):
            raise BadInput("--mode comment needs a workflow_run event")
        if run.get("event") != "pull_request":
            self.log("gate ci: the triggering run was not for a pull request; nothing to do")
            self.io.set_outputs({"mode": "comment", "comment_url": ""})
            return 0
        if run.get("conclusion") == "cancelled":
            # superseded by a newer push: its report (if any) is not the PR's current state
            self.log("gate ci: the triggering run was cancelled; nothing to post")
            self.io.set_outputs({"mode": "comment", "comment_url": ""})
            return 0
        markdown = _read_uploaded_report(self.opts.report_path)
        head_repo = str((run.get("head_repository") or {}).get("full_name") or "")
        number = find_pr_for_run(self.client, head_repo or self.env.repository,
                                 str(run.get("head_branch") or ""), str(run.get("head_sha")))
        if number is None:
            self.io.warning("no open pull request matches the triggering run; no comment")
            self.io.set_outputs({"mode": "comment", "comment_url": ""})
            return 0
        # The artifact is the fork's to write: posted with our write token, it must not
        # mention anyone, inject HTML, or plant a copy of the marker that finds our comment.
        from gate.report import defuse_markdown

        mode = comment_mode(self.settings)
        # the verdict is the triggering run's conclusion (trusted), never the report's text
        create = mode == "always" or (mode != "never" and run.get("conclusion") != "success")
        ref = self.pr_comment(number).post(defuse_markdown(self.redact(markdown)),
                                           create=create)
        self.io.set_outputs({"mode": "comment", "pr_number": number,
                             "comment_url": ref.url if ref else "",
                             "comment_id": ref.id if ref else ""})
        return 0


def run_ci(opts: CIOptions, env: CIEnvironment | None = None,
           io: ActionsIO | None = None) -> int:
    """Run ``gate ci`` and return its exit code. A ``GateError`` is reported (annotation,
    step summary, outputs) and re-raised so the CLI prints it and exits with its code."""
    env = env or CIEnvironment.from_environ()
    ci = _CI(opts, env, io)
    for secret in env.secrets:
        ci.io.add_mask(secret)
    mode = "?"
    try:
        mode = ci.mode()
        if mode not in MODES:
            raise BadInput(f"unknown mode {mode!r}")
        if opts.rejudge is not None and mode not in ("pr", "check"):
            raise BadInput(f"--rejudge judges a pull request's or a branch's stored results "
                           f"(mode pr or check), not mode {mode}: on the default branch a "
                           "refresh pools a new run")
        if opts.run.shard is not None:
            return ci.shard(mode)
        if opts.merge is not None:
            ci.merge_shards(mode, opts.merge)
        handler: Callable[[], int] = getattr(ci, mode)
        return handler()
    except GateError as exc:
        reason = ci.redact(str(exc))
        what = "unmeasurable" if exc.exit_code == 3 else "error"
        markdown = _failure_markdown(what, reason, env.run_url)
        ci.io.error(reason, title=f"agent-gate: {what}")
        ci.io.summary(markdown)
        outputs: dict[str, object] = {"mode": mode, "verdict": what,
                                      "exit_code": exc.exit_code, "reason": reason}
        if mode in ("pr", "check"):  # the two-workflow pattern posts this file
            try:
                atomic_write_text(ci.opts.report_path, markdown)
                outputs["report_path"] = str(ci.opts.report_path.resolve())
            except OSError:
                pass
        ci.io.set_outputs(outputs)
        ci.try_comment_failure(mode, reason, what, exc)
        exc.args = (reason,)  # the CLI prints str(exc): never with a secret in it
        raise
    finally:
        if ci._client is not None:
            ci._client.close()


def spent(results: Results) -> float:
    """What a run's runs were billed, suite overhead included (what a budget counts)."""
    return sum(spend(r) for r in results.runs)


def budget_note(results: Results) -> str | None:
    """The comment's line on the job's budget, when it had one."""
    budget = (results.model_extra or {}).get("budget")
    if not isinstance(budget, dict) or budget.get("max_cost_usd") is None:
        return None
    forecast = budget.get("forecast_usd")
    return render_note("budget", limit=f"{budget['max_cost_usd']:.4f}",
                       spent=f"{spent(results):.4f}",
                       forecast=f"{forecast:.4f}" if forecast is not None else "",
                       basis=budget.get("forecast_basis") or "")


def _merged_count(results: Results) -> int:
    merged_from = (results.model_extra or {}).get("merged_from")
    return len(merged_from) if isinstance(merged_from, list) else 0


def _failure_markdown(what: str, reason: str, run_url: str | None) -> str:
    """The body when the gate could not judge: from a template, the reason escaped (an error
    message can quote PR-controlled config: an @mention, an ``<img>``, a link)."""
    from gate.report._render import _url

    return render_body("failure.md.j2", what=what, reason=md(reason, 4000), run_url=_url(run_url))


def _code(text: str) -> Markup:
    """A configured name (the accept label, a path, a branch) as inline code."""
    return code_span(text)


REPORT_LIMIT = 1_000_000  # bytes; our reports are a few KiB, a GitHub comment at most 65,536


def _read_uploaded_report(path: Path) -> str:
    """The report a fork's run uploaded: a regular file, read as itself. Never followed through
    a symlink (to a file of the runner's, posted with our write token), never a FIFO that
    blocks the job, bounded, UTF-8."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except FileNotFoundError:
        raise BadInput(f"{path}: no report to post (download the artifact the pull_request "
                       "run uploaded first)") from None
    except OSError as exc:
        raise BadInput(f"{path}: not a regular file (a symlink?), not posted: "
                       f"{exc.strerror}") from None
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
            raise BadInput(f"{path}: not a regular file, not posted")
        data = fh.read(REPORT_LIMIT + 1)
    if len(data) > REPORT_LIMIT:
        raise BadInput(f"{path}: larger than {REPORT_LIMIT:,} bytes, not posted")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BadInput(f"{path}: not UTF-8 (byte {exc.start}), not posted") from None


def _read_optional(path: Path, limit: int, what: str) -> str | None:
    return read_text(path, limit, what) if path.exists() else None


def _trace_key(run: RunResult) -> tuple[object, ...]:
    return (run.arm, run.task, run.condition, run.replication)


def _read_sidecar(path: Path) -> str | None:
    """The workspace's traces sidecar; one that cannot be read is replaced, never an error."""
    try:
        return _read_optional(path, SIDECAR_LIMIT, "baseline traces")
    except GateError:
        return None


def _num(v: float | None) -> str:
    return "" if v is None else f"{v:.6g}"
