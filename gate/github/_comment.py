"""One sticky comment per pull request, found again by a hidden marker and its author.

A PR that is pushed twenty times must show one up-to-date report, not twenty. The comment is
found across *every* page of the PR's comments (a busy PR easily has more than one page) by
its marker **and** by its author — the token's own identity — and edited in place; it is
created only when none exists. Anyone can paste the marker into a comment: such a comment is
not ours, and is never edited.

Also here: who the token is, the PR's labels and who added one, and a user's permission.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

from gate.core.config import DEFAULT_COMMENT_ID
from gate.github._rest import GitHubClient, GitHubError

#: the marker of the gate's comments before comment ids (one comment per PR); a comment that
#: carries it is still found by the suite of the default config (``gate.toml`` at the root)
MARKER = "<!-- agent-gate:comment -->"
#: what every gate marker starts with
MARKER_PREFIX = "<!-- agent-gate:comment"
# any gate marker, of any id, and near-misses: none may survive inside a report's text
_ANY_MARKER = re.compile(r"<!--\s*agent-gate:comment\b.*?-->", re.DOTALL)
_UNSAFE_ID = re.compile(r"[^A-Za-z0-9._/:@+=-]")
#: who the Actions ``GITHUB_TOKEN`` writes as
ACTIONS_BOT = "github-actions[bot]"
#: roles that may accept a regression (``role_name`` of the permission endpoint)
WRITE_ROLES = frozenset({"admin", "maintain", "write"})
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


def marker(comment_id: str) -> str:
    """The hidden marker of one suite's comment: ``<!-- agent-gate:comment id=… -->``."""
    return f"{MARKER_PREFIX} id={comment_id} -->"


def config_repo_path(config: str | Path | None, root: Path) -> str:
    """The config's path relative to the repository root (``gate.toml``, ``suites/fast.toml``;
    its name when it lies outside the root)."""
    path = Path(config or DEFAULT_COMMENT_ID)
    absolute = path if path.is_absolute() else Path.cwd() / path
    try:
        return absolute.resolve().relative_to(root.resolve()).as_posix()
    except (ValueError, OSError):
        return path.name


def default_comment_id(config: str | Path | None, root: Path) -> str:
    """A suite's comment id when none is configured: its config path relative to the repository
    root (:func:`config_repo_path`), so two suites in one repository differ."""
    text = _UNSAFE_ID.sub("-", config_repo_path(config, root)).lstrip("._/:@+=-")[:100]
    return text or DEFAULT_COMMENT_ID


def comment_body(markdown: str, marker: str = MARKER) -> str:
    """The marker first, then the report, cut to GitHub's limit.

    Any gate marker inside the report (of any id) is removed, so text from elsewhere (an
    uploaded report in the two-workflow pattern) cannot plant a second "sticky" comment.
    """
    text = _ANY_MARKER.sub("", markdown.replace(marker, ""))
    body = f"{marker}\n{text}"
    if len(body) > MAX_BODY:
        body = body[: MAX_BODY - len(_TRUNCATED) - 1] + _TRUNCATED
    return body


def token_login(client: GitHubClient, configured: str = "") -> tuple[str, str]:
    """Who the token writes comments as, and how we know: ``(login, how)``.

    A configured login wins (a GitHub App's token: ``my-app[bot]``). An installation token —
    the Actions ``GITHUB_TOKEN`` — cannot ask ``GET /user`` (GitHub answers 403 "Resource not
    accessible by integration"), so it is taken to be ``github-actions[bot]``. Any other
    token (a personal access token) is asked.
    """
    if configured:
        return configured, "configured (comment-author)"
    if client.installation_token:
        return ACTIONS_BOT, "an installation token: the Actions token"
    try:
        resp = client.request("GET", "/user", what="ask GitHub whose token this is")
    except GitHubError as exc:
        if exc.status == 403:  # an integration's token in a format we do not know
            return ACTIONS_BOT, "GitHub would not say (403): taken as the Actions token"
        raise
    data = resp.json()
    login = data.get("login") if isinstance(data, dict) else None
    if not isinstance(login, str) or not login:
        raise GitHubError("GitHub's answer to GET /user names no login: set comment-author")
    return login, "GET /user"


def _author(comment: dict[str, Any]) -> str:
    user = comment.get("user")
    return str(user.get("login") or "") if isinstance(user, dict) else ""


def _marked(body: str, marker: str) -> bool:
    """``body`` carries exactly ``marker`` (``id=a`` is not ``id=ab``)."""
    return body.split("\n", 1)[0].strip() == marker


def find_comment(client: GitHubClient, pr_number: int, *, author: str,
                 marker: str = MARKER, legacy: bool = False) -> dict | None:
    """The first comment carrying ``marker`` that ``author`` wrote, searching every page.

    With ``legacy``, a comment of ``author``'s with the old id-less :data:`MARKER` is the
    answer when none carries ``marker``: updating it migrates it to the new marker.
    """
    path = client.repo_path(f"issues/{pr_number}/comments")
    old: dict | None = None
    for comment in client.paginate(path, what=f"list the comments of PR #{pr_number}",
                                   permission="pull-requests: read"):
        if not (isinstance(comment, dict) and _author(comment).lower() == author.lower()):
            continue
        body = str(comment.get("body") or "")
        if _marked(body, marker) or (marker == MARKER and MARKER in body):
            return comment
        if legacy and old is None and _marked(body, MARKER):
            old = comment
    return old


def update_comment(client: GitHubClient, pr_number: int, comment_id: int,
                   markdown: str, *, marker: str = MARKER) -> CommentRef:
    """Edit the comment ``comment_id`` (found earlier in this run)."""
    resp = client.request(
        "PATCH", client.repo_path(f"issues/comments/{comment_id}"),
        json={"body": comment_body(markdown, marker)},
        what=f"update the gate comment on PR #{pr_number}", permission=_PERMISSION)
    data = resp.json()
    return CommentRef(id=int(data["id"]), url=str(data.get("html_url") or ""), created=False)


def upsert_comment(client: GitHubClient, pr_number: int, markdown: str, *, author: str,
                   marker: str = MARKER, legacy: bool = False,
                   create: bool = True) -> CommentRef | None:
    """Update the PR's gate comment (``author``'s, carrying ``marker``), or create it — only
    when ``create``. Returns its id and URL; None when there was none and none was made."""
    existing = find_comment(client, pr_number, author=author, marker=marker, legacy=legacy)
    if existing is not None:
        return update_comment(client, pr_number, int(existing["id"]), markdown, marker=marker)
    if not create:
        return None
    # a POST that got a 5xx may have landed: the retry looks for it first, never posts twice
    data = client.create(
        client.repo_path(f"issues/{pr_number}/comments"),
        json={"body": comment_body(markdown, marker)},
        what=f"write comments on PR #{pr_number}", permission=_PERMISSION,
        find=lambda: find_comment(client, pr_number, author=author, marker=marker,
                                  legacy=legacy))
    return CommentRef(id=int(data["id"]), url=str(data.get("html_url") or ""), created=True)


def pr_labels(client: GitHubClient, pr_number: int) -> list[str]:
    """The PR's labels now (the event payload is stale when a job is re-run after labelling)."""
    path = client.repo_path(f"issues/{pr_number}/labels")
    return [str(lb["name"]) for lb in client.paginate(
        path, what=f"read the labels of PR #{pr_number}", permission="pull-requests: read")
        if isinstance(lb, dict) and "name" in lb]


def label_added_by(client: GitHubClient, pr_number: int, label: str) -> str | None:
    """Who added ``label`` last: the actor of the PR's latest ``labeled`` event for it."""
    path = client.repo_path(f"issues/{pr_number}/events")
    actor: str | None = None
    for ev in client.paginate(path, what=f"read the events of PR #{pr_number}",
                              permission="pull-requests: read"):
        if not (isinstance(ev, dict) and ev.get("event") == "labeled"):
            continue
        name = (ev.get("label") or {}).get("name")
        if isinstance(name, str) and name.casefold() == label.casefold():
            who = (ev.get("actor") or {}).get("login")
            actor = str(who) if who else None  # events come oldest first: keep the last
    return actor


def user_permission(client: GitHubClient, login: str) -> tuple[str, bool]:
    """``login``'s role on the repository and whether it can write: ``("maintain", True)``.

    ``role_name`` may be an organisation's custom role; the legacy ``permission`` field says
    what it amounts to (admin, write, read, none). An account GitHub does not know as a user
    (a bot) is ``("none", False)``.
    """
    try:
        resp = client.request(
            "GET", client.repo_path(f"collaborators/{quote(login, safe='')}/permission"),
            what=f"read the repository permission of {login}")
    except GitHubError as exc:
        if exc.status == 404:
            return "none", False
        raise
    data = resp.json()
    if not isinstance(data, dict):
        return "none", False
    legacy = str(data.get("permission") or "none")
    role = str(data.get("role_name") or legacy)
    return role, role in WRITE_ROLES or legacy in ("admin", "write")


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
            client.repo_path("pulls"), query={"state": "open", "head": f"{owner}:{head_branch}"},
            what="find the pull request of the triggering run",
            permission="pull-requests: read"):
        if isinstance(pr, dict) and (pr.get("head") or {}).get("sha") == head_sha:
            return int(pr["number"])
    return None
