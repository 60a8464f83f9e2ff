"""Main's refresh, forge-neutral: where the baseline and the history live, what a refresh
starts from, what one pooling gives, and the files it leaves in the workspace.

Where they live (``[ci] baseline_refresh``):

- ``commit``: in the branch itself, at their configured paths (``baseline.json``,
  ``gate-history.jsonl``), next to the code;
- ``branch``: on a data branch (``[ci] data_branch``, an orphan branch created by the first
  refresh), under a folder named after the refreshed branch (``main/baseline.json``): no
  protection rules, no CI triggers, no noise in main's history;
- ``artifact``: nowhere; the files are left in the workspace for an upload step.

A data branch also carries what a Pages site serves from it: the badge (``badge.svg``) and
published reports (``reports/<name>/index.html``); which are published is ``gate ci``'s.

Next to the baseline goes its **traces sidecar** (``baseline.traces.jsonl``,
:mod:`gate.core.traces`).
How a run is pooled is the judge's (``gate.pool.baseline.repool``, a pure function over the texts
here); pushing the pooled files with the token is the forge adapter's push loop, which calls
that function again on a branch that moved.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from gate import _git as plain_git
from gate._files import HISTORY_LIMIT, RESULTS_LIMIT, atomic_write_text
from gate.core.history import HistoryEntry, dump_history
from gate.core.results import Results
from gate.core.traces import SIDECAR_LIMIT, sidecar_rel
from gate.errors import GateError

Status = Literal["committed", "unchanged", "superseded", "artifact"]


@dataclass(frozen=True)
class Place:
    """Where the baseline and the history are committed: a branch and paths on it."""

    branch: str
    baseline_rel: str
    history_rel: str
    data: bool = False  # a data branch (may not exist yet: its first commit is a root commit)

    @property
    def name(self) -> str:
        return f"the data branch {self.branch}" if self.data else self.branch

    @property
    def traces_rel(self) -> str:
        """The baseline's traces sidecar, next to it."""
        return sidecar_rel(self.baseline_rel)


#: the data branch's pages (what a Pages site serves from it): Jekyll switched off
NOJEKYLL = ".nojekyll"


def badge_rel(suffix: str = "") -> str:
    """Where a suite's badge lives on the data branch: ``badge.svg``, ``badge<suffix>.svg``
    for a suite with its own comment id (``-<id>``, as its report artifact's name ends)."""
    return f"badge{suffix}.svg"


def report_rel(name: str) -> str:
    """Where the report named ``name`` (a branch, ``pr-<n>``) lives on the data branch."""
    return f"reports/{name}/index.html"


def data_paths(branch: str, rel: str) -> str:
    """Where ``rel`` (repo-relative, as configured) of ``branch`` lives on the data branch."""
    return f"{branch}/{rel}"


@dataclass(frozen=True)
class State:
    """A commit of the target branch (None: it does not exist yet) and the files on it."""

    commit: str | None
    baseline_text: str | None
    history_text: str | None
    seeded_from: str | None = None  # where the texts came from when not from ``commit``
    traces_text: str | None = None  # the baseline's traces sidecar


@dataclass(frozen=True)
class Pooled:
    """One pooling of a run onto a baseline and history (``gate.pool.baseline.repool``): what is
    written, and whether anything changed."""

    message: str  # promote's account of what it did
    baseline: Results  # the pooled baseline (the same object as before: unchanged)
    unchanged: bool
    before: list[HistoryEntry]  # the history as it was
    entries: list[HistoryEntry]  # the history with this run's entry
    traces: str = ""  # the pooled baseline's traces sidecar ("" when none)
    files: dict[str, str] = field(default_factory=dict)  # what a commit writes, by role

    def at(self, place: Place, old_traces: str | None) -> dict[str, str]:
        """The files to commit at ``place`` (the sidecar when there is one, or was)."""
        files = {place.baseline_rel: self.files["baseline"],
                 place.history_rel: self.files["history"]}
        if self.traces or old_traces:
            files[place.traces_rel] = self.traces
        return files


@dataclass
class Outcome:
    status: Status
    message: str  # what pooling did (promote's account), or why nothing was pushed
    commit: str = ""
    attempts: int = 0
    lines: list[str] = field(default_factory=list)  # for the log and the step summary
    baseline: Results | None = None
    entries: list[HistoryEntry] = field(default_factory=list)
    traces: str = ""  # the pooled baseline's traces sidecar ("" when none)


def read_state(root: Path, place: Place, commit: str | None, *,
               seed: Callable[[], State] | None = None, seeded_from: str | None = None) -> State:
    """``place``'s files at ``commit`` (None: the branch does not exist). Without a baseline
    there, ``seed`` says where to start from instead."""
    state = State(commit, None, None, seeded_from)
    if commit is not None:
        state = State(commit, _show(root, commit, place.baseline_rel, RESULTS_LIMIT, place.name),
                      _show(root, commit, place.history_rel, HISTORY_LIMIT, place.name),
                      seeded_from, _traces(root, commit, place))
    if state.baseline_text is None and seed is not None:
        other = seed()
        return State(commit, other.baseline_text,
                     state.history_text if state.history_text is not None
                     else other.history_text, other.seeded_from, other.traces_text)
    return state


def _traces(root: Path, commit: str, place: Place) -> str | None:
    """The sidecar at ``commit``; one too large to read is left behind (the refresh writes a
    new one from this run's traces), never an error: it is evidence, not the yardstick."""
    try:
        return _show(root, commit, place.traces_rel, SIDECAR_LIMIT, place.name)
    except GateError:
        return None


def traces_path(baseline_path: Path) -> Path:
    """The traces sidecar in the workspace, next to the baseline."""
    return baseline_path.with_name(sidecar_rel(baseline_path.name))


def write_files(outcome: Outcome, baseline_path: Path, history_path: Path,
                dump: Callable[[Results], str]) -> None:
    """The refreshed files in the workspace, as pushed (or as they would have been);
    ``dump``: the baseline file's text."""
    if outcome.baseline is not None and outcome.status != "unchanged":
        atomic_write_text(baseline_path, dump(outcome.baseline))
        atomic_write_text(history_path, dump_history(outcome.entries))
        sidecar = traces_path(baseline_path)
        if outcome.traces or sidecar.exists():
            atomic_write_text(sidecar, outcome.traces)


def _show(root: Path, ref: str, rel: str, limit: int, where: str) -> str | None:
    return plain_git.show_bounded(root, ref, rel, limit, where)
