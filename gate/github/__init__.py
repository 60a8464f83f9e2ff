"""GitHub: ``gate ci``'s pieces — the Actions environment, REST, the sticky comment, outputs,
the base branch through git, main's history — and ``run_ci``, which puts them together."""

from gate.github._ci import CIOptions, CIOverrides, run_ci
from gate.github._comment import (
    MARKER,
    MARKER_PREFIX,
    CommentRef,
    comment_body,
    find_comment,
    marker,
    upsert_comment,
)
from gate.github._env import CIEnvironment, PullRequestInfo
from gate.github._history import HistoryEntry, append_history, parse_history, trend_markdown
from gate.github._outputs import ActionsIO
from gate.github._rest import GitHubClient, GitHubError

__all__ = [
    "MARKER",
    "MARKER_PREFIX",
    "ActionsIO",
    "CIEnvironment",
    "CIOptions",
    "CIOverrides",
    "CommentRef",
    "GitHubClient",
    "GitHubError",
    "HistoryEntry",
    "PullRequestInfo",
    "append_history",
    "comment_body",
    "find_comment",
    "marker",
    "parse_history",
    "run_ci",
    "trend_markdown",
    "upsert_comment",
]
