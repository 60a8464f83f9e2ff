"""One ``gate ci`` job's connection to GitHub: the REST client, made when first needed and
closed once, and the things the job learns from it once (whose comments are the gate's, the
suite's comment once found). An adapter: it decides nothing about the run.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from gate.errors import BadInput
from gate.github._comment import token_login
from gate.github._environment import CIEnvironment
from gate.github._rest import GitHubClient
from gate.github._sticky import CommentMode, PRComment


class GitHubSession:
    """The job's REST client and what it has learnt; ``log`` hears what it found out."""

    def __init__(self, env: CIEnvironment, log: Callable[[str], None]) -> None:
        self.env = env
        self._log = log
        self._client: GitHubClient | None = None
        self._author: str | None = None
        self._comments: dict[tuple[int, str, str], PRComment] = {}
        self._pending: Path | None = None

    def pending_file(self) -> Path:
        """The job's deferred-comment file (gate/github/_deferred.py), made once: the
        "running" comment left in it is replaced by the final one."""
        if self._pending is None:
            from gate.github._deferred import pending_path

            self._pending = pending_path()
        return self._pending

    @property
    def client(self) -> GitHubClient:
        if self._client is None:
            if not self.env.repository:
                raise BadInput("GITHUB_REPOSITORY is not set: gate ci talks to GitHub only "
                               "inside Actions (locally: `gate run` and `gate compare`)")
            token = self.env.token.get_secret_value() if self.env.token else None
            if not token:
                raise BadInput("no GitHub token: pass `github-token` to the action (default "
                               "`${{ github.token }}`) or set GITHUB_TOKEN; or --no-comment")
            self._client = GitHubClient(self.env.api_url, self.env.repository, token)
        return self._client

    def author(self, configured: str) -> str:
        """The login whose marker comment is the gate's (found once per job)."""
        if self._author is None:
            login, how = token_login(self.client, configured)
            self._log(f"gate ci: the gate's comment is the one {login} wrote ({how})")
            self._author = login
        return self._author

    def pr_comment(self, number: int, comment_id: str, mode: CommentMode,
                   configured_author: str) -> PRComment:
        """This suite's comment on PR ``number``: one object per job, so a comment found (or
        made) once is edited by id from then on."""
        key = (number, comment_id, mode)
        if key not in self._comments:
            self._comments[key] = PRComment(
                client=lambda: self.client, author=lambda: self.author(configured_author),
                number=number, comment_id=comment_id, mode=mode)
        return self._comments[key]

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
