"""``gate ci``: the GitHub Actions entrypoint (``action.yml`` runs exactly this)."""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from gate.cli._options import progress, run_options, run_request
from gate.github import COMMENT_MODES, MODES, is_comment_mode  # loads _modes only
from gate.secrets import warn_exposed_ancestors

if TYPE_CHECKING:
    from gate.ci import CIOptions
    from gate.core.results import Results


@click.command()
@run_options
# --- what CI does with the verdict (each overrides [ci] in gate.toml) ----------------------
@click.option("--mode", type=click.Choice(MODES), default="auto", show_default=True,
              envvar="GATE_MODE",
              help="auto: from the event (pull_request → pr; push/dispatch on the default "
                   "branch → main, elsewhere → check; workflow_run → comment).")
@click.option("--comment/--no-comment", default=None, envvar="GATE_COMMENT",
              help="Create or update the one PR comment ([ci].comment, default on).")
@click.option("--fail/--no-fail", "fail_on_regression", default=None,
              envvar="GATE_FAIL_ON_REGRESSION",
              help="Exit 1 on a regression ([ci].fail_on_regression, default on). Exit 3 "
                   "(unmeasurable) stays: never a silent pass.")
@click.option("--accept-label", envvar="GATE_ACCEPT_LABEL",
              help="PR label that accepts a regression: reported, not blocking "
                   "([ci].accept_label, default gate:accept-regression).")
@click.option("--fork-without-key", type=click.Choice(["fail", "skip"]),
              envvar="GATE_FORK_WITHOUT_KEY",
              help="A fork PR gets no secrets: exit 3, or skip with exit 0 "
                   "([ci].fork_without_key, default fail).")
@click.option("--comment-author", envvar="GATE_COMMENT_AUTHOR",
              help="Login the token writes as, whose marker comment is the gate's "
                   "([ci].comment_author; default: github-actions[bot] for the Actions token, "
                   "GET /user for a personal token). A GitHub App's token: my-app[bot].")
@click.option("--comment-id", envvar="GATE_COMMENT_ID",
              help="This suite's comment: the id in its hidden marker, so several suites (or a "
                   "matrix over models) keep one comment each ([ci].comment_id; default: the "
                   "config path relative to the repository, e.g. gate.toml).")
@click.option("--comment-mode", type=click.Choice(COMMENT_MODES), envvar="GATE_COMMENT_MODE",
              help="When a comment is created: always, on-change, on-regression, never "
                   "([ci].comment_mode, default always). An existing one is always kept "
                   "current (never aside); --no-comment is never.")
@click.option("--rejudge", metavar="RESULTS", envvar="GATE_REJUDGE",
              help="Judge these stored results (a run's artifact) instead of running the "
                   "suite: a PR re-judged after the accept label, or a workflow_dispatch on "
                   "a PR's branch. `true` means the --output file; empty or `false`: off.")
@click.option("--shard", metavar="I/N", envvar="GATE_SHARD",
              help="A matrix job: run only the I-th of N parts of the suite and write its "
                   "results (the action uploads them); no verdict, comment or refresh.")
@click.option("--merge", "merge_dir", metavar="DIR", envvar="GATE_MERGE",
              help="The matrix's judge job: merge the shards' results found under DIR into "
                   "--output, then judge them (pr/check) or pool them (main); no suite run.")
@click.option("--report", "report_path", type=click.Path(dir_okay=False),
              default="gate-report.md", show_default=True, envvar="GATE_REPORT",
              help="Markdown report to write (pr/check), or to post (comment mode).")
@click.option("--html-report", "html_report", metavar="PATH", default="gate-report.html",
              show_default=True, envvar="GATE_HTML_REPORT",
              help="The judged run's HTML report (as `gate report --html` writes it: the "
                   "verdict, every task and every run's transcript); empty: none. A report "
                   "that cannot be written is a warning, never the verdict.")
@click.option("--max-cost", type=click.FloatRange(min=0), metavar="USD", envvar="GATE_MAX_COST",
              help="A budget for this job's runs (the suite, and a skill PR's conditions "
                   "after it): runs start only while spent + in flight + their forecast "
                   "(the baseline's per-task mean spend) stays within it. A run the budget "
                   "stopped is not judged and refreshes nothing: exit 3, saying what was "
                   "skipped. Empty: no budget.")
@click.option("--defer-comment", is_flag=True, default=False, envvar="GATE_DEFER_COMMENT",
              help="Leave the final PR comment in a file (the `comment_pending` output) for "
                   "`--post-comment` after the report's upload (the action does this).")
@click.option("--post-comment", "post_comment", metavar="PENDING", envvar="GATE_POST_COMMENT",
              help="Post the comment a --defer-comment run left in PENDING, with a link to "
                   "the report's artifact (--artifact-id); runs no suite, reads no gate.toml.")
@click.option("--same-repo", "same_repo", type=click.Choice(["post", "link"]), default="post",
              show_default=True, envvar="GATE_SAME_REPO",
              help="Comment mode, a PR of the repository itself: post the report its run "
                   "uploaded (its job posted nothing: the fork pattern), or link (its job "
                   "posted the comment: publish the report on Pages and point that "
                   "comment's link at the page; gate init's report workflow).")
@click.option("--artifact-id", default="", envvar="GATE_ARTIFACT_ID",
              help="With --post-comment: the report artifact's id (actions/upload-artifact's "
                   "`artifact-id` output); empty: no link.")
def ci(
    mode: str, comment: bool | None, fail_on_regression: bool | None,
    accept_label: str | None, fork_without_key: str | None, comment_author: str | None,
    comment_id: str | None, comment_mode: str | None, rejudge: str | None, shard: str | None,
    merge_dir: str | None, report_path: str, html_report: str, max_cost: float | None,
    defer_comment: bool, post_comment: str | None, artifact_id: str, same_repo: str,
    **run_kw: Any,
) -> None:
    """The GitHub Actions entrypoint: run, judge against the base branch, comment, exit.

    \b
    pull_request  baseline from the base branch, one sticky comment, exit by verdict
    push to main  pool the run into baseline.json, append the history, commit or keep
    fork PRs      no secrets: exit 3 (or skip, --fork-without-key skip)
    workflow_run  post the report a fork PR's run uploaded ([ci]: the default
                  branch's gate.toml, through the API; nothing of the workspace)

    Reads GITHUB_* and the token (GITHUB_TOKEN) from the environment; secrets are masked.
    Exit: 0 pass · 1 regression · 2 bad input · 3 unmeasurable.
    """
    warn_exposed_ancestors(lambda line: click.echo(line, err=True))  # a shell above holds keys
    if post_comment and post_comment.strip():
        # the action's last step: another step's verdict, posted; nothing here is judged
        from gate.github import CIEnvironment, post_deferred

        sys.exit(post_deferred(Path(post_comment), CIEnvironment.from_environ(), artifact_id,
                               log=lambda line: click.echo(line, err=True)))
    config_path = run_kw["config_path"]
    from gate.github import event_name, workspace

    if is_comment_mode(mode, event_name()):
        # posting another run's report: no gate.toml of the workspace, no suite (see
        # is_comment_mode); its [ci] is the default branch's, read by gate.ci
        from gate.core.config import GateConfig
        from gate.execution.run import RunRequest

        req = RunRequest(config=GateConfig(), output=Path(run_kw["output"]))
    else:
        req = run_request(run_kw)  # a config error stops here, before gate ci loads
        if max_cost is not None:
            req = dataclasses.replace(req, max_cost=max_cost)
        if shard and shard.strip():
            from gate.execution.shards import parse_shard

            req = dataclasses.replace(req, shard=parse_shard(shard))
        config_path = req.config.source or config_path
    # the repository root as the runner checked it out (no git: comment mode must not run
    # it in a workspace a fork's files may be in)
    root = workspace() or Path.cwd()
    from gate.ci import CIOptions, CIOverrides
    from gate.github import config_repo_path, default_comment_id

    shown = progress()

    from gate.cli._run import announce

    def start(results: Results, todo: int) -> None:
        announce(results, todo)  # a shard's tasks, a resume, the budget's forecast
        shown.on_start(results, todo)

    opts = CIOptions(
        run=req, mode=mode, report_path=Path(report_path), on_result=shown.on_result,
        on_start=start,
        default_comment_id=default_comment_id(config_path, root),
        config_repo_path=config_repo_path(config_path, root),
        rejudge=_rejudge_path(rejudge, req.output),
        merge=Path(merge_dir) if merge_dir and merge_dir.strip() else None,
        html_report=Path(html_report) if html_report.strip() else None,
        defer_comment=defer_comment, same_repo=same_repo,
        overrides=CIOverrides(
            comment=comment, fail_on_regression=fail_on_regression, accept_label=accept_label,
            fork_without_key=fork_without_key, comment_author=comment_author,
            comment_id=comment_id, comment_mode=comment_mode,
        ),
        log=lambda line: click.echo(line, err=True),
    )
    try:
        code = run_ci(opts)
    finally:
        shown.stop()
    shown.finish()
    sys.exit(code)


def run_ci(opts: CIOptions) -> int:
    """gate ci's one library call (gate/ci/), loaded only when it runs; the CI environment is
    read there, by the forge's adapter."""
    from gate.ci import run_ci as run

    return run(opts)


def _rejudge_path(value: str | None, output: Path) -> Path | None:
    """``--rejudge``: a path, or the action input's ``true`` (the results file) / ``false``."""
    if value is None or value.strip().lower() in ("", "false"):
        return None
    return output if value.strip().lower() == "true" else Path(value)
