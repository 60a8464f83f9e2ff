"""Main's refresh, pushed: the push loop that puts the pooled baseline and history on their
branch with the token (where they live, what a refresh starts from and the files it leaves
are forge-neutral: :mod:`gate.pool.refresh`).

A push races every merge that lands while the suite runs. On a non-fast-forward the refresh
fetches the new tip, pools this run onto *its* baseline and history with the judge's pure
function handed in (``Pooling``: ``gate.pool.baseline.repool`` with this run bound, from ``gate
ci``; the same run pooled onto the same files gives the same files), commits on top of it and
tries again, ``RETRIES`` times; then it warns and leaves the files for an artifact. A refresh
never replaces the baseline of another agent configuration that landed meanwhile unless this
run's commit is newer (the other baseline's commit is its ancestor).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from gate import _git as plain_git
from gate.core.results import Results, parse_results
from gate.errors import BadInput, GateError
from gate.github import _git
from gate.pool.refresh import Outcome, Place, Pooled, State, read_state

#: Re-pools after the first push was refused because the branch moved on.
RETRIES = 3


@dataclass(frozen=True)
class Pooling:
    """How this run is pooled onto a branch's files: the judge's rules (``gate.pool.baseline``),
    handed in by ``gate ci``, so the push loop that re-pools on a moved branch decides
    nothing itself."""

    pool: Callable[[State, str], Pooled]  # (the branch's files, where they are) → pooled
    same_agent: Callable[[Results, Results], bool]


@dataclass
class Refresh:
    """One refresh's push to ``place``, with the knobs it needs from ``gate ci``."""

    root: Path
    place: Place
    results: Results
    pooling: Pooling
    token: str | None
    server_url: str
    source_branch: str  # the branch the run measured (its commits decide ancestry)
    guard: Callable[[], None]  # raises when pushing with the token is no longer safe
    log: Callable[[str], None]
    seed: Callable[[], State] | None = None  # the baseline to start from when the place has none
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
            pooled = self.pooling.pool(state, f"{self.place.baseline_rel} on {self.place.name}")
            if pooled.unchanged:
                return Outcome("unchanged", pooled.message, attempts=attempt + 1, lines=lines,
                               baseline=pooled.baseline, entries=pooled.before)
            last = self.last = Outcome("artifact", pooled.message, attempts=attempt + 1,
                                       lines=lines, baseline=pooled.baseline,
                                       entries=pooled.entries, traces=pooled.traces)
            files = pooled.at(self.place, state.traces_text)
            files.update(self.published)
            sha = _git.commit_files(self.root, state.commit, files,
                                    f"{message_head}\n\n{pooled.message}\n\n[skip ci]")
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
