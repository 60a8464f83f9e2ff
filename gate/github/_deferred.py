"""The action's PR comment, posted by a later step than the verdict's.

The action's ``gate ci`` step judges and writes the HTML report; the comment that links to
the report's artifact can only be posted once the artifact exists. So with ``--defer-comment``
the final comment is left in a file under ``RUNNER_TEMP`` (this module's
:class:`PendingComment`); the action uploads the report, then ``gate ci --post-comment FILE``
(with upload-artifact's ``artifact-id``) posts it with a link to the artifact.

The file is written before the suite starts (state ``running``, the moment the comment says
"running"), so a gate step that dies without a verdict (a crash, the runner killing it) still
has its comment corrected by the posting step: it says the run stopped, never "running"
forever. A run cancelled during the suite writes ``cancelled`` (its comment already says so).
"""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from gate._files import atomic_write_text, describe_validation_error, read_bytes
from gate.errors import BadInput, GateError
from gate.github._comment import CommentRef, token_login
from gate.github._environment import CIEnvironment
from gate.github._outputs import ActionsIO
from gate.github._rest import GitHubClient
from gate.github._sticky import CommentMode, PRComment
from gate.secrets import Redactor

PENDING_LIMIT = 1_000_000  # bytes: a comment is at most 65,536 characters
STOPPED = ("the gate step stopped before it reached a verdict (it crashed or was killed): "
           "see the CI run's log. The previous verdict no longer applies.")
_ARTIFACT_ID = re.compile(r"[0-9]{1,20}")


class PendingComment(BaseModel):
    """What the posting step needs: which comment, what it says, and whether to create it."""

    model_config = ConfigDict(extra="forbid")

    version: Literal[1] = 1
    pr: int = Field(gt=0)
    comment_id: str = Field(min_length=1, max_length=200)
    mode: CommentMode
    comment_author: str = ""
    state: Literal["running", "final", "cancelled"]
    body: str | None = None
    create: bool = False
    artifact: str = ""  # the report artifact's name, for the link's text
    html_name: str = ""  # the report's file name inside the artifact


def pending_path() -> Path:
    """A new file for this run's pending comment, under RUNNER_TEMP (outside the workspace
    that the PR's code runs in), unique so that two suites in one job never share one."""
    fd, name = tempfile.mkstemp(prefix="agent-gate-comment-", suffix=".json",
                                dir=os.environ.get("RUNNER_TEMP") or None)
    os.close(fd)
    return Path(name)


def write_pending(path: Path, pending: PendingComment) -> None:
    atomic_write_text(path, pending.model_dump_json())


def read_pending(path: Path) -> PendingComment:
    """The pending comment: a regular file (never through a symlink), bounded, valid."""
    data = read_bytes(path, PENDING_LIMIT, "pending comment", nofollow=True)
    try:
        return PendingComment.model_validate_json(data)
    except ValidationError as exc:
        raise BadInput(f"{path}: {describe_validation_error(exc)}") from None


def artifact_url(env: CIEnvironment, artifact_id: str) -> str | None:
    """The artifact's page on this server (GHES too): the run's, by upload-artifact's id.
    None without a valid id: the link never points at an artifact that was not uploaded."""
    artifact_id = artifact_id.strip()
    if not (_ARTIFACT_ID.fullmatch(artifact_id) and env.repository and env.run_id.isdigit()):
        return None
    return f"{env.server_url}/{env.repository}/actions/runs/{env.run_id}/artifacts/{artifact_id}"


def body_for(pending: PendingComment, env: CIEnvironment, artifact_id: str) -> str | None:
    """The comment's text: the verdict with the report's link, or (no verdict was written)
    that the gate stopped; None when there is nothing to post (a cancelled run)."""
    from gate.report import link_url, md, render_body, with_report_link

    if pending.state == "cancelled":
        return None
    if pending.state == "running" or pending.body is None:
        return render_body("failure.md.j2", what="error", reason=md(STOPPED, 4000),
                           run_url=link_url(env.run_url))
    url = artifact_url(env, artifact_id)
    if url is None:
        return pending.body
    footer = render_body("artifact.md.j2", url=link_url(url), artifact=pending.artifact,
                         file=pending.html_name)
    return with_report_link(pending.body, url, footer)


def post_deferred(path: Path, env: CIEnvironment, artifact_id: str = "",
                  io: ActionsIO | None = None,
                  log: Callable[[str], None] = lambda line: None) -> int:
    """``gate ci --post-comment FILE``: post the pending comment. A comment GitHub refuses is
    a warning (the verdict was the gate step's, and it stands); exit 0."""
    redact = Redactor(env.secrets)
    io = io or ActionsIO(env.output, env.step_summary, redact=redact)
    for secret in env.secrets:
        io.add_mask(secret)
    pending = read_pending(path)
    body = body_for(pending, env, artifact_id)
    if body is None:
        log("gate ci: the run was cancelled during the suite; its comment says so already")
        io.set_outputs({"comment_url": "", "comment_id": ""})
        return 0
    token = env.token.get_secret_value() if env.token else None
    if not (token and env.repository):
        raise BadInput("--post-comment needs GITHUB_REPOSITORY and a token (`github-token`)")
    create = pending.create and pending.state == "final"
    ref: CommentRef | None = None
    client = GitHubClient(env.api_url, env.repository, token)

    def author() -> str:
        return token_login(client, pending.comment_author)[0]

    comment = PRComment(client=lambda: client, author=author, number=pending.pr,
                        comment_id=pending.comment_id, mode=pending.mode)
    try:
        ref = comment.post(redact(body), create=create)
    except GateError as exc:
        io.warning(f"the PR comment was not posted (the verdict stands): {redact(str(exc))}",
                   title="agent-gate")
    finally:
        client.close()
    if ref is not None:
        log(f"gate ci: {'created' if ref.created else 'updated'} the PR comment {ref.url}"
            + (" (with the report's link)" if artifact_url(env, artifact_id) else ""))
    io.set_outputs({"comment_url": ref.url if ref else "", "comment_id": ref.id if ref else ""})
    return 0
