"""What a trusted job publishes on the data branch's Pages site, and what the comment links.

Only trusted jobs publish (a PR's own job has ``contents: read``: its code is under test):

- main's refresh commits, with the pooled baseline in its push loop, the badge
  (``badge.svg``: the run's pass rate and main's verdict against the baseline it replaced) and,
  in a public repository, main's report (``reports/<branch>/index.html``, the page the gate
  rendered itself: its own Content-Security-Policy holds on the Pages origin);
- the fork pattern's comment job publishes a PR's report at ``reports/pr-<n>/index.html``,
  only in a public repository whose Pages site serves the data branch; the page the fork
  uploaded is the fork's to write, so it goes out only inside the gate's sandboxed wrapper
  (``gate.report.sandboxed_page``), and the comment links that page.

Anything else (a private or internal repository, Pages off or serving another branch, a
refused push) keeps the artifact link: publishing never costs the comment or the verdict.
The forge answers (visibility, the Pages site, the push: ``_forge``); the data branch's layout
is ``gate.pool.refresh``'s.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from gate._files import read_bytes
from gate.ci._context import Context
from gate.errors import GateError
from gate.pool.refresh import NOJEKYLL, badge_rel, report_rel
from gate.report import link_url, render_body

if TYPE_CHECKING:
    from gate.ci._forge import PagesSite
    from gate.core.results import Results
    from gate.pool.refresh import Place

PAGE_LIMIT = 32_000_000  # bytes of a report published (a GitHub file is at most 100 MB)


def _suffix(artifact: str) -> str:
    """The suite's own suffix of its published files (``-<comment id>``), as its report
    artifact's name has it; empty for the default comment id."""
    return artifact.removeprefix("agent-gate-report")


def report_name(base: str, artifact: str) -> str:
    """A published report's folder: ``base`` (a branch, ``pr-<n>``) and the suite's suffix."""
    return base + _suffix(artifact)


def _html_name(ctx: Context) -> str:
    """The HTML report's file name inside the uploaded artifact."""
    return ctx.opts.html_report.name if ctx.opts.html_report else "gate-report.html"


def main_pages(ctx: Context, place: Place | None, html: dict[str, object], results: Results,
               verdict: str | None, artifact: str) -> dict[str, str]:
    """The files main's refresh commits with the baseline: the badge on any data branch,
    main's report only in a public repository."""
    if place is None or not place.data:
        return {}
    from gate.compare import plain_runs
    from gate.report import render_badge

    badge = render_badge(plain_runs(results).summary.pass_rate, verdict)
    files = {badge_rel(_suffix(artifact)): badge}
    public, how = ctx.forge.repository_public()
    if not public:
        ctx.log(f"gate ci: the repository is {how}: main's report is not published (a Pages "
                "site is public); it stays in the report artifact")
        return files
    path = html.get("html_report_path")
    page = _read_page(Path(str(path))) if path else None
    if page is not None:
        name = report_name(ctx.env.branch or "main", artifact)
        files.update({report_rel(name): page, NOJEKYLL: ""})
    return files


def announce_main(ctx: Context, place: Place, files: dict[str, str]) -> None:
    """After the push: where main's report is served (output ``report_url``), or why not."""
    rel = next((r for r in files if r.startswith("reports/")), None)
    if rel is None or not ctx.forge.can_ask():
        return
    site = _site(ctx, place.branch)
    if site is not None:
        url = site.page_url(rel)
        ctx.log(f"gate ci: main's report is published: {url}")
        ctx.io.set_outputs({"report_url": url})


def _site(ctx: Context, branch: str) -> PagesSite | None:
    """The Pages site when it serves ``branch``; else None, said once in the job's log and as
    a notice."""
    try:
        site = ctx.forge.pages_site()
    except GateError as exc:  # e.g. a token without `pages: read`
        ctx.io.notice(f"cannot tell whether GitHub Pages serves {branch}: {exc}; reports "
                      "link their artifact", title="agent-gate")
        return None
    if site is None or not site.serves(branch):
        why = ("GitHub Pages is not enabled for this repository" if site is None else
               f"GitHub Pages serves {site.branch or 'a workflow'}{site.path}, not {branch}/")
        ctx.io.notice(f"{why}: reports link their artifact. To open them in one click, "
                      f"publish {branch} with Pages (Settings → Pages → Deploy from a branch → "
                      f"{branch}, / (root)); docs/github.md, \"The report on GitHub Pages\"",
                      title="agent-gate")
        return None
    return site


def _read_page(path: Path) -> str | None:
    """A report page written by this job (bounded); None when there is none to publish."""
    try:
        return read_bytes(path, PAGE_LIMIT, "the HTML report").decode("utf-8")
    except (GateError, UnicodeDecodeError):
        return None


def pr_report_footer(ctx: Context, run: dict[str, Any], number: int, data_branch: str,
                     artifact: str) -> tuple[str, str] | None:
    """(the comment job's last line, the report's URL it links: also put on the comment's
    first screen): the published page of the PR's report, else the triggering run's report
    artifact; None when there is neither."""
    url = publish_pr_report(ctx, number, data_branch, artifact)
    if url is not None:
        return render_body("published.md.j2", url=link_url(url)).strip("\n"), url
    return _artifact_footer(ctx, run, artifact)


def publish_pr_report(ctx: Context, number: int, data_branch: str, artifact: str) -> str | None:
    """The PR's uploaded report, wrapped, published on the data branch: its page's URL, or
    None (the comment keeps the artifact link; said in the log or a notice)."""
    from gate.ci._uploaded import read_uploaded

    public, how = ctx.forge.repository_public()
    if not public:
        ctx.log(f"gate ci: the repository is {how}: the PR's report is not published (a "
                "Pages site is public); the comment links its artifact")
        return None
    site = _site(ctx, data_branch) if ctx.forge.can_ask() else None
    if site is None:
        return None
    html = _html_name(ctx)
    try:
        page = read_uploaded(ctx.opts.report_path.with_name(html), PAGE_LIMIT, "published")
    except GateError as exc:
        ctx.log(f"gate ci: no HTML report to publish: {exc}")
        return None
    from gate.report import sandboxed_page

    rel = report_rel(report_name(f"pr-{number}", artifact))
    wrapper = sandboxed_page(ctx.redact(page), f"agent-gate report · PR #{number}")
    try:
        sha = ctx.forge.publish_files({rel: wrapper, NOJEKYLL: ""}, data_branch,
                                      f"gate: publish the report of PR #{number}\n\n[skip ci]")
    except GateError as exc:
        ctx.io.warning(f"the PR's report was not published (the comment links its artifact): "
                       f"{ctx.redact(str(exc))}", title="agent-gate")
        return None
    url = site.page_url(rel)
    ctx.log(f"gate ci: published the PR's report on {data_branch} ({sha[:7]}): {url}")
    ctx.io.set_outputs({"report_url": url})
    return url


def _artifact_footer(ctx: Context, run: dict[str, Any], artifact: str
                     ) -> tuple[str, str] | None:
    """The triggering run's report artifact, found by name (the forge's): its line and URL."""
    run_id = str(run.get("id") or "")
    if not run_id.isdigit() or not ctx.forge.can_ask():
        return None
    url = ctx.forge.run_artifact_url(run_id, artifact)
    if url is None:
        return None
    html = _html_name(ctx)
    return render_body("artifact.md.j2", url=link_url(url), artifact=artifact,
                       file=html).strip("\n"), url
