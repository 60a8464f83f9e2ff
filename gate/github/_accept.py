"""The accept label: a regression that a user with write permission accepted is reported, not
blocking.

The label counts only when the user who added it (the PR's latest ``labeled`` event for it)
has write permission on the repository, both checked through the API: a label anyone could add
(a bot, a triager) turns nothing green. An ignored label gets a visible note; the note of an
accepted one records who accepted. No I/O but GitHub's: the caller shows the note, the warning
and the log line.
"""

from __future__ import annotations

from dataclasses import dataclass

from gate.errors import GateError
from gate.github._comment import label_added_by, render_note, user_permission
from gate.github._rest import GitHubClient
from gate.report import code_span, md


@dataclass(frozen=True)
class Acceptance:
    """What the accept label amounts to on this PR."""

    who: str | None = None  # who accepted; None: not accepted
    note: str | None = None  # for the report
    warning: str | None = None  # for the job's annotations
    log: str | None = None


def acceptance(client: GitHubClient, pr_number: int, label: str,
               labels: list[str]) -> Acceptance:
    """Whether ``label`` (among the PR's ``labels``) accepts a regression, and who added it."""
    if not label or label.casefold() not in {x.casefold() for x in labels}:
        return Acceptance()
    name = code_span(label)
    try:
        who = label_added_by(client, pr_number, label)
        role, can_write = user_permission(client, who) if who else ("none", False)
    except GateError as exc:
        return Acceptance(
            note=render_note("label_unchecked", label=name),
            warning=f"the {label} label accepts nothing: cannot tell who added it: {exc}")
    if who is None or not can_write:
        return Acceptance(
            note=render_note("label_ignored", label=name, who=md(who, 60), role=md(role, 40)),
            warning=(f"the {label} label was added by {who or 'an unknown user'} ({role}): "
                     "ignored, accepting needs write permission"))
    return Acceptance(
        who=who, note=render_note("accepted", label=name, who=md(who, 60), role=md(role, 40)),
        log=f"the regression was accepted by {who} ({role})")
