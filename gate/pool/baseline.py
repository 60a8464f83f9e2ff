"""Promoting a run into ``baseline.json``: pool runs of the same agent, start afresh on a new one.

A deep baseline is the cheapest power there is (docs/statistics.md): every refresh on ``main`` with
the same agent fingerprint adds its runs, keeping the newest ``pool_size`` per task, so a PR's
5 runs per task are judged against ~20. Pooling is only sound while the runs measure the same
thing, hence:

* a new agent fingerprint, or a different model label (a simulator's runs vs a real model's),
  starts a new baseline (the old runs describe another agent);
* a task whose digest changed keeps only the new runs (the old ones ran another task);
* tasks no longer in the suite are dropped;
* a different metering definition (``schedule.metering``: how usage and cost are measured)
  starts a new baseline (cost and cache-hit rate of the old runs mean something else).

Every run keeps its provenance (``commit``, ``created_at``) so the file says where each came
from, and ``sources`` lists each refresh with its schedule (replications, jobs, metering).
Runs of skill conditions are pooled per (task, condition) like the rest (``RunKey.pool``), and
each run keeps the replication it had in its refresh (``source_replication``): the skill-effect
test pairs a target run with the control run of the same refresh and replication
(:mod:`gate.compare._did`), whatever numbers pooling gave them.
The file is only ever written here, from a real results file, atomically.
"""

from __future__ import annotations

import json
import os
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from gate.core.history import HistoryEntry, dump_history, parse_history
from gate.core.results import (
    Results,
    RunResult,
    load_results,
    parse_results,
    runs_by_task,
    summarize,
    valid_runs,
    write_results,
)
from gate.core.traces import Trace, parse_sidecar, pooled_sidecar
from gate.errors import BadInput, Unmeasurable
from gate.pool.refresh import Pooled


def _with_provenance(results: Results) -> list[RunResult]:
    """The results' runs, each stamped with the refresh it comes from (the results file's
    ``created_at``), and with the file's commit and date unless it has its own."""
    out = []
    for r in results.runs:
        update: dict[str, object] = {
            "commit": r.commit if r.commit is not None else results.commit,
            "created_at": r.created_at if r.created_at is not None else results.created_at,
            "refresh": r.refresh if r.refresh is not None else results.created_at,
        }
        copy = r.model_copy(update=update)
        if r.condition is not None and "source_replication" not in (r.model_extra or {}):
            # pooling renumbers replications; the pairs of conditions must survive it
            copy = RunResult.model_validate({**copy.model_dump(),
                                             "source_replication": r.replication})
        out.append(copy)
    return out


Refresh = tuple[str | None, str | None]  # (commit, created_at) of a results file


def _schedules(results: Results, baseline: Results | None) -> dict[Refresh, object]:
    """The schedule each refresh ran with: the baseline's recorded ones, and the new one."""
    known: dict[Refresh, object] = {}
    old = (baseline.model_extra or {}).get("sources") if baseline is not None else None
    for src in old if isinstance(old, list) else []:
        if isinstance(src, dict) and src.get("schedule") is not None:
            known[(src.get("commit"), src.get("created_at"))] = src["schedule"]
    if results.schedule is not None:
        known[(results.commit, results.created_at)] = results.schedule.model_dump(mode="json")
    return known


def _sources(runs: list[RunResult],
             schedules: dict[Refresh, object] | None = None) -> list[dict[str, object]]:
    """Which refreshes the pooled runs came from, oldest first, with their schedules."""
    counts: dict[Refresh, int] = defaultdict(int)
    for r in runs:
        counts[(r.commit, r.refresh or r.created_at)] += 1
    return [{"commit": c, "created_at": d, "runs": n,
             "schedule": (schedules or {}).get((c, d))}
            for (c, d), n in sorted(counts.items(), key=lambda kv: kv[0][1] or "")]


def _fresh(results: Results, runs: list[RunResult],
           baseline: Results | None = None) -> Results:
    runs = _renumber(runs)
    return results.model_copy(update={"runs": runs, "summary": summarize(runs),
                                      "sources": _sources(runs, _schedules(results, baseline))})


def _renumber(runs: list[RunResult]) -> list[RunResult]:
    """Replications 0..n-1 per pool (``RunKey.pool``: the task), oldest first, so pooled run
    keys stay unique."""
    pools: dict[tuple[object, ...], list[RunResult]] = defaultdict(list)
    for r in runs:
        pools[r.key.pool].append(r)
    out: list[RunResult] = []
    for pool in sorted(pools, key=repr):
        out.extend(r.model_copy(update={"replication": i}) for i, r in enumerate(pools[pool]))
    return out


def _describe(results: Results) -> str:
    from gate.report import count

    tasks = {r.task for r in results.runs}
    return f"{count(len(results.runs), 'run')} over {count(len(tasks), 'task')}"


def _upstream_moved(baseline: Results, results: Results) -> str | None:
    """Why ``results`` were answered by another upstream than ``baseline``'s runs (both
    recorded: an older file's upstream is unknown, and pools as ever), or None."""
    b, r = baseline.upstream_api, results.upstream_api
    if b is None or r is None or (b.place, b.pricing) == (r.place, r.pricing):
        return None
    return f"upstream changed ({b.describe()} → {r.describe()})"


def promote(results: Results, baseline: Results | None, *,
            pool_size: int = 20) -> tuple[Results, str]:
    """The new baseline after ``results`` and a one-line account of what happened."""
    if pool_size < 1:
        raise BadInput("pool size must be at least 1")
    if results.interrupted is not None:
        raise BadInput(f"the {results.interruption_note()}: an incomplete run cannot become "
                       "the baseline; run the suite again")
    if (results.model_extra or {}).get("selected_tasks"):
        raise BadInput("these results ran only some tasks (--task): a partial run would drop "
                       "the other tasks' runs, so it cannot refresh the baseline")
    new_runs = _with_provenance(results)
    if baseline is None:
        fresh = _fresh(results, _keep_newest(new_runs, pool_size))
        return fresh, f"new baseline: {_describe(fresh)}"
    if baseline.agent.fingerprint != results.agent.fingerprint:
        fresh = _fresh(results, _keep_newest(new_runs, pool_size))
        return fresh, (f"agent fingerprint changed ({baseline.agent.fingerprint[:12]} → "
                       f"{results.agent.fingerprint[:12]}): starting a new baseline with "
                       f"{_describe(fresh)}")
    if baseline.model != results.model:
        # same configuration, different producer: e.g. the simulator's runs must never pool
        # with a real model's (the fingerprint covers the configuration, not the upstream)
        fresh = _fresh(results, _keep_newest(new_runs, pool_size))
        return fresh, (f"model changed ({baseline.model} → {results.model}): starting a new "
                       f"baseline with {_describe(fresh)}")
    if (moved := _upstream_moved(baseline, results)) is not None:
        # answered elsewhere (another provider, region, host or price list): pooled, the
        # two would be a mixture the verdict could not name
        fresh = _fresh(results, _keep_newest(new_runs, pool_size))
        return fresh, f"{moved}: starting a new baseline with {_describe(fresh)}"
    if baseline.metering != results.metering:
        # usage and cost measured another way: pooled, the two would be a mixture
        fresh = _fresh(results, _keep_newest(new_runs, pool_size))
        return fresh, (f"metering changed ({baseline.metering or 'none recorded'} → "
                       f"{results.metering or 'none recorded'}): starting a new baseline with "
                       f"{_describe(fresh)}")
    # a baseline that was never pooled (a seed: plain results) is one refresh: its own run
    old_runs = _with_provenance(baseline)
    if (results.commit, results.created_at) in {(r.commit, r.refresh) for r in old_runs}:
        return baseline, (f"results of {results.commit or 'this commit'} "
                          f"({results.created_at}) are already in the baseline: unchanged")
    old_by_task = runs_by_task(old_runs)
    pooled: list[RunResult] = []
    replaced: list[str] = []
    for task, info in results.suite.tasks.items():
        old = baseline.suite.tasks.get(task)
        keep_old = old is not None and old.digest == info.digest
        if old is not None and not keep_old and old_by_task.get(task):
            replaced.append(task)
        pooled.extend(old_by_task.get(task, []) if keep_old else [])
        pooled.extend(r for r in new_runs if r.task == task)
    merged = _fresh(results, _keep_newest(pooled, pool_size), baseline)
    dropped = sorted(set(baseline.suite.tasks) - set(results.suite.tasks))
    from gate.report import count

    msg = f"pooled {count(len(new_runs), 'run')}; now {_describe(merged)}"
    if replaced:
        msg += f"; {len(replaced)} changed task(s) restarted"
    if dropped:
        msg += f"; {len(dropped)} task(s) no longer in the suite dropped"
    return merged, msg


def _keep_newest(runs: list[RunResult], pool_size: int) -> list[RunResult]:
    """Per pool (``RunKey.pool``: the task, and the condition) the newest ``pool_size`` runs,
    by ``created_at``; a condition's runs by refresh (the runs of one refresh are equally new),
    then by the replication they had in it, so the pools of a task's conditions cut a refresh
    at the same replication and keep their pairs (stable: input order breaks ties, and the
    runs being promoted come last)."""
    pools: dict[tuple[object, ...], list[RunResult]] = defaultdict(list)
    for r in runs:
        pools[r.key.pool].append(r)
    out: list[RunResult] = []
    for pool in sorted(pools, key=repr):
        ordered = sorted(pools[pool], key=_newness)
        out.extend(ordered[-pool_size:])
    return out


def _newness(r: RunResult) -> tuple[str, int]:
    """A plain run's ``created_at``; a condition's run's refresh and replication in it."""
    if r.condition is None:
        return r.created_at or "", 0
    source = (r.model_extra or {}).get("source_replication")
    rep = source if isinstance(source, int) else r.replication
    return r.refresh or r.created_at or "", rep


def describe_suite(results: Results) -> str:
    """A suite as a results file names it: its digest and its tasks, e.g. "suite
    sha256:313bcbf0ce0d (16 tasks: add-dry-run-flag, export-percentile, …)"."""
    tasks = sorted(results.suite.tasks)
    shown = ", ".join(tasks[:3]) + (", …" if len(tasks) > 3 else "")
    digest = results.suite.digest
    short = digest[:len("sha256:") + 12] if digest.startswith("sha256:") else digest[:19]
    return f"suite {short} ({len(tasks)} task{'s' if len(tasks) != 1 else ''}: {shown})"


def other_suite(results: Results, baseline: Results) -> bool:
    """Whether ``baseline`` was measured on another suite than ``results``: they share no
    task (a suite that changed, added or dropped tasks still shares the rest)."""
    return not set(results.suite.tasks) & set(baseline.suite.tasks)


def promote_file(results_path: str | os.PathLike[str], baseline_path: str | os.PathLike[str],
                 pool_size: int = 20, *, replace_other_suite: bool = False) -> str:
    """Load, pool and write ``baseline_path`` atomically; return the message for the user.
    A baseline of another suite (:func:`other_suite`) is refused, naming both, unless
    ``replace_other_suite`` (``gate baseline --other-suite``): then these results replace it."""
    results = load_results(results_path)
    if results.interrupted is not None:
        raise BadInput(f"{results_path}: the {results.interruption_note()}: an incomplete "
                       "run cannot become the baseline; run the suite again")
    if not valid_runs(results.runs):
        raise Unmeasurable(f"{results_path}: no valid run to promote (empty or all infra errors)")
    target = Path(baseline_path)
    baseline = load_results(target, "baseline") if target.exists() else None
    replaced = ""
    if baseline is not None and other_suite(results, baseline):
        if not replace_other_suite:
            raise BadInput(f"{target}: the baseline of another suite, {describe_suite(baseline)}"
                           f"; {results_path} ran {describe_suite(results)}, no task in common "
                           "(--other-suite replaces it; --baseline FILE keeps this suite's own)")
        replaced = f"replaced the baseline of {describe_suite(baseline)}: "
        baseline = None
    new, message = promote(results, baseline, pool_size=pool_size)
    message = replaced + message
    if new is baseline:
        return message
    dirty = uncommitted_changes(Path(results_path), results.commit,
                                ignore=(Path(results_path), target))
    new = with_uncommitted(new, baseline, results, dirty)
    write_results(target, new)
    if dirty is not None:
        message += (f"; marked as made from a working tree with uncommitted changes ({dirty}): "
                    "commit them and promote a new run for a baseline whose commit is what it "
                    "measured")
    if results.simulated:
        message += ("; these are the simulator's runs: this baseline judges only `--sim` runs "
                    "(a run through the API is inconclusive against it, and real runs never "
                    "pool with it)")
    return message


def uncommitted_changes(results_path: Path, commit: str | None, *,
                        ignore: tuple[Path, ...] = ()) -> str | None:
    """Why the run's checkout was not its commit, or None when it was (or git cannot say).

    Read when ``gate baseline`` promotes a run in the checkout it ran in (``commit`` is HEAD
    there): any changed or untracked file except the results file, its journal and transcripts,
    and the baseline. No commit at all (a repository with no commit yet) is uncommitted too."""
    import subprocess

    from gate.secrets import scrubbed_env

    where = results_path.resolve().parent
    def git(*args: str) -> subprocess.CompletedProcess[str] | None:
        try:
            return subprocess.run(["git", *args], cwd=where, capture_output=True, text=True,
                                  timeout=30, check=False, env=scrubbed_env())
        except (OSError, subprocess.SubprocessError):
            return None

    top = git("rev-parse", "--show-toplevel")
    if top is None or top.returncode != 0:
        return None  # not in a git checkout: nothing to say
    if commit is None:
        return "no commit: the repository has none yet, or the run recorded none"
    head = git("rev-parse", "HEAD")
    if head is None or head.returncode != 0 or head.stdout.strip() != commit:
        return None  # promoted elsewhere than it ran: the checkout here says nothing about it
    status = git("status", "--porcelain", "-z", "--untracked-files=all")
    if status is None or status.returncode != 0:
        return None
    root = Path(top.stdout.strip())
    skip = {p.resolve() for p in ignore}
    stems = [p.resolve().with_suffix("") for p in ignore]
    changed = []
    for entry in status.stdout.split("\0"):
        if len(entry) < 4:
            continue
        path = (root / entry[3:]).resolve()
        if path in skip or any(str(path).startswith(f"{stem}.") for stem in stems):
            continue
        changed.append(entry[3:])
    if not changed:
        return None
    return (f"{len(changed)} file{'s' if len(changed) != 1 else ''} differ from "
            f"{commit[:12]}, e.g. {changed[0]}")


def with_uncommitted(new: Results, old: Results | None, results: Results,
                     dirty: str | None) -> Results:
    """``new`` with its ``uncommitted`` marks: the old baseline's that still have runs in it,
    and this refresh's when ``dirty``. A list of ``{commit, created_at, why}``; absent when
    every refresh in the baseline came from a clean checkout."""
    marks = [m for m in ((old.model_extra or {}).get("uncommitted") or [] if old is not None
                         and old.agent.fingerprint == new.agent.fingerprint else [])
             if isinstance(m, dict)]
    if dirty is not None:
        marks.append({"commit": results.commit, "created_at": results.created_at, "why": dirty})
    present = {r.refresh or r.created_at for r in new.runs}
    marks = [m for m in marks if m.get("created_at") in present]
    data = new.model_dump(mode="json")
    data.pop("uncommitted", None)
    if marks:
        data["uncommitted"] = marks
    return Results.model_validate(data)


def dump_baseline(baseline: Results) -> str:
    """The text ``write_results`` writes for ``baseline``, for a commit made without a file."""
    data = baseline.model_copy(update={"summary": summarize(baseline.runs)})
    return json.dumps(data.model_dump(mode="json", exclude_none=False), indent=2) + "\n"


def repool(results: Results, entry: HistoryEntry, traces: Sequence[Trace], *,
           baseline_text: str | None, history_text: str | None, traces_text: str | None,
           where: str | os.PathLike[str], pool_size: int, history_size: int) -> Pooled:
    """``results`` pooled onto a baseline, history and traces sidecar given as texts (main's
    refresh, and again on a branch that moved while it pushed): pure, so the same run pooled
    onto the same files gives the same files. ``where`` names the baseline in errors."""
    baseline = (parse_results(baseline_text.encode(), where, "baseline")
                if baseline_text is not None else None)
    pooled, message = promote(results, baseline, pool_size=pool_size)
    before = parse_history(history_text or "")
    entries = [*before, entry][-history_size:]
    sidecar = pooled_sidecar(pooled, traces, parse_sidecar(traces_text))
    return Pooled(message, pooled, pooled is baseline, before, entries, sidecar,
                  {"baseline": dump_baseline(pooled), "history": dump_history(entries)})


def same_agent(a: Results, b: Results) -> bool:
    """Whether ``promote`` pools ``b`` into ``a`` (rather than starting afresh): the same agent
    fingerprint, model label and metering."""
    return (a.agent.fingerprint == b.agent.fingerprint and a.model == b.model
            and a.metering == b.metering)


@dataclass(frozen=True)
class Depth:
    """How much a baseline holds and how old its newest runs are."""

    runs: int
    tasks: int
    refreshes: int
    newest: datetime | None

    def age_days(self, now: datetime) -> float | None:
        return None if self.newest is None else (now - self.newest).total_seconds() / 86400


def _refresh_of(run: RunResult, file: Results) -> str | None:
    """The refresh a run of ``file`` comes from: its stamp once pooled; a run of a file that was
    never pooled (a seed baseline, plain results) comes from that file's own run."""
    return run.refresh if run.refresh is not None else file.created_at


def depth(baseline: Results) -> Depth:
    refreshes = {_refresh_of(r, baseline) for r in baseline.runs}
    stamps = [t for t in (_parse_time(r.created_at) for r in baseline.runs) if t is not None]
    newest = max(stamps) if stamps else _parse_time(baseline.created_at)
    return Depth(runs=len(baseline.runs), tasks=len({r.task for r in baseline.runs}),
                 refreshes=len(refreshes) or 1, newest=newest)


def describe_depth(baseline: Results, *, now: datetime | None = None) -> str:
    """E.g. "24 runs over 8 tasks pooled from 3 refreshes, the newest 2 days old (2026-11-29)"."""
    d = depth(baseline)
    now = now or datetime.now(UTC)
    text = (f"{d.runs} runs over {d.tasks} task{'s' if d.tasks != 1 else ''} pooled from "
            f"{d.refreshes} refresh{'es' if d.refreshes != 1 else ''}")
    age = d.age_days(now)
    if d.newest is not None and age is not None:
        text += f", the newest {_age(age)} old ({d.newest.date().isoformat()})"
    return text


def _age(days: float) -> str:
    if days < 1:
        hours = max(0, round(days * 24))
        return f"{hours} hour{'s' if hours != 1 else ''}"
    n = round(days)
    return f"{n} day{'s' if n != 1 else ''}"


def _parse_time(text: str | None) -> datetime | None:
    if not text:
        return None
    try:
        t = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return t if t.tzinfo else t.replace(tzinfo=UTC)
