"""The event stage of ``gate ci`` (gate/ci/_event.py): a pure decision table, tested as one.

Every row is an Actions environment and what the invocation names (stored results, merged
shards, one shard), and either the run it becomes or the refusal it gets (one clear line,
exit 2), decided before any git, file or network access.
"""

from __future__ import annotations

from typing import Any

import pytest

from gate.ci import Event, find_event
from gate.errors import BadInput
from gate.github import CIEnvironment, PullRequestInfo

PR = {"number": 7, "base": {"ref": "main"}, "head": {"ref": "f", "sha": "abc",
                                                     "repo": {"full_name": "acme/agent"}}}
REPO = {"full_name": "acme/agent", "default_branch": "main"}


def env(event_name: str = "", ref: str = "", pr: dict[str, Any] | None = None,
        **event: Any) -> CIEnvironment:
    payload: dict[str, Any] = {"repository": REPO, **event}
    if pr is not None:
        payload["pull_request"] = pr
    return CIEnvironment(event_name=event_name, event=payload, repository="acme/agent",
                         ref=ref)


PR_INFO = PullRequestInfo(number=7, base_ref="main", head_ref="f", head_sha="abc",
                          head_repo="acme/agent")

ROWS: list[tuple[str, str, CIEnvironment, dict[str, bool], Event | str]] = [
    # id, --mode, environment, flags, the run or (a part of) the refusal
    ("pull_request", "auto", env("pull_request", "refs/pull/7/merge", PR), {},
     Event("pr", "fresh", PR_INFO, "main")),
    ("push to default", "auto", env("push", "refs/heads/main"), {}, Event("main")),
    ("push elsewhere", "auto", env("push", "refs/heads/dev"), {},
     Event("check", base="main")),
    ("dispatch on default", "auto", env("workflow_dispatch", "refs/heads/main"), {},
     Event("main")),
    ("schedule on default", "auto", env("schedule", "refs/heads/main"), {}, Event("main")),
    ("merge group", "auto", env("merge_group", "refs/heads/main"), {},
     Event("check", base="main")),
    ("workflow_run", "auto", env("workflow_run", workflow_run={"event": "pull_request"}), {},
     Event("comment")),
    ("pull_request_target", "auto", env("pull_request_target", pr=PR), {},
     "refuses pull_request_target"),
    ("no event", "auto", env(), {}, "GITHUB_EVENT_NAME is not set"),
    ("unknown event", "auto", env("release"), {}, "does not know what to do on a 'release'"),
    ("unknown mode", "sideways", env("push"), {}, "unknown mode 'sideways'"),
    ("pr without payload", "pr", env("push", "refs/heads/main"), {},
     "needs a pull_request event"),
    ("pr without base", "pr", env("pull_request", pr={**PR, "base": {}}), {},
     "names no base branch"),
    ("main on a PR", "main", env("pull_request", pr=PR), {}, "would let the PR refresh"),
    ("comment without workflow_run", "comment", env("push"), {},
     "needs a workflow_run event"),
    ("rejudge a PR", "auto", env("pull_request", pr=PR), {"rejudge": True},
     Event("pr", "rejudge", PR_INFO, "main")),
    ("rejudge a branch", "check", env("workflow_dispatch", "refs/heads/f"),
     {"rejudge": True}, Event("check", "rejudge", None, "main")),
    ("rejudge on main", "auto", env("push", "refs/heads/main"), {"rejudge": True},
     "--rejudge judges a pull request's or a branch's"),
    ("merge on main", "auto", env("push", "refs/heads/main"), {"merge": True},
     Event("main", "merge")),
    ("merge a PR", "auto", env("pull_request", pr=PR), {"merge": True},
     Event("pr", "merge", PR_INFO, "main")),
    ("merge and rejudge", "pr", env("pull_request", pr=PR), {"merge": True, "rejudge": True},
     "--merge and --rejudge both"),
    ("merge in comment mode", "comment", env("workflow_run", workflow_run={}),
     {"merge": True}, "not in mode comment"),
    ("shard of a PR", "auto", env("pull_request", pr=PR), {"shard": True},
     Event("pr", "shard", PR_INFO, "main")),
    ("shard on main", "auto", env("push", "refs/heads/main"), {"shard": True},
     Event("main", "shard")),
    ("shard of a check", "check", env("push", "refs/heads/dev"), {"shard": True},
     Event("check", "shard", None, "main")),
    ("shard and merge", "auto", env("push", "refs/heads/main"),
     {"shard": True, "merge": True}, "the matrix's jobs and its judge job are separate"),
    ("shard in comment mode", "comment", env("workflow_run", workflow_run={}),
     {"shard": True}, "not in comment mode"),
    ("shard of main on a PR", "main", env("pull_request", pr=PR), {"shard": True},
     "--mode main on a pull request"),
    ("shard of a PR without payload", "pr", env("push"), {"shard": True},
     "needs a pull_request event with a base branch"),
]


@pytest.mark.parametrize(("mode", "environment", "flags", "expected"),
                         [row[1:] for row in ROWS], ids=[row[0] for row in ROWS])
def test_find_event(mode: str, environment: CIEnvironment, flags: dict[str, bool],
                    expected: Event | str) -> None:
    if isinstance(expected, Event):
        assert find_event(mode, environment, **flags) == expected
    else:
        with pytest.raises(BadInput, match=None) as info:
            find_event(mode, environment, **flags)
        assert expected in str(info.value)
