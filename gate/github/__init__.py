"""GitHub's adapters for ``gate ci`` (gate/ci/): the Actions environment (every ``GITHUB_*``
read in ``_env``), REST, outputs and annotations, the sticky and the deferred comment, the
accept label, main's history, the refresh's files, and git with the token (fetch, push).
They decide nothing about a run: ``gate.ci`` does.

The names below load on first use, so importing a light submodule (``gate.github._modes``,
for the CLI's options) does not import ``gate ci`` whole."""

from __future__ import annotations

from typing import TYPE_CHECKING

from gate._lazy import lazy_names

if TYPE_CHECKING:
    from gate.github._accept import (
        Acceptance,
        acceptance,
    )
    from gate.github._comment import (
        DEFAULT_COMMENT_ID,
        MARKER,
        MARKER_PREFIX,
        CommentRef,
        comment_body,
        default_comment_id,
        find_comment,
        find_pr_for_run,
        marker,
        pr_files,
        pr_labels,
        render_body,
        render_note,
        upsert_comment,
    )
    from gate.github._deferred import (
        PendingComment,
        post_deferred,
        write_pending,
    )
    from gate.github._env import (
        actions_sha,
        event_name,
        in_actions,
        workspace,
    )
    from gate.github._environment import CIEnvironment, PullRequestInfo
    from gate.github._git import (
        ProtectedBranch,
        config_state,
        ensure_base_ref,
        fetch_branch,
        remote_ref,
    )
    from gate.github._history import (
        HistoryEntry,
        append_history,
        entry_for,
        parse_history,
        trend_entries,
        trend_markdown,
    )
    from gate.github._modes import (
        COMMENT_MODES,
        MODES,
        is_comment_mode,
    )
    from gate.github._outputs import (
        ActionsIO,
    )
    from gate.github._pages import (
        BADGE_REL,
        NOJEKYLL,
        PagesSite,
        pages_site,
        publish_files,
        raw_url,
        report_rel,
        repository_public,
    )
    from gate.github._refresh import (
        Outcome,
        Place,
        Pooling,
        Refresh,
        State,
        data_paths,
        read_state,
        traces_path,
        write_files,
    )
    from gate.github._rest import (
        GitHubClient,
        GitHubError,
    )
    from gate.github._session import (
        GitHubSession,
    )
    from gate.github._sticky import (
        CommentMode,
        PRComment,
        comment_mode,
    )

#: each name's private module, loaded on first use
_MODULES: dict[str, tuple[str, ...]] = {
    "_accept": ("Acceptance", "acceptance"),
    "_comment": (
        "DEFAULT_COMMENT_ID", "MARKER", "MARKER_PREFIX", "CommentRef", "comment_body",
        "default_comment_id",
        "find_comment", "find_pr_for_run", "marker", "pr_files", "pr_labels", "render_body",
        "render_note", "upsert_comment",
    ),
    "_deferred": ("PendingComment", "post_deferred", "write_pending"),
    "_env": (
        "actions_sha", "event_name", "in_actions",
        "workspace",
    ),
    "_environment": ("CIEnvironment", "PullRequestInfo"),
    "_git": ("ProtectedBranch", "config_state", "ensure_base_ref", "fetch_branch", "remote_ref"),
    "_history": (
        "HistoryEntry", "append_history", "entry_for", "parse_history", "trend_entries",
        "trend_markdown",
    ),
    "_modes": ("COMMENT_MODES", "MODES", "is_comment_mode"),
    "_outputs": ("ActionsIO",),
    "_pages": ("BADGE_REL", "NOJEKYLL", "PagesSite", "pages_site", "publish_files", "raw_url",
               "report_rel", "repository_public"),
    "_refresh": (
        "Outcome", "Place", "Pooling", "Refresh", "State", "data_paths", "read_state",
        "traces_path",
        "write_files",
    ),
    "_rest": ("GitHubClient", "GitHubError"),
    "_session": ("GitHubSession",),
    "_sticky": ("CommentMode", "PRComment", "comment_mode"),
}
_WHERE = {name: module for module, names in _MODULES.items() for name in names}

__all__ = [
    "BADGE_REL",
    "COMMENT_MODES",
    "DEFAULT_COMMENT_ID",
    "MARKER",
    "MARKER_PREFIX",
    "MODES",
    "NOJEKYLL",
    "Acceptance",
    "ActionsIO",
    "CIEnvironment",
    "CommentMode",
    "CommentRef",
    "GitHubClient",
    "GitHubError",
    "GitHubSession",
    "HistoryEntry",
    "Outcome",
    "PRComment",
    "PagesSite",
    "PendingComment",
    "Place",
    "Pooling",
    "ProtectedBranch",
    "PullRequestInfo",
    "Refresh",
    "State",
    "acceptance",
    "actions_sha",
    "append_history",
    "comment_body",
    "comment_mode",
    "config_state",
    "data_paths",
    "default_comment_id",
    "ensure_base_ref",
    "entry_for",
    "event_name",
    "fetch_branch",
    "find_comment",
    "find_pr_for_run",
    "in_actions",
    "is_comment_mode",
    "marker",
    "pages_site",
    "parse_history",
    "post_deferred",
    "pr_files",
    "pr_labels",
    "publish_files",
    "raw_url",
    "read_state",
    "remote_ref",
    "render_body",
    "render_note",
    "report_rel",
    "repository_public",
    "traces_path",
    "trend_entries",
    "trend_markdown",
    "upsert_comment",
    "workspace",
    "write_files",
    "write_pending",
]
assert sorted(__all__) == sorted(_WHERE)

__getattr__ = lazy_names(__name__, _WHERE, globals())
