"""One sticky comment per pull request, found again by a hidden marker.

A PR that is pushed twenty times must show one up-to-date report, not twenty. The comment is
found by its marker across *every* page of the PR's comments (a busy PR easily has more than
one page), and edited in place; it is created only when none exists.
"""

from __future__ import annotations

from dataclasses import dataclass

from gate.github._rest import GitHubClient

MARKER = "<!-- agent-gate:comment -->"
# GitHub rejects comment bodies over 65,536 characters; keep room for the marker and the note.
MAX_BODY = 65_536
_TRUNCATED = ("\n\n… the report was cut to fit GitHub's comment limit; the full report is in "
              "the job's step summary.\n")
_PERMISSION = "pull-requests: write"


@dataclass(frozen=True)
class CommentRef:
    id: int
    url: str
    created: bool


def comment_body(markdown: str, marker: str = MARKER) -> str:
    """The marker first, then the report, cut to GitHub's limit.

    Any copy of the marker inside the report is removed, so text from elsewhere (an uploaded
    report in the two-workflow pattern) cannot plant a second "sticky" comment.
    """
    text = markdown.replace(marker, "")
    body = f"{marker}\n{text}"
    if len(body) > MAX_BODY:
        body = body[: MAX_BODY - len(_TRUNCATED) - 1] + _TRUNCATED
    return body


def find_comment(client: GitHubClient, pr_number: int, marker: str = MARKER) -> dict | None:
    """The first comment carrying ``marker``, searching every page."""
    path = client.repo_path(f"issues/{pr_number}/comments")
    for comment in client.paginate(path, what=f"list the comments of PR #{pr_number}",
                                   permission="pull-requests: read"):
        if isinstance(comment, dict) and marker in str(comment.get("body") or ""):
            return comment
    return None


def upsert_comment(client: GitHubClient, pr_number: int, markdown: str,
                   marker: str = MARKER) -> CommentRef:
    """Update the PR's gate comment, or create it. Returns its id and URL."""
    body = comment_body(markdown, marker)
    existing = find_comment(client, pr_number, marker)
    if existing is not None:
        resp = client.request(
            "PATCH", client.repo_path(f"issues/comments/{existing['id']}"),
            json={"body": body}, what=f"update the gate comment on PR #{pr_number}",
            permission=_PERMISSION)
        created = False
    else:
        resp = client.request(
            "POST", client.repo_path(f"issues/{pr_number}/comments"), json={"body": body},
            what=f"write comments on PR #{pr_number}", permission=_PERMISSION)
        created = True
    data = resp.json()
    return CommentRef(id=int(data["id"]), url=str(data.get("html_url") or ""), created=created)


def pr_labels(client: GitHubClient, pr_number: int) -> list[str]:
    """The PR's labels now (the event payload is stale when a job is re-run after labelling)."""
    path = client.repo_path(f"issues/{pr_number}/labels")
    return [str(lb["name"]) for lb in client.paginate(
        path, what=f"read the labels of PR #{pr_number}", permission="pull-requests: read")
        if isinstance(lb, dict) and "name" in lb]


def pr_files(client: GitHubClient, pr_number: int) -> list[str]:
    """Paths the PR changes, as GitHub computes them (against the merge base)."""
    path = client.repo_path(f"pulls/{pr_number}/files")
    return [str(f["filename"]) for f in client.paginate(
        path, what=f"list the files of PR #{pr_number}", permission="pull-requests: read")
        if isinstance(f, dict) and "filename" in f]


def find_pr_for_run(client: GitHubClient, head_repo: str, head_branch: str,
                    head_sha: str) -> int | None:
    """The open PR whose head is ``head_sha`` — taken from the trusted ``workflow_run`` event,
    never from an uploaded artifact, so a fork cannot aim the comment at another PR."""
    owner = head_repo.split("/", 1)[0]
    for pr in client.paginate(
            client.repo_path("pulls") + f"?state=open&head={owner}:{head_branch}",
            what="find the pull request of the triggering run",
            permission="pull-requests: read"):
        if isinstance(pr, dict) and (pr.get("head") or {}).get("sha") == head_sha:
            return int(pr["number"])
    return None
