"""``comment`` (a ``workflow_run`` job): post the report a fork PR's run uploaded, on that PR.

It runs with a write token next to files a fork wrote: it reads no file of its workspace (its
``[ci]`` settings are the default branch's gate.toml, read through the forge's API), runs
nothing, and the report is read as a bounded regular file (never through a symlink, never a
FIFO) and defused before it is posted. Whether a comment is created comes from the triggering
run's conclusion (trusted), never from the report's text.
"""

from __future__ import annotations

from pathlib import Path

from gate.ci._context import Context
from gate.ci._publish import Publisher
from gate.ci._uploaded import read_uploaded_report
from gate.core.config import CISettings, comment_mode, parse_config
from gate.errors import ForgeError


def default_branch_ci(ctx: Context) -> CISettings:
    """``[ci]`` of the default branch's config (``opts.config_repo_path``): the job has no
    checkout, and a gate.toml in its workspace could be a fork's artifact (which would choose
    the branch its write token pushes to). The defaults when the branch has no such file, or
    when it cannot be read (said in a warning); a malformed one is bad input (exit 2)."""
    path = ctx.opts.config_repo_path
    if not ctx.forge.can_ask():
        ctx.log(f"gate ci: no repository or token to read the default branch's {path}: [ci]'s "
                "defaults and the action's inputs apply")
        return CISettings()
    try:
        text = ctx.forge.default_branch_file(path)
    except ForgeError as exc:
        ctx.io.warning(f"the default branch's {path} could not be read ({ctx.redact(str(exc))})"
                       ": its [ci] settings are not applied, only the defaults and the "
                       "action's inputs")
        return CISettings()
    if text is None:
        # GitHub answers 404 for a file the token may not read, too (a private repository
        # and a job without `contents: read`)
        ctx.log(f"gate ci: no {path} on the default branch (or the token may not read it: "
                "`contents: read`): [ci]'s defaults apply")
        return CISettings()
    return parse_config(text, where=f"{path} (the default branch's)", root=Path.cwd()).ci


def post_uploaded_report(ctx: Context, publisher: Publisher) -> int:
    """The comment mode's whole job; 0 whether or not there was anything to post."""
    run = ctx.env.event.get("workflow_run")
    assert isinstance(run, dict)  # the event stage refuses anything else
    if run.get("event") != "pull_request":
        ctx.log("gate ci: the triggering run was not for a pull request; nothing to do")
        ctx.io.set_outputs({"mode": "comment", "comment_url": ""})
        return 0
    if run.get("conclusion") == "cancelled":
        # superseded by a newer push: its report (if any) is not the PR's current state
        ctx.log("gate ci: the triggering run was cancelled; nothing to post")
        ctx.io.set_outputs({"mode": "comment", "comment_url": ""})
        return 0
    head_repo = str((run.get("head_repository") or {}).get("full_name") or "")
    if ctx.opts.same_repo == "link" and head_repo.lower() == ctx.env.repository.lower():
        from gate.ci._relink import link_published_report

        return link_published_report(ctx, publisher, run)  # the PR's job posted its comment
    markdown = read_uploaded_report(ctx.opts.report_path)
    number = ctx.forge.find_change(head_repo or ctx.env.repository,
                                   str(run.get("head_branch") or ""), str(run.get("head_sha")))
    if number is None:
        ctx.io.warning("no open pull request matches the triggering run; no comment")
        ctx.io.set_outputs({"mode": "comment", "comment_url": ""})
        return 0
    # The artifact is the fork's to write: posted with our write token, it must not
    # mention anyone, inject HTML, or plant a copy of the marker that finds our comment.
    from gate.ci._pages import pr_report_footer
    from gate.report import defuse_markdown, with_report_link

    settings = publisher.settings
    mode = comment_mode(settings)
    create = mode == "always" or (mode != "never" and run.get("conclusion") != "success")
    # our own line, after the fork's text is defused: the published page, else the artifact
    # (its link on the first screen too, and the last line always ours)
    report = pr_report_footer(ctx, run, number, settings.data_branch, publisher.report_artifact)
    body = defuse_markdown(ctx.redact(markdown))
    if report is not None:
        body = with_report_link(body, report[1], report[0])
    comment = ctx.forge.comment(number, publisher.comment_id, mode, settings.comment_author)
    ref = comment.post(body, create=create)
    ctx.io.set_outputs({"mode": "comment", "pr_number": number,
                        "comment_url": ref.url if ref else "",
                        "comment_id": ref.id if ref else ""})
    return 0
