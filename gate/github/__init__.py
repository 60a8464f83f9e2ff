"""GitHub's adapters for ``gate ci`` (gate/ci/): the Actions environment (every ``GITHUB_*``
read in ``_env``), REST, outputs and annotations, the sticky and the deferred comment, a
PR's files and labels and who set one, the refresh's push loop, and git with the token
(fetch, push). They decide nothing about a run: ``gate.ci`` does, through its forge port
(``gate/ci/_forge.py``; ``gate/ci/_github.py`` adapts these to it).

The names below load on first use, so importing a light submodule (``gate.github._modes``,
for the CLI's options) does not import ``gate ci`` whole."""

from __future__ import annotations

from typing import TYPE_CHECKING

from gate._lazy import lazy_names

if TYPE_CHECKING:
    from gate.github._comment import (
        DEFAULT_COMMENT_ID,
        MARKER,
        MARKER_PREFIX,
        CommentRef,
        comment_body,
        config_repo_path,
        default_comment_id,
        find_comment,
        find_pr_for_run,
        label_added_by,
        marker,
        pr_files,
        pr_labels,
        upsert_comment,
        user_permission,
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
    from gate.github._modes import (
        COMMENT_MODES,
        MODES,
        is_comment_mode,
    )
    from gate.github._outputs import (
        ActionsIO,
    )
    from gate.github._pages import (
        PagesSite,
        default_branch_file,
        pages_site,
        publish_files,
        raw_url,
        repository_public,
        run_artifact_url,
    )
    from gate.github._refresh import (
        Pooling,
        Refresh,
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
    "_comment": (
        "DEFAULT_COMMENT_ID", "MARKER", "MARKER_PREFIX", "CommentRef", "comment_body",
        "config_repo_path", "default_comment_id",
        "find_comment", "find_pr_for_run", "label_added_by", "marker", "pr_files", "pr_labels",
        "upsert_comment", "user_permission",
    ),
    "_deferred": ("PendingComment", "post_deferred", "write_pending"),
    "_env": (
        "actions_sha", "event_name", "in_actions",
        "workspace",
    ),
    "_environment": ("CIEnvironment", "PullRequestInfo"),
    "_git": ("ProtectedBranch", "config_state", "ensure_base_ref", "fetch_branch", "remote_ref"),
    "_modes": ("COMMENT_MODES", "MODES", "is_comment_mode"),
    "_outputs": ("ActionsIO",),
    "_pages": ("PagesSite", "default_branch_file", "pages_site", "publish_files", "raw_url",
               "repository_public", "run_artifact_url"),
    "_refresh": ("Pooling", "Refresh"),
    "_rest": ("GitHubClient", "GitHubError"),
    "_session": ("GitHubSession",),
    "_sticky": ("CommentMode", "PRComment", "comment_mode"),
}
_WHERE = {name: module for module, names in _MODULES.items() for name in names}

__all__ = [
    "COMMENT_MODES",
    "DEFAULT_COMMENT_ID",
    "MARKER",
    "MARKER_PREFIX",
    "MODES",
    "ActionsIO",
    "CIEnvironment",
    "CommentMode",
    "CommentRef",
    "GitHubClient",
    "GitHubError",
    "GitHubSession",
    "PRComment",
    "PagesSite",
    "PendingComment",
    "Pooling",
    "ProtectedBranch",
    "PullRequestInfo",
    "Refresh",
    "actions_sha",
    "comment_body",
    "comment_mode",
    "config_repo_path",
    "config_state",
    "default_branch_file",
    "default_comment_id",
    "ensure_base_ref",
    "event_name",
    "fetch_branch",
    "find_comment",
    "find_pr_for_run",
    "in_actions",
    "is_comment_mode",
    "label_added_by",
    "marker",
    "pages_site",
    "post_deferred",
    "pr_files",
    "pr_labels",
    "publish_files",
    "raw_url",
    "remote_ref",
    "repository_public",
    "run_artifact_url",
    "upsert_comment",
    "user_permission",
    "workspace",
    "write_pending",
]
assert sorted(__all__) == sorted(_WHERE)

__getattr__ = lazy_names(__name__, _WHERE, globals())
