"""Requests GitHub may have carried out without saying so, and queries that must survive any
branch name: against the fake GitHub on loopback, then through the real `gate ci`.

GitHub sometimes answers 5xx to a request it has already carried out (a backend times out
after the write). Resending a GET or a PATCH is harmless; resending the POST that creates the
PR comment would leave two. The fake models it: ``fail_next(..., landed=True)`` creates the
comment, then answers 502.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from gate.github import MARKER, GitHubClient, GitHubError, upsert_comment
from gate.github._comment import find_pr_for_run
from tests.helpers.ci import PR, Project, _break_agent, _marker_comments, sh
from tests.helpers.fake_github import FakeGitHub

TOKEN = "ghs_supersecrettoken123456"
BOT = "github-actions[bot]"


@pytest.fixture
def gh() -> Iterator[FakeGitHub]:
    with FakeGitHub(token=TOKEN) as fake:
        yield fake


def client(fake: FakeGitHub, sleeps: list[float], **kw: object) -> GitHubClient:
    return GitHubClient(fake.url, fake.repo, TOKEN, sleep=sleeps.append, **kw)  # type: ignore[arg-type]


def test_a_post_that_landed_before_its_5xx_is_not_posted_again(gh: FakeGitHub) -> None:
    gh.fail_next("POST", "/comments", 502, landed=True)
    sleeps: list[float] = []
    ref = upsert_comment(client(gh, sleeps), 7, "hello", author=BOT)
    (comment,) = gh.comments[7]
    assert comment["body"] == f"{MARKER}\nhello"
    assert ref.id == comment["id"] and ref.url == comment["html_url"] and ref.created
    assert len(gh.calls("POST", "/comments")) == 1
    # looked for it before posting, and again after the 502 (after the usual backoff)
    assert len(gh.calls("GET", "/comments")) == 2
    assert sleeps == [1.0]


def test_a_post_that_did_not_land_is_retried_after_looking(gh: FakeGitHub) -> None:
    gh.fail_next("POST", "/comments", 503, times=2, headers={"retry-after": "2"})
    sleeps: list[float] = []
    ref = upsert_comment(client(gh, sleeps), 7, "hello", author=BOT)
    (comment,) = gh.comments[7]
    assert ref.id == comment["id"]
    assert len(gh.calls("POST", "/comments")) == 3
    assert sleeps == [2.0, 2.0]  # GitHub's retry-after wins on a POST's 5xx too


def test_a_post_that_keeps_failing_gives_up_clearly(gh: FakeGitHub) -> None:
    gh.fail_next("POST", "/comments", 502, times=10)
    sleeps: list[float] = []
    with pytest.raises(GitHubError, match=r"HTTP 502") as exc:
        upsert_comment(client(gh, sleeps, max_retries=2), 7, "hello", author=BOT)
    assert exc.value.maybe_landed and exc.value.transient
    assert len(gh.calls("POST", "/comments")) == 3 and 7 not in gh.comments


def test_request_never_resends_a_post_by_itself(gh: FakeGitHub) -> None:
    """Any other POST (not through `create`) fails after one 5xx instead of posting twice."""
    gh.fail_next("POST", "/comments", 502, landed=True)
    sleeps: list[float] = []
    c = client(gh, sleeps)
    with pytest.raises(GitHubError) as exc:
        c.request("POST", c.repo_path("issues/7/comments"), json={"body": "x"}, what="post")
    assert exc.value.maybe_landed
    assert len(gh.comments[7]) == 1 and sleeps == []


def test_a_post_to_nowhere_is_retried_it_never_left() -> None:
    """Connection refused: the request never reached GitHub, so resending it is safe."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    sleeps: list[float] = []
    c = GitHubClient(f"http://127.0.0.1:{port}", "acme/agent", TOKEN, sleep=sleeps.append,
                     max_retries=2, timeout=2)
    with pytest.raises(GitHubError, match="cannot reach the GitHub API") as exc:
        c.request("POST", c.repo_path("issues/7/comments"), json={"body": "x"}, what="post")
    assert not exc.value.maybe_landed and sleeps == [1.0, 2.0]


@pytest.mark.parametrize("branch", ["feat#2", "fix/a+b", "x&state=closed", "100%-done"])
def test_the_fork_branch_lookup_is_url_encoded(gh: FakeGitHub, branch: str) -> None:
    """`head=owner:branch` reaches GitHub intact: `#` would cut the query, `&` add a field,
    `+` become a space, `%` start an escape."""
    gh.pulls = [{"number": 99, "head": {"sha": "f" * 40}, "_head": "stranger:feat"},
                {"number": 99, "head": {"sha": "a" * 40}, "_head": "stranger:x"},
                {"number": 7, "head": {"sha": "a" * 40}, "_head": f"stranger:{branch}"}]
    c = client(gh, [])
    assert find_pr_for_run(c, "stranger/agent", branch, "a" * 40) == 7
    (call,) = gh.calls("GET", "/pulls$")
    assert call.query["head"] == [f"stranger:{branch}"] and call.query["state"] == ["open"]


# ----- through gate ci ----------------------------------------------------------------------

@pytest.mark.slow
def test_gate_ci_posts_one_comment_when_github_answers_502_after_creating_it(
        project: Project) -> None:
    project.gh.fail_next("POST", "/comments", 502, landed=True)
    run = project.gate_ci(project.pr_branch("feature", _break_agent))
    assert run.code == 1, run.stderr
    (comment,) = _marker_comments(project.gh)
    assert len(project.gh.comments[PR]) == 1
    assert run.outputs["comment_url"] == comment["html_url"]
    assert run.outputs["comment_id"] == str(comment["id"])
    assert "was not posted" not in run.stdout


@pytest.mark.slow
def test_gate_ci_comments_on_a_fork_pr_whose_branch_needs_encoding(project: Project) -> None:
    branch = "fix#1&state=closed+more"
    gh = project.gh
    gh.pulls = [{"number": 99, "head": {"sha": "a" * 40}, "_head": "stranger:fix"},
                {"number": PR, "head": {"sha": "a" * 40}, "_head": f"stranger:{branch}"}]
    work = project.tmp / "comment-job"
    work.mkdir()
    (work / "gate-report.md").write_text("### agent-gate: skipped\n\nfrom the fork\n")
    event = project.tmp / "workflow-run.json"
    event.write_text(json.dumps({"workflow_run": {
        "event": "pull_request", "head_sha": "a" * 40, "head_branch": branch,
        "head_repository": {"full_name": "stranger/agent"}, "pull_requests": []}}))
    run = project.gate_ci(work, event="workflow_run", event_path=event, ref="refs/heads/main")
    assert run.code == 0, run.stderr
    assert gh.comments.keys() == {PR} and run.outputs["pr_number"] == str(PR)


@pytest.mark.slow
def test_the_comment_footer_names_the_prs_head_not_the_merge_commit(project: Project) -> None:
    """A pull_request run checks out refs/pull/N/merge, a commit no one pushed; the footer
    names the head commit the author knows (from the event payload)."""
    ci = project.pr_branch("feature", _break_agent)
    head = sh(ci, "git", "rev-parse", "HEAD").strip()
    # what actions/checkout gives a pull_request run: a merge commit on top of the head
    sh(ci, "git", "checkout", "-q", "--detach")
    sh(ci, "git", "commit", "-q", "--allow-empty", "-m", "Merge feature into main")
    merge = sh(ci, "git", "rev-parse", "HEAD").strip()
    event = project.event(ci)
    payload = json.loads(event.read_text())
    payload["pull_request"]["head"]["sha"] = head
    event.write_text(json.dumps(payload))
    run = project.gate_ci(ci, event_path=event)
    assert run.code == 1, run.stderr
    (comment,) = _marker_comments(project.gh)
    footer = comment["body"].strip().splitlines()[-1]
    assert f"this PR {head[:12]}" in footer, footer
    assert merge[:12] not in comment["body"]
    # the results still record what was run: the merge commit
    assert json.loads(Path(run.outputs["results_path"]).read_text())["commit"] == merge
