"""This suite's comment on the pull request: which comment it is, when it is created, and what
it shows while a run is under way or after one was cancelled.

- **Which**: the comment carrying this suite's marker (``comment-id``, by default the config
  path) that the token's identity wrote, so two suites — or a matrix over models — in one
  repository keep one comment each. The default config's suite adopts a comment with the old
  id-less marker (it is rewritten with the new one).
- **When** (``comment-mode``; ``gate.ci``'s publisher decides): ``always`` creates one on every
  run; ``on-regression`` only when the check blocks or would block (a regression, accepted or
  not; an inconclusive or failed gate); ``on-change`` also when a pass shows a change (a
  metric moved significantly either way, a task newly fails or newly passes); ``never``
  touches nothing. Whatever the mode
  (``never`` aside), a comment that exists is always kept current: a stale verdict is never
  left standing.
- **While running**: at the start of a PR run, an existing comment says "running for <sha>…"
  (a new one is created for it only in ``always``); a run cancelled during the suite says so.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from gate.core.config import DEFAULT_COMMENT_ID, CommentMode, comment_mode
from gate.github._comment import (
    MARKER_PREFIX,
    CommentRef,
    find_comment,
    marker,
    update_comment,
    upsert_comment,
)
from gate.github._rest import GitHubClient, GitHubError

__all__ = ["CommentMode", "PRComment", "comment_mode"]  # the mode's rules: gate.core.config


@dataclass
class PRComment:
    """This suite's comment on one pull request, found once and then edited by id."""

    client: Callable[[], GitHubClient]
    author: Callable[[], str]
    number: int
    comment_id: str
    mode: CommentMode
    known: int | None = None  # the comment's id once found or made in this run

    @property
    def marker(self) -> str:
        return marker(self.comment_id)

    @property
    def legacy(self) -> bool:
        """Whether this suite adopts a comment with the old id-less marker."""
        return self.comment_id == DEFAULT_COMMENT_ID

    def post(self, markdown: str, *, create: bool) -> CommentRef | None:
        """Show ``markdown`` in the comment: edit it, or create it when ``create``. None when
        there is none and none was made (or the mode is ``never``)."""
        if self.mode == "never":
            return None
        if self.known is not None:
            try:
                return update_comment(self.client(), self.number, self.known, markdown,
                                      marker=self.marker)
            except GitHubError as exc:
                if exc.status != 404:  # deleted meanwhile: look again
                    raise
                self.known = None
        ref = upsert_comment(self.client(), self.number, markdown, author=self.author(),
                             marker=self.marker, legacy=self.legacy, create=create)
        if ref is not None:
            self.known = ref.id
        return ref

    def find(self) -> dict | None:
        """This suite's comment as GitHub has it now (then edited by id), or None (none
        exists, or the mode is ``never``)."""
        if self.mode == "never":
            return None
        found = find_comment(self.client(), self.number, author=self.author(),
                             marker=self.marker, legacy=self.legacy)
        if found is not None:
            self.known = int(found["id"])
        return found

    def text(self) -> str | None:
        """This suite's comment's Markdown as it was posted (its marker line dropped), or None
        when there is none (:meth:`find`)."""
        found = self.find()
        if found is None:
            return None
        lines = str(found.get("body") or "").split("\n")
        return "\n".join(lines[1:] if lines and lines[0].startswith(MARKER_PREFIX) else lines)
