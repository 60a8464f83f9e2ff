"""The report one click away: trusted jobs publish it on the data branch, which GitHub Pages
serves, and the comment links the page.

Through the real ``gate ci`` against real git (a bare origin) and the GitHub stand-in, which
models the repository's visibility and its Pages site (``GET /repos/{o}/{r}/pages``: 404 when
Pages is not enabled). Main's refresh commits the badge and (public repository) main's report
in the push of its baseline; the fork pattern's comment job publishes the PR's report, the
page the fork uploaded wrapped in the gate's sandbox, and links it. A private repository, or
Pages off, keeps the artifact link and publishes no report.
"""

from __future__ import annotations

import html
import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.browser import find_browser
from tests.helpers.ci import BROKEN_HELPER, PR, REPO, TOKEN, CIRun, Project, refresh, sh

pytestmark = pytest.mark.slow

DATA = "agent-gate-data"
HOSTILE = '<script>alert("pwned")</script><img src=x onerror="alert(2)">'
#: the oracle agent's helper: solves the task and says something hostile (its stdout is the
#: run's final message, in the transcript the report shows)
LOUD_HELPER = f"echo \"$1\" > out.txt\necho '{HOSTILE}'\n"
RUN_ID = 9001  # the triggering pull_request run of the comment job


def origin(project: Project, *args: str) -> str:
    return sh(project.tmp, "git", "--git-dir", str(project.origin), *args)


def data_files(project: Project) -> list[str]:
    return origin(project, "ls-tree", "-r", "--name-only", DATA).split()


def loud_main(project: Project) -> Path:
    """A main whose agent prints hostile markup, its baselines on the data branch."""
    main = project.clone("main-ci")
    (main / "agent" / "solve.sh").write_text(LOUD_HELPER)
    sh(main, "git", "commit", "-q", "-am", "a loud agent")
    sh(main, "git", "push", "-q", "origin", "main")
    return main


def test_main_refresh_publishes_its_report_and_the_badge(project: Project) -> None:
    url = project.gh.enable_pages()
    main = loud_main(project)
    run = refresh(project, main, store="branch")
    assert run.code == 0, run.stderr
    assert run.outputs["refresh"] == "committed"
    # in the same commit as the baseline: nothing else is pushed
    assert origin(project, "rev-list", "--count", DATA).strip() == "1"
    assert data_files(project) == [".nojekyll", "badge.svg", "main/baseline.json",
                                   "main/gate-history.jsonl", "reports/main/index.html"]
    assert run.outputs["report_url"] == f"{url}reports/main/"
    page = origin(project, "show", f"{DATA}:reports/main/index.html")
    assert page == (main / "gate-report.html").read_text()  # the page the job rendered
    csp = re.search(r'<meta http-equiv="Content-Security-Policy" content="([^"]+)">', page)
    assert csp is not None
    policy = html.unescape(csp.group(1))
    assert "default-src 'none'" in policy and "script-src 'sha256-" in policy
    assert "'unsafe-inline'" not in policy
    assert page.index("Content-Security-Policy") < page.index("<style>")
    assert "&lt;script&gt;alert(&#34;pwned&#34;)" in page and "alert(\"pwned\")" not in page
    assert "<img" not in page
    # the badge: the run's pass rate and main's verdict against the baseline it replaces
    badge = origin(project, "show", f"{DATA}:badge.svg")
    assert badge.startswith('<svg xmlns="http://www.w3.org/2000/svg"')
    assert ">100.0 % · pass</text>" in badge and 'fill="#2ea043"' in badge

    # main regresses (it has landed: the refresh warns, never blocks): the badge turns red
    (main / "agent" / "solve.sh").write_text(BROKEN_HELPER)
    sh(main, "git", "commit", "-q", "-am", "a broken agent")
    sh(main, "git", "push", "-q", "origin", "main")
    again = refresh(project, main)
    assert again.code == 0, again.stderr
    badge = origin(project, "show", f"{DATA}:badge.svg")
    assert ">0.0 % · regression</text>" in badge and 'fill="#cf222e"' in badge
    assert 'aria-label="agent-gate: 0.0 % · regression"' in badge


def test_a_private_repository_publishes_no_report(project: Project) -> None:
    project.gh.visibility = "private"
    project.gh.enable_pages()
    run = refresh(project, project.clone("main-ci"), store="branch")
    assert run.code == 0, run.stderr
    assert data_files(project) == ["badge.svg", "main/baseline.json", "main/gate-history.jsonl"]
    assert "report_url" not in run.outputs
    assert "the repository is private: main's report is not published" in run.stderr
    assert project.gh.calls("GET", r"/pages$") == []  # not even asked


# ----- the fork pattern's comment job --------------------------------------------------------

def fork_report(project: Project, tmp: Path) -> Path:
    """A fork PR's run (no key, the oracle needs none), its report uploaded as the action
    uploads it, then downloaded by the comment job under RUNNER_TEMP; the fork's page then
    carries what a fork can put in it (its own script, a redirect)."""
    ci = project.pr_branch("feature", lambda w: (w / "agent" / "solve.sh").write_text(
        LOUD_HELPER + "# the fork's\n"))
    run = project.gate_ci(ci, event_path=project.event(ci, head_repo="stranger/agent"),
                          env={"ANTHROPIC_API_KEY": ""})
    assert run.code == 0, run.stderr
    artifact = tmp / "runner-temp" / "agent-gate-report"
    artifact.mkdir(parents=True)
    for name in ("gate-report.md", "gate-report.html"):
        shutil.copy(ci / name, artifact / name)
    page = artifact / "gate-report.html"
    page.write_text(page.read_text().replace(
        "<head>", '<head><meta http-equiv="refresh" content="0;url=https://evil.example/">'
                  f"{HOSTILE}", 1))
    return artifact


def comment_job(project: Project, artifact: Path, *, repository: dict[str, object]) -> CIRun:
    """The trusted `workflow_run` job: no checkout (an empty directory), the artifact under
    RUNNER_TEMP, origin reached as the server's URL (git's insteadOf stands in for the
    network)."""
    project.gh.pulls = [{"number": PR, "head": {"sha": "a" * 40}, "_head": "stranger:feature"}]
    project.gh.artifacts[RUN_ID] = [{"id": 31337, "name": "agent-gate-report",
                                     "expired": False}]
    work = artifact.parent.parent / "comment-job"
    work.mkdir(exist_ok=True)
    event = artifact.parent.parent / "workflow-run.json"
    event.write_text(json.dumps({
        "workflow_run": {"id": RUN_ID, "event": "pull_request", "conclusion": "failure",
                         "head_sha": "a" * 40, "head_branch": "feature",
                         "head_repository": {"full_name": "stranger/agent"}},
        "repository": {"full_name": REPO, **repository}}))
    return project.gate_ci(work, "--report", str(artifact / "gate-report.md"),
                           event="workflow_run", event_path=event, ref="refs/heads/main", env={
                               "GATE_MODE": "comment", "RUNNER_TEMP": str(artifact.parent),
                               "GIT_CONFIG_COUNT": "1",
                               "GIT_CONFIG_KEY_0": f"url.file://{project.origin}.insteadOf",
                               "GIT_CONFIG_VALUE_0": f"https://github.example/{REPO}.git"})


def the_comment(project: Project) -> str:
    (comment,) = project.gh.comments[PR]
    return str(comment["body"])


def test_the_fork_comment_job_publishes_the_prs_report_and_links_it(
        project: Project, tmp_path: Path) -> None:
    url = project.gh.enable_pages()
    artifact = fork_report(project, tmp_path)
    job = comment_job(project, artifact, repository={"private": False, "visibility": "public"})
    assert job.code == 0, job.stderr
    assert data_files(project) == [".nojekyll", "reports/pr-7/index.html"]
    page = f"{url}reports/pr-7/"
    assert job.outputs["report_url"] == page
    assert f"[The full report]({page})" in the_comment(project)
    assert "artifacts/" not in the_comment(project)
    # the fork's page, published only as the escaped text of a fully sandboxed frame
    published = origin(project, "show", f"{DATA}:reports/pr-7/index.html")
    assert published.count("<script") == 0 and published.count("<meta") == 4
    assert '<iframe sandbox="" ' in published and "srcdoc=\"&lt;!DOCTYPE html&gt;" in published
    assert "default-src 'none'" in published and "frame-src 'none'" in published
    assert "&lt;script&gt;alert(&#34;pwned&#34;)&lt;/script&gt;" in published
    assert 'http-equiv="refresh"' not in published  # only inside srcdoc, escaped
    job.no_secrets(project.gh)


def test_a_private_repository_keeps_the_artifact_link(project: Project,
                                                       tmp_path: Path) -> None:
    project.gh.enable_pages()
    artifact = fork_report(project, tmp_path)
    job = comment_job(project, artifact, repository={"private": True, "visibility": "private"})
    assert job.code == 0, job.stderr
    assert origin_has_no(project, DATA)
    link = f"https://github.example/{REPO}/actions/runs/{RUN_ID}/artifacts/31337"
    assert f"[The full report]({link})" in the_comment(project)
    assert "report_url" not in job.outputs
    assert "the repository is private: the PR's report is not published" in job.stderr


def test_without_pages_the_comment_links_the_artifact_and_says_so_once(
        project: Project, tmp_path: Path) -> None:
    artifact = fork_report(project, tmp_path)
    job = comment_job(project, artifact, repository={"private": False, "visibility": "public"})
    assert job.code == 0, job.stderr
    assert origin_has_no(project, DATA)
    link = f"https://github.example/{REPO}/actions/runs/{RUN_ID}/artifacts/31337"
    assert f"[The full report]({link})" in the_comment(project)
    notices = [ln for ln in job.stdout.splitlines() if ln.startswith("::notice")]
    assert len(notices) == 1 and "GitHub Pages is not enabled" in notices[0], job.stdout
    # Pages built from another branch serves none of the data branch's files: the same
    project.gh.comments.clear()
    project.gh.enable_pages(branch="gh-pages")
    job = comment_job(project, artifact, repository={"visibility": "public"})
    assert job.code == 0, job.stderr
    assert origin_has_no(project, DATA) and link in the_comment(project)
    assert "GitHub Pages serves gh-pages/, not agent-gate-data/" in job.stdout


def origin_has_no(project: Project, branch: str) -> bool:
    return origin(project, "branch", "--list", branch).strip() == ""


def test_the_token_never_reaches_the_published_files(project: Project, tmp_path: Path) -> None:
    project.gh.enable_pages()
    artifact = fork_report(project, tmp_path)
    page = artifact / "gate-report.html"
    page.write_text(page.read_text().replace("<footer>", f"<footer>{TOKEN}", 1))
    job = comment_job(project, artifact, repository={"visibility": "public"})
    assert job.code == 0, job.stderr
    assert TOKEN not in origin(project, "show", f"{DATA}:reports/pr-7/index.html")


# ----- in a browser, served as Pages serves the data branch ----------------------------------

@pytest.mark.browser
def test_published_pages_run_no_foreign_script_in_a_browser(project: Project,
                                                             tmp_path: Path) -> None:
    """The data branch's files served over HTTP at the site's path, as Pages serves them, in
    headless Chromium: main's report runs its own script and shows the agent's hostile output
    as text; the fork's page runs nothing, does not redirect, and stays in its frame."""
    executable = find_browser()
    project.gh.enable_pages()
    main = loud_main(project)
    assert refresh(project, main, store="branch").code == 0
    job = comment_job(project, fork_report(project, tmp_path), repository={
        "visibility": "public"})
    assert job.code == 0, job.stderr
    site = tmp_path / "site"
    (site / "agent").mkdir(parents=True)
    archive = tmp_path / "data.tar"
    origin(project, "archive", "--format=tar", "-o", str(archive), DATA)
    shutil.unpack_archive(archive, site / "agent")
    with _serve(site) as base, _chromium(executable) as browser:
        seen = _visit(browser, f"{base}/agent/reports/main/", expand=True)
        assert HOSTILE in seen["text"] and seen["count"].endswith("tasks")  # its script ran
        assert seen["dialogs"] == [] and seen["foreign"] == [], seen
        seen = _visit(browser, f"{base}/agent/reports/pr-7/")
        assert seen["url"] == f"{base}/agent/reports/pr-7/"  # the fork's refresh went nowhere
        assert seen["dialogs"] == [] and seen["foreign"] == [], seen
        assert "agent-gate" in seen["frame"]  # the fork's report reads, in its frame
        assert any("sandboxed" in e for e in seen["errors"]), seen["errors"]


def _serve(root: Path) -> Any:
    import contextlib
    import functools
    import http.server
    import threading

    @contextlib.contextmanager
    def serving() -> Any:
        handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(root))
        handler.log_message = lambda *a: None  # type: ignore[attr-defined]
        srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        thread = threading.Thread(target=srv.serve_forever, daemon=True)
        thread.start()
        try:
            yield f"http://127.0.0.1:{srv.server_address[1]}"
        finally:
            srv.shutdown()
            srv.server_close()
    return serving()


def _chromium(executable: str) -> Any:
    import contextlib
    import os

    @contextlib.contextmanager
    def launched() -> Any:
        from playwright.sync_api import sync_playwright

        with sync_playwright() as p:
            args = ["--no-sandbox"] if os.geteuid() == 0 else []
            browser = p.chromium.launch(executable_path=executable, args=args, headless=True)
            try:
                yield browser
            finally:
                browser.close()
    return launched()


def _visit(browser: Any, url: str, *, expand: bool = False) -> dict[str, Any]:
    """What a visitor's browser does with the page at ``url``: dialogs, console errors, every
    request that is not to the site itself (aborted), the page's text and its frame's."""
    site = url.split("/agent/")[0]
    context = browser.new_context()
    page = context.new_page()
    seen: dict[str, Any] = {"dialogs": [], "errors": [], "foreign": []}

    def route(r: Any) -> None:
        if r.request.url.startswith((site, "about:", "data:")):
            r.continue_()
        else:
            seen["foreign"].append(r.request.url)
            r.abort()

    context.route("**/*", route)
    page.on("dialog", lambda d: (seen["dialogs"].append(d.message), d.dismiss()))
    page.on("console", lambda m: seen["errors"].append(m.text))
    page.goto(url)
    page.wait_for_timeout(1000)
    if expand:
        page.get_by_role("button", name="expand all").click()
        seen["count"] = page.locator("#count").inner_text()
    seen["text"] = page.locator("body").inner_text()
    frames = page.frames[1:]
    seen["frame"] = frames[0].locator("body").inner_text() if frames else ""
    seen["url"] = page.url
    context.close()
    return seen


def test_a_suite_with_its_own_comment_id_publishes_beside_the_others(project: Project) -> None:
    """Two suites share the data branch (and a matrix over models one refresh each): each
    keeps its own page and badge, named as its artifact is."""
    project.gh.enable_pages()
    run = refresh(project, project.clone("main-ci"), store="branch",
                  env={"GATE_COMMENT_ID": "models/opus"})
    assert run.code == 0, run.stderr
    assert data_files(project) == [".nojekyll", "badge-models-opus.svg", "main/baseline.json",
                                   "main/gate-history.jsonl",
                                   "reports/main-models-opus/index.html"]
    assert run.outputs["report_url"].endswith("/reports/main-models-opus/")
