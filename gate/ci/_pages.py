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
The adapter (visibility, the Pages site, the push) is ``gate.github``'s.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from gate.ci._context import Context
from gate.errors import GateError
from gate.github import (
    BADGE_REL,
    NOJEKYLL,
    GitHubClient,
    pages_site,
    publish_files,
    render_body,
    report_rel,
    repository_public,
)
from gate.report import link_url

if TYPE_CHECKING:
    from gate.github import PagesSite, Place
    from gate.results import Results

PAGE_LIMIT = 32_000_000  # bytes of a report published (a GitHub file is at most 100 MB)


def _client(ctx: Context) -> GitHubClient | None:
    try:
        return ctx.github.client
    except GateError:
        return None


def report_name(base: str, artifact: str) -> str:
    """A published report's folder: ``base`` (a branch, ``pr-<n>``), with the suite's own
    suffix when its comment id is not the default one (as its artifact's name has)."""
    return base + artifact.removeprefix("agent-gate-report")


def main_pages(ctx: Context, place: Place | None, html: dict[str, object], results: Results,
               verdict: str | None, artifact: str) -> dict[str, str]:
    """The files main's refresh commits with the baseline: the badge on any data branch,
    main's report only in a public repository."""
    if place is None or not place.data:
        return {}
    from gate.compare import plain_runs
    from gate.report import render_badge

    # one badge per suite: badge.svg, badge-<comment-id>.svg for a suite with its own id
    badge = BADGE_REL.replace(".svg", artifact.removeprefix("agent-gate-report") + ".svg")
    files = {badge: render_badge(plain_runs(results).summary.pass_rate, verdict)}
    public, how = repository_public(ctx.env, _client(ctx))
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
    client = _client(ctx)
    if rel is None or client is None:
        return
    site = _site(ctx, client, place.branch)
    if site is not None:
        url = site.page_url(rel)
        ctx.log(f"gate ci: main's report is published: {url}")
        ctx.io.set_outputs({"report_url": url})


def _site(ctx: Context, client: GitHubClient, branch: str) -> PagesSite | None:
    """The Pages site when it serves ``branch``; else None, said once in the job's log and as
    a notice."""
    try:
        site = pages_site(client)
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
        if path.stat().st_size > PAGE_LIMIT:
            return None
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def pr_report_footer(ctx: Context, run: dict[str, Any], number: int, data_branch: str,
                     artifact: str) -> str:
    """The comment job's last line: the published page of the PR's report, else the link to
    the triggering run's report artifact, else nothing."""
    url = _publish_pr(ctx, number, data_branch, artifact)
    if url is not None:
        return render_body("published.md.j2", url=link_url(url)).strip("\n")
    return _artifact_footer(ctx, run, artifact)


def _publish_pr(ctx: Context, number: int, data_branch: str, artifact: str) -> str | None:
    from gate.ci._comment import read_uploaded

    public, how = repository_public(ctx.env, _client(ctx))
    if not public:
        ctx.log(f"gate ci: the repository is {how}: the PR's report is not published (a "
                "Pages site is public); the comment links its artifact")
        return None
    client = _client(ctx)
    site = _site(ctx, client, data_branch) if client is not None else None
    if site is None:
        return None
    html = ctx.opts.html_report.name if ctx.opts.html_report else "gate-report.html"
    try:
        page = read_uploaded(ctx.opts.report_path.with_name(html), PAGE_LIMIT, "published")
    except GateError as exc:
        ctx.log(f"gate ci: no HTML report to publish: {exc}")
        return None
    from gate.report import sandboxed_page

    rel = report_rel(report_name(f"pr-{number}", artifact))
    wrapper = sandboxed_page(ctx.redact(page), f"agent-gate report · PR #{number}")
    try:
        sha = publish_files({rel: wrapper, NOJEKYLL: ""}, data_branch,
                            f"gate: publish the report of PR #{number}\n\n[skip ci]",
                            env=ctx.env, token=ctx.token)
    except GateError as exc:
        ctx.io.warning(f"the PR's report was not published (the comment links its artifact): "
                       f"{ctx.redact(str(exc))}", title="agent-gate")
        return None
    url = site.page_url(rel)
    ctx.log(f"gate ci: published the PR's report on {data_branch} ({sha[:7]}): {url}")
    ctx.io.set_outputs({"report_url": url})
    return url


def _artifact_footer(ctx: Context, run: dict[str, Any], artifact: str) -> str:
    """The triggering run's report artifact, found by name (``actions: read``)."""
    run_id, client = str(run.get("id") or ""), _client(ctx)
    if not run_id.isdigit() or client is None:
        return ""
    try:
        found = client.request("GET", client.repo_path(f"actions/runs/{run_id}/artifacts"),
                               params={"name": artifact}, what="find the report artifact",
                               permission="actions: read").json()
    except (GateError, ValueError):
        return ""
    ids = [a.get("id") for a in (found or {}).get("artifacts") or [] if isinstance(a, dict)
           and a.get("name") == artifact and not a.get("expired")]
    if not ids or not str(ids[0]).isdigit():
        return ""
    url = f"{ctx.env.server_url}/{ctx.env.repository}/actions/runs/{run_id}/artifacts/{ids[0]}"
    html = ctx.opts.html_report.name if ctx.opts.html_report else "gate-report.html"
    return render_body("artifact.md.j2", url=link_url(url), artifact=artifact,
                       file=html).strip("\n")
