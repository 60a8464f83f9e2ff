"""GitHub as ``gate ci``'s forge (``_forge.Forge``): the one module of ``gate/ci`` that imports
``gate.github``. It only translates: the Actions environment is ``CIFacts`` as it is
(``CIEnvironment``), the runner's file and workflow commands the ``Sink`` (``ActionsIO``), and
each ``Forge`` call one call of GitHub's adapters (REST, the sticky and the deferred comment,
git with the token, the refresh's push loop). It decides nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path

from gate.ci._forge import (
    ChangeRequest,
    CIFacts,
    Comment,
    DataPush,
    DeferredComment,
    Forge,
    LabelSetter,
    PagesSite,
    Push,
    Sink,
)
from gate.core.config import CommentMode
from gate.errors import GateError
from gate.github import (
    ActionsIO,
    CIEnvironment,
    GitHubSession,
    PendingComment,
    Pooling,
    PullRequestInfo,
    Refresh,
    config_state,
    default_branch_file,
    ensure_base_ref,
    fetch_branch,
    find_pr_for_run,
    label_added_by,
    pages_site,
    pr_files,
    pr_labels,
    publish_files,
    remote_ref,
    repository_public,
    run_artifact_url,
    user_permission,
    write_pending,
)


def environment() -> CIFacts:
    """The CI environment this process runs in (GitHub Actions' variables, read once)."""
    return CIEnvironment.from_environ()


def connect(env: CIFacts, io: Sink | None, redact: Callable[[str], str],
            log: Callable[[str], None]) -> tuple[Sink, Forge]:
    """The job's sink (the runner's outputs, summary and annotations) and its forge."""
    assert isinstance(env, CIEnvironment), "the GitHub forge reads GitHub's environment"
    sink = io or ActionsIO(env.output, env.step_summary, redact=redact)
    return sink, GitHubForge(env, log)


class GitHubForge:
    """``Forge`` over one job's GitHub session (its REST client, made when first needed)."""

    def __init__(self, env: CIEnvironment, log: Callable[[str], None]) -> None:
        self.env = env
        self.session = GitHubSession(env, log)

    @property
    def _token(self) -> str | None:
        return self.env.token.get_secret_value() if self.env.token else None

    # ----- the change request

    def changed_files(self, number: int) -> list[str]:
        return pr_files(self.session.client, number)

    def labels(self, number: int) -> list[str]:
        return pr_labels(self.session.client, number)

    def label_setter(self, number: int, label: str) -> LabelSetter:
        client = self.session.client
        who = label_added_by(client, number, label)
        role, can_write = user_permission(client, who) if who else ("none", False)
        return LabelSetter(who, role, can_write)

    def find_change(self, head_repo: str, head_branch: str, head_sha: str) -> int | None:
        return find_pr_for_run(self.session.client, head_repo, head_branch, head_sha)

    def change_request(self, number: int, base_ref: str, head_ref: str,
                       head_sha: str) -> ChangeRequest:
        return PullRequestInfo(number=number, base_ref=base_ref, head_ref=head_ref,
                               head_sha=head_sha)

    # ----- this suite's comment

    def comment(self, number: int, comment_id: str, mode: CommentMode,
                author: str) -> Comment:
        return self.session.pr_comment(number, comment_id, mode, author)

    def defer_comment(self, comment: DeferredComment) -> Path:
        """The comment left for the action's posting step (``--post-comment``)."""
        path = self.session.pending_file()
        write_pending(path, PendingComment.model_validate({
            "pr": comment.number, "comment_id": comment.comment_id, "mode": comment.mode,
            "comment_author": comment.author, "state": comment.state, "body": comment.body,
            "create": comment.create, "artifact": comment.artifact,
            "html_name": comment.html_name}))
        return path

    # ----- git with the token

    def fetch_branch(self, root: Path, branch: str) -> str | None:
        return fetch_branch(root, branch, token=self._token, server_url=self.env.server_url)

    def ensure_base_ref(self, root: Path, branch: str) -> str:
        return ensure_base_ref(root, branch, token=self._token, server_url=self.env.server_url)

    def remote_ref(self, branch: str) -> str:
        return remote_ref(branch)

    def git_state(self, root: Path) -> str:
        return config_state(root)

    def push_data(self, push: DataPush, log: Callable[[str], None]) -> Push:
        return Refresh(root=push.root, place=push.place, results=push.results,
                       pooling=Pooling(pool=push.pool, same_agent=push.same_agent),
                       token=self._token, server_url=self.env.server_url,
                       source_branch=push.source_branch, guard=push.guard, log=log,
                       seed=push.seed, published=push.published)

    def default_branch_file(self, path: str) -> str | None:
        return default_branch_file(self.session.client, path)

    # ----- the data branch's pages (GitHub Pages)

    def can_ask(self) -> bool:
        try:
            self.session.client  # noqa: B018  (made here: a repository and a token)
        except GateError:
            return False
        return True

    def repository_public(self) -> tuple[bool, str]:
        return repository_public(self.env, self.session.client if self.can_ask() else None)

    def pages_site(self) -> PagesSite | None:
        return pages_site(self.session.client)

    def publish_files(self, files: Mapping[str, str], branch: str, message: str) -> str:
        return publish_files(files, branch, message, env=self.env, token=self._token)

    def run_artifact_url(self, run_id: str, name: str) -> str | None:
        return run_artifact_url(self.session.client, self.env, run_id, name)

    def close(self) -> None:
        self.session.close()
