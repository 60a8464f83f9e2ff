"""Stage 1, *event*: what kind of run this is, and what is refused — before anything runs.

``find_event`` is a pure function of the requested mode, the Actions environment and which
results the invocation names (stored, merged shards, one shard): no git, no files, no network,
so every row of its decision table is a unit test (tests/ci/test_ci_event.py). Whatever it
refuses is refused before a suite, a fetch or a comment.

- ``pull_request`` → ``pr``; ``pull_request_target`` is refused (the PR's code with the base
  repository's secrets and write token); ``workflow_run`` → ``comment``;
  ``push``/``workflow_dispatch``/``schedule`` on the default branch → ``main``, elsewhere (and
  every ``merge_group``) → ``check``.
- ``--rejudge`` judges stored results: pr or check only. ``--shard`` runs one part of a suite:
  not with ``--rejudge``/``--merge``, not in comment mode. ``--merge`` judges or pools a
  matrix's shards: pr, check or main, not with ``--rejudge``.
- ``main`` is refused on a pull request (the PR would refresh its own yardstick); ``pr`` needs
  a pull_request payload naming its base branch.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, get_args

from gate.ci._forge import ChangeRequest, CIFacts
from gate.errors import BadInput

Kind = Literal["pr", "main", "check", "comment"]
Source = Literal["fresh", "rejudge", "merge", "shard"]


@dataclass(frozen=True)
class Event:
    """The run decided: its kind, where its results come from, and the branch it is judged
    by (``base``: the PR's base branch, the default branch for ``check``; "" otherwise)."""

    kind: Kind
    source: Source = "fresh"
    pr: ChangeRequest | None = None
    base: str = ""


def resolve_mode(mode: str, env: CIFacts) -> str:
    """``--mode`` as given, or (``auto``) the mode the event means."""
    if mode != "auto":
        return mode
    event = env.event_name
    if event == "pull_request":
        return "pr"
    if event == "pull_request_target":
        raise BadInput("gate ci refuses pull_request_target: it would run the PR's code "
                       "with the base repository's secrets and write token. Use "
                       "`pull_request` (plus the two-workflow pattern in docs/github.md for "
                       "fork PRs)")
    if event == "workflow_run":
        return "comment"
    if event in ("push", "workflow_dispatch", "schedule", "merge_group"):
        default = env.default_branch or "main"
        return "main" if env.branch == default and event != "merge_group" else "check"
    if not event:
        raise BadInput("gate ci runs inside GitHub Actions (GITHUB_EVENT_NAME is not set): "
                       "locally use `gate run` and `gate compare`, or pass --mode")
    raise BadInput(f"gate ci does not know what to do on a {event!r} event: pass --mode "
                   "pr, main or check")


def find_event(mode: str, env: CIFacts, *, rejudge: bool = False, merge: bool = False,
               shard: bool = False) -> Event:
    """The run ``gate ci`` makes here, or ``BadInput`` naming why it refuses."""
    kind = resolve_mode(mode, env)
    if kind not in get_args(Kind):  # "auto" was resolved above
        raise BadInput(f"unknown mode {kind!r}")
    if rejudge and kind not in ("pr", "check"):
        raise BadInput(f"--rejudge judges a pull request's or a branch's stored results "
                       f"(mode pr or check), not mode {kind}: on the default branch a "
                       "refresh pools a new run")
    if shard:
        return _shard(kind, env, rejudge=rejudge, merge=merge)
    source: Source = "rejudge" if rejudge else "fresh"
    if merge:
        if rejudge:
            raise BadInput("--merge and --rejudge both name the results to judge: give one")
        if kind not in ("pr", "check", "main"):
            raise BadInput(f"--merge judges or refreshes a matrix's shards: not in mode {kind}")
        source = "merge"
    if kind == "pr":
        pr = env.pull_request
        if pr is None:
            raise BadInput("--mode pr needs a pull_request event (GITHUB_EVENT_PATH with a "
                           "pull_request payload)")
        if not pr.base_ref:
            raise BadInput("the pull_request event names no base branch")
        return Event("pr", source, pr, pr.base_ref)
    if kind == "check":
        return Event("check", source, None, env.default_branch or "main")
    if kind == "main":
        if env.pull_request is not None:
            raise BadInput("--mode main on a pull request would let the PR refresh the "
                           "baseline it is judged by: use mode pr (or auto)")
        return Event("main", source)
    if not isinstance(env.event.get("workflow_run"), dict):
        raise BadInput("--mode comment needs a workflow_run event")
    return Event("comment")


def _shard(kind: str, env: CIFacts, *, rejudge: bool, merge: bool) -> Event:
    """One matrix job: the base branch's tasks for pr/check, as a whole run would use."""
    if rejudge or merge:
        raise BadInput("--shard runs one part of the suite; --rejudge and --merge judge "
                       "finished results: the matrix's jobs and its judge job are separate")
    if kind == "comment":
        raise BadInput("--shard runs a part of the suite: not in comment mode")
    if kind == "main":
        if env.pull_request is not None:
            raise BadInput("--mode main on a pull request: use mode pr (or auto)")
        return Event("main", "shard")
    if kind == "pr":
        pr = env.pull_request
        if pr is None or not pr.base_ref:
            raise BadInput("--mode pr needs a pull_request event with a base branch")
        return Event("pr", "shard", pr, pr.base_ref)
    return Event("check", "shard", None, env.default_branch or "main")
