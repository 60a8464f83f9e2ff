"""Main's refresh: pool a run into the baseline and the history, and push them where they live.

Where they live (``[ci] baseline_refresh``):

- ``commit``: in the branch itself, at their configured paths (``baseline.json``,
  ``gate-history.jsonl``), next to the code;
- ``branch``: on a data branch (``[ci] data_branch``, an orphan branch created by the first
  refresh), under a folder named after the refreshed branch (``main/baseline.json``): no
  protection rules, no CI triggers, no noise in main's history;
- ``artifact``: nowhere; the files are left in the workspace for an upload step.

Next to the baseline goes its **traces sidecar** (``baseline.traces.jsonl``, :mod:`gate.traces`):
a compact trace of each pooled run (tool calls, per-turn usage, outcome), redacted and bounded,
so a PR's comment can show what main's agent did. It is pooled with the baseline (the traces
of the runs the baseline keeps) and committed, pushed or left in the workspace with it.

A push races every merge that lands while the suite runs. On a non-fast-forward the refresh
fetches the new tip, pools this run onto *its* baseline and history (pooling is deterministic:
the same run pooled onto the same baseline gives the same file), commits on top of it and
tries again, ``RETRIES`` times; then it warns and leaves the files for an artifact. A refresh
never replaces the baseline of another agent configuration that landed meanwhile unless this
run's commit is newer (the other baseline's commit is its ancestor).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from gate import _git as plain_git
from gate._files import HISTORY_LIMIT, RESULTS_LIMIT, atomic_write_text
from gate.errors import BadInput, GateError
from gate.github import _git
from gate.github._history import HistoryEntry, parse_history
from gate.results import Results, parse_results
from gate.traces import SIDECAR_LIMIT, Trace, parse_sidecar, pooled_sidecar, sidecar_rel

#: Re-pools after the first push was refused because the branch moved on.
RETRIES = 3

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


@dataclass(frozen=True)
class Pooling:
    """How a run is pooled into a baseline: the judge's rules (``gate.baseline``), handed in
    by ``gate ci``, so the push loop that re-pools on a moved branch decides nothing itself."""

    promote: Callable[..., tuple[Results, str]]  # (results, baseline, pool_size=) → pooled
    same_agent: Callable[[Results, Results], bool]
    dump: Callable[[Results], str]  # the baseline file's text


@dataclass
class Refresh:
    """One refresh's push to ``place``, with the knobs it needs from ``gate ci``."""

    root: Path
    place: Place
    results: Results
    entry: HistoryEntry
    pooling: Pooling
    pool_size: int
    history_size: int
    token: str | None
    server_url: str
    source_branch: str  # the branch the run measured (its commits decide ancestry)
    guard: Callable[[], None]  # raises when pushing with the token is no longer safe
    log: Callable[[str], None]
    seed: Callable[[], State] | None = None  # the baseline to start from when the place has none
    traces: Sequence[Trace] = ()  # this run's traces, as the sidecar keeps them
    # pages committed with the pooled files (gate/github/_pages.py: main's report, the badge)
    published: Mapping[str, str] = field(default_factory=dict)
    last: Outcome | None = None  # the latest pooling, pushed or not

    def fetch(self) -> State:
        self.guard()  # the fetch carries the token too
        tip = _git.fetch_branch(self.root, self.place.branch, token=self.token,
                                server_url=self.server_url)
        if tip is None and not self.place.data:
            raise BadInput(f"the branch {self.place.branch} no longer exists on origin: the "
                           "refreshed baseline has nowhere to go")
        return read_state(self.root, self.place, tip, seed=self.seed)

    def run(self, first: State, start_text: str | None, message_head: str) -> Outcome:
        """Pool onto ``first`` and push; on a moved branch, fetch, re-pool and retry.
        ``start_text`` is the baseline this run started from (ancestry is asked only when
        the tip's differs)."""
        state = first
        lines: list[str] = []
        last: Outcome | None = None
        for attempt in range(1 + RETRIES):
            if attempt:
                state = self.fetch()
                lines.append(f"{self.place.name} moved on while the suite ran (now at "
                             f"{(state.commit or 'nothing')[:7]}): re-pooled this run onto "
                             "its baseline and history")
                self.log(f"gate ci: {lines[-1]}")
            if state.seeded_from:
                self.log(f"gate ci: {self.place.name} has no {self.place.baseline_rel} yet: "
                         f"pooling onto {state.seeded_from}")
            why = self.superseded(state, start_text)
            if why is not None:
                lines.append(why)
                return Outcome("superseded", why, attempts=attempt + 1, lines=lines)
            baseline = (parse_results(state.baseline_text.encode(),
                                      f"{self.place.baseline_rel} on {self.place.name}",
                                      "baseline")
                        if state.baseline_text is not None else None)
            pooled, message = self.pooling.promote(self.results, baseline,
                                                   pool_size=self.pool_size)
            if pooled is baseline:
                return Outcome("unchanged", message, attempts=attempt + 1, lines=lines,
                               baseline=baseline, entries=parse_history(state.history_text
                                                                        or ""))
            entries = [*parse_history(state.history_text or ""), self.entry][-self.history_size:]
            history = "".join(e.model_dump_json(exclude_none=True) + "\n" for e in entries)
            sidecar = pooled_sidecar(pooled, self.traces, parse_sidecar(state.traces_text))
            last = self.last = Outcome("artifact", message, attempts=attempt + 1,
                                       lines=lines, baseline=pooled, entries=entries,
                                       traces=sidecar)
            files = {self.place.baseline_rel: self.pooling.dump(pooled),
                     self.place.history_rel: history}
            if sidecar or state.traces_text:
                files[self.place.traces_rel] = sidecar
            files.update(self.published)
            sha = _git.commit_files(self.root, state.commit, files,
                                    f"{message_head}\n\n{message}\n\n[skip ci]")
            self.guard()  # also: no process of a run is alive (never push with the token then)
            if _git.push(self.root, sha, self.place.branch, token=self.token,
                         server_url=self.server_url):
                last.status, last.commit = "committed", sha
                return last
        assert last is not None
        lines.append(f"{self.place.name} moved on {RETRIES + 1} times while this refresh "
                     "pushed: the refreshed baseline and history were not pushed; they are "
                     "kept as files for an artifact (outputs baseline_path, history_path), and "
                     "the next refresh pools onto the branch's latest")
        return last

    def superseded(self, state: State, start_text: str | None) -> str | None:
        """Why this run must not replace the baseline on ``state``: another agent
        configuration's, refreshed from a commit this run's commit does not descend from."""
        text = state.baseline_text
        if text is None or state.seeded_from or text == start_text:
            return None  # nobody refreshed since this run started
        try:
            theirs = parse_results(text.encode(), f"{self.place.baseline_rel} on "
                                   f"{self.place.name}", "baseline")
        except GateError:
            return None  # a damaged baseline is replaced (promote says so)
        if self.pooling.same_agent(theirs, self.results):
            return None  # the same agent: pooled, whichever commit is newer
        ours, their = self.results.commit, theirs.commit
        newer = None
        if ours and their:
            newer = plain_git.is_ancestor(self.root, their, ours)
            if newer is None:  # a shallow checkout: ask again with the branch's history
                self.guard()
                _git.deepen(self.root, self.source_branch, token=self.token,
                            server_url=self.server_url)
                newer = plain_git.is_ancestor(self.root, their, ours)
        fp = theirs.agent.fingerprint[:12]
        if newer:
            self.log(f"gate ci: {self.place.name} holds another agent configuration's baseline "
                     f"(fingerprint {fp}, from {their[:7] if their else '?'}), refreshed from "
                     f"an ancestor of this run's commit {(ours or '?')[:7]}: this newer "
                     "configuration replaces it")
            return None
        how = ("not newer: " + (f"{their[:7]} is not an ancestor of it" if newer is False
                                else "git cannot tell which is newer")
               if ours and their else "of unknown order: a commit is not recorded")
        return (f"{self.place.name} now holds the baseline of another agent configuration "
                f"(fingerprint {fp}, refreshed from {(their or 'an unknown commit')[:12]}), "
                f"which landed while this suite ran. This run measured "
                f"{(ours or 'an unknown commit')[:12]}, which is {how}. The newer "
                "configuration's baseline is kept, and this run's results are left as an "
                "artifact (output results_path)")


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
        atomic_write_text(history_path, "".join(e.model_dump_json(exclude_none=True) + "\n"
                                                for e in outcome.entries))
        sidecar = traces_path(baseline_path)
        if outcome.traces or sidecar.exists():
            atomic_write_text(sidecar, outcome.traces)


def _show(root: Path, ref: str, rel: str, limit: int, where: str) -> str | None:

    return plain_git.show_bounded(root, ref, rel, limit, where)
