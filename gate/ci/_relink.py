"""``comment`` mode with ``same-repo: link`` (``gate init``'s report workflow): a pull request of
the repository itself gets its report one click away.

Its own job posts its comment (its token may comment, never write contents: the PR's code is
under test), with the link to the report artifact. This trusted ``workflow_run`` job (the
default branch's workflow, no checkout) publishes the report that run uploaded, inside the
gate's sandboxed wrapper exactly as a fork's (the page is the PR job's product, written where
the PR's code ran), and edits that comment's link line to point at the page.

It edits only a comment that links *this* run's artifact: a comment a newer push's run has
taken over (running, or its own verdict) is left alone, and nothing is published for it. No
comment (``on-change``: a quiet pass) publishes nothing: a public page no comment links.
"""

from __future__ import annotations

from typing import Any

from gate.ci._context import Context
from gate.ci._pages import publish_pr_report
from gate.ci._publish import Publisher
from gate.core.config import comment_mode
from gate.report import link_url, render_body, with_report_link

_URL = "https://link.invalid/"


def _footer_prefix() -> str:
    """What the comment's report line starts with (``artifact.md.j2``), before its link."""
    line = render_body("artifact.md.j2", url=link_url(_URL), artifact="a", file="f")
    return line.strip("\n").split(_URL, 1)[0]


def relinked(body: str, run_id: str, footer: str) -> str | None:
    """The comment's text with its link to run ``run_id``'s report artifact replaced by
    ``footer``; None when it links no artifact of that run."""
    lines = body.split("\n")
    prefix = _footer_prefix()
    at = [i for i, line in enumerate(lines) if line.startswith(prefix)]
    if not (run_id.isdigit() and at and f"/actions/runs/{run_id}/artifacts/" in lines[at[-1]]):
        return None
    lines[at[-1]] = footer
    return "\n".join(lines)


def link_published_report(ctx: Context, publisher: Publisher, run: dict[str, Any]) -> int:
    """Publish the triggering same-repository run's report and point its comment at it; 0."""
    ctx.io.set_outputs({"mode": "comment", "comment_url": ""})
    number = ctx.forge.find_change(ctx.env.repository, str(run.get("head_branch") or ""),
                                   str(run.get("head_sha")))
    if number is None:
        ctx.io.warning("no open pull request matches the triggering run; no comment")
        return 0
    settings = publisher.settings
    comment = ctx.forge.comment(number, publisher.comment_id, comment_mode(settings),
                                settings.comment_author)
    run_id = str(run.get("id") or "")
    body = comment.text() or ""
    if relinked(body, run_id, "") is None:
        ctx.log(f"gate ci: PR #{number} has no comment of this suite linking run {run_id}'s "
                "report (none was posted, or a newer push's run has it): nothing published")
        return 0
    url = publish_pr_report(ctx, number, settings.data_branch, publisher.report_artifact)
    if url is None:
        return 0  # the comment keeps its artifact link; the log or a notice says why
    footer = render_body("published.md.j2", url=link_url(url)).strip("\n")
    # the footer's line, and the first screen's link to the report with it
    ref = comment.post(with_report_link(str(relinked(body, run_id, footer)), url), create=False)
    ctx.log(f"gate ci: PR #{number}'s comment links the published report: {url}")
    ctx.io.set_outputs({"pr_number": number, "comment_url": ref.url if ref else "",
                        "comment_id": ref.id if ref else ""})
    return 0
