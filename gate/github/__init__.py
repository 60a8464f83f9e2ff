"""GitHub: ``gate ci``'s pieces — the Actions environment, REST, the sticky comment, outputs,
the base branch through git, main's history — and ``run_ci``, which puts them together.

The names below load on first use, so importing a light submodule (``gate.github._modes``,
for the CLI's options) does not import ``gate ci`` whole."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
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
    from gate.github._git import git, repo_relative, toplevel
    from gate.github._history import (
        HistoryEntry,
        append_history,
        parse_history,
        trend_markdown,
    )
    from gate.github._outputs import ActionsIO
    from gate.github._rest import GitHubClient, GitHubError

_WHERE = {
    "CIOptions": "_ci", "CIOverrides": "_ci", "run_ci": "_ci",
    "MARKER": "_comment", "MARKER_PREFIX": "_comment", "CommentRef": "_comment",
    "comment_body": "_comment", "find_comment": "_comment", "marker": "_comment",
    "upsert_comment": "_comment",
    "CIEnvironment": "_env", "PullRequestInfo": "_env",
    "git": "_git", "repo_relative": "_git", "toplevel": "_git",
    "HistoryEntry": "_history", "append_history": "_history", "parse_history": "_history",
    "trend_markdown": "_history",
    "ActionsIO": "_outputs",
    "GitHubClient": "_rest", "GitHubError": "_rest",
}

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
    "git",
    "marker",
    "parse_history",
    "repo_relative",
    "run_ci",
    "toplevel",
    "trend_markdown",
    "upsert_comment",
]
assert sorted(__all__) == sorted(_WHERE)


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module 'gate.github' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"gate.github.{_WHERE[name]}"), name)
    globals()[name] = value
    return value
