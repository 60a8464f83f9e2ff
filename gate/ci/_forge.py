"""The forge, as ``gate ci``'s stages see it: a port. Every stage module depends on this and
on nothing of a forge's own; one module (``_github``) adapts GitHub to it, and a GitLab
merge-request adapter would be a second such module (docs/architecture.md, "How to add a
forge").

What a stage needs of a forge, and no more:

- ``CIFacts``: the CI environment's facts (the event and its payload, the branch, the commit,
  the run's URL, the token and the model key as secrets, whether the change request's run is
  given secrets). The event names and payload are GitHub's vocabulary (``pull_request``,
  ``push``, ``workflow_run``, ...): another forge's adapter says its triggers in these words.
- ``ChangeRequest``: the pull/merge request under test (number, base and head, fork?).
- ``Sink``: the job's outputs, step summary, annotations and masks.
- ``Forge``: the change request's files, labels and who set one; find a change request by its
  head; this suite's comment, upserted or left for a later step; git with the token (fetch a
  branch, the base ref, push the refreshed baseline to a branch); the checkout's git state;
  the data branch's pages (whether the repository is public, the Pages site that serves the
  branch, a push of published files) and a run's report artifact.

The values a stage receives are read-only (protocols of read-only properties, or frozen
dataclasses); a stage never changes what the forge gave it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

if TYPE_CHECKING:
    from pydantic import SecretStr

    from gate.core.config import CommentMode
    from gate.core.results import Results
    from gate.pool.refresh import Outcome, Place, Pooled, State


class ChangeRequest(Protocol):
    """The pull (merge) request under test."""

    @property
    def number(self) -> int: ...
    @property
    def base_ref(self) -> str: ...
    @property
    def head_ref(self) -> str: ...
    @property
    def head_sha(self) -> str: ...
    @property
    def head_repo(self) -> str: ...  # "owner/name" of the head; another than ``repository``: a fork
    @property
    def labels(self) -> tuple[str, ...]: ...  # as the event saw them (``Forge.labels``: now)


class CIFacts(Protocol):
    """What the stages read of the CI environment (typed and validated by the adapter)."""

    @property
    def event_name(self) -> str: ...
    @property
    def event(self) -> dict[str, Any]: ...  # the trigger's payload
    @property
    def repository(self) -> str: ...
    @property
    def server_url(self) -> str: ...
    @property
    def run_id(self) -> str: ...
    @property
    def sha(self) -> str: ...
    @property
    def ref(self) -> str: ...
    @property
    def actor(self) -> str: ...
    @property
    def token(self) -> SecretStr | None: ...
    @property
    def model_credential(self) -> SecretStr | None: ...
    @property
    def secrets(self) -> list[str]: ...
    @property
    def run_url(self) -> str | None: ...
    @property
    def default_branch(self) -> str | None: ...
    @property
    def branch(self) -> str | None: ...
    @property
    def pull_request(self) -> ChangeRequest | None: ...
    @property
    def secrets_withheld(self) -> bool: ...
    @property
    def fork_repo(self) -> str | None: ...


class Sink(Protocol):
    """Where a step reports back to the CI runner."""

    def add_mask(self, value: str) -> None: ...
    def error(self, message: str, title: str = "") -> None: ...
    def warning(self, message: str, title: str = "") -> None: ...
    def notice(self, message: str, title: str = "") -> None: ...
    def set_outputs(self, values: Mapping[str, object]) -> None: ...
    def summary(self, markdown: str) -> None: ...


class PostedComment(Protocol):
    @property
    def id(self) -> int: ...
    @property
    def url(self) -> str: ...
    @property
    def created(self) -> bool: ...


class Comment(Protocol):
    """This suite's comment on one change request (found once, then edited by id)."""

    def post(self, markdown: str, *, create: bool) -> PostedComment | None: ...
    def text(self) -> str | None: ...  # its Markdown as posted, None when there is none


@dataclass(frozen=True)
class LabelSetter:
    """Who set a label last on a change request, and whether they may write to the
    repository (None: the forge does not say who)."""

    who: str | None
    role: str
    can_write: bool


#: a deferred comment's moment: before the suite, with a verdict, or cancelled during the suite
CommentState = Literal["running", "final", "cancelled"]


@dataclass(frozen=True)
class DeferredComment:
    """The comment a later step posts (after the report's upload)."""

    number: int
    comment_id: str
    mode: CommentMode
    author: str
    state: CommentState
    body: str | None = None
    create: bool = False
    artifact: str = ""  # the report artifact's name, for the link's text
    html_name: str = ""  # the report's file name inside the artifact


@dataclass(frozen=True)
class DataPush:
    """Main's refreshed baseline, pushed to ``place`` with the token: the run, the judge's
    pure re-pooling (``gate.pool.baseline.repool`` bound to the run) for a branch that moved,
    and the knobs of the push."""

    root: Path
    place: Place
    results: Results
    pool: Callable[[State, str], Pooled]
    same_agent: Callable[[Results, Results], bool]
    source_branch: str  # the branch the run measured (its commits decide ancestry)
    guard: Callable[[], None]  # raises when pushing with the token is no longer safe
    seed: Callable[[], State] | None = None  # where a data branch without a baseline starts
    published: Mapping[str, str] = field(default_factory=dict)  # pages pushed with it


class PagesSite(Protocol):
    """The forge's static site, and whether it serves a branch's files as they are."""

    @property
    def branch(self) -> str: ...
    @property
    def path(self) -> str: ...
    def serves(self, branch: str) -> bool: ...
    def page_url(self, rel: str) -> str: ...


class Push(Protocol):
    """One refresh's push, under way: its latest pooling is kept (pushed or not)."""

    @property
    def last(self) -> Outcome | None: ...
    def fetch(self) -> State: ...
    def run(self, first: State, start_text: str | None, message_head: str) -> Outcome: ...


class Forge(Protocol):
    """What ``gate ci`` asks of a forge."""

    # ----- the change request
    def changed_files(self, number: int) -> list[str]: ...
    def labels(self, number: int) -> list[str]: ...
    def label_setter(self, number: int, label: str) -> LabelSetter: ...
    def find_change(self, head_repo: str, head_branch: str, head_sha: str) -> int | None: ...
    def change_request(self, number: int, base_ref: str, head_ref: str,
                       head_sha: str) -> ChangeRequest: ...
    # ----- this suite's comment
    def comment(self, number: int, comment_id: str, mode: CommentMode,
                author: str) -> Comment: ...
    def defer_comment(self, comment: DeferredComment) -> Path: ...
    # ----- git with the token
    def fetch_branch(self, root: Path, branch: str) -> str | None: ...
    def ensure_base_ref(self, root: Path, branch: str) -> str: ...
    def remote_ref(self, branch: str) -> str: ...
    def git_state(self, root: Path) -> str: ...
    def push_data(self, push: DataPush, log: Callable[[str], None]) -> Push: ...
    # ----- the default branch, read without a checkout (comment mode: its gate.toml's [ci])
    def default_branch_file(self, path: str) -> str | None: ...  # None: no such file
    # ----- the data branch's pages
    def can_ask(self) -> bool: ...  # whether its API can be asked at all (a repository, a token)
    def repository_public(self) -> tuple[bool, str]: ...  # (public, the visibility found)
    def pages_site(self) -> PagesSite | None: ...  # None: no site; a failure raises
    def publish_files(self, files: Mapping[str, str], branch: str, message: str) -> str: ...
    def run_artifact_url(self, run_id: str, name: str) -> str | None: ...
    # -----
    def close(self) -> None: ...
