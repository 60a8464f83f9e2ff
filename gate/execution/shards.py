"""Shards over a CI matrix: ``gate run --shard I/N`` runs a deterministic part of the suite's
tasks, and ``gate merge`` joins the N parts back into one results file.

The split is by task (every replication of a task stays in one shard, so per-task statistics
never straddle two runners). With a baseline, tasks are balanced by their mean run duration in
it (longest first, each to the shard with the least work so far, ties to the lower shard
index; a task the baseline lacks counts as the mean task); without one, the sorted task ids
are dealt round-robin. Every shard computes the same split from the same inputs, so N matrix
jobs agree without talking to each other. A planned run (gate/compare/_plan.py) records the
whole suite's plan in every shard and runs its own tasks' planned runs; the merge requires the
same plan of every shard and keeps it.

Merging brings each shard's transcripts along (:func:`carry_transcripts`): the ones its runs
name, read from the ``<shard>.transcripts/`` directory beside the shard's results file (a
downloaded artifact: untrusted) and copied into ``<merged>.transcripts/``, so the merged runs'
traces (the comment's evidence, the HTML report) are there as after a whole run. Only regular
files are read, never through a symlink, each at most :data:`~gate.core.traces.TRANSCRIPT_LIMIT`
and :data:`TRANSCRIPTS_LIMIT` in all; one that is not is skipped with a warning and its run has
no trace (the traces explain a verdict, they never change it). A shard without transcripts (an
older artifact, ``--no-transcripts``) merges all the same.
"""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path
from typing import Any

from gate._files import MiB, printable, read_bytes
from gate.core.results import (
    Interruption,
    Results,
    RunKey,
    new_results,
    runs_by_task,
    transcripts_dir,
)
from gate.core.traces import TRANSCRIPT_LIMIT
from gate.errors import BadInput

#: all the transcripts one merge copies: 128 shards' worth of a big suite's (1,000 tasks × 3
#: runs at ~300 KiB each is ~900 MiB); past it, the rest are skipped with a warning.
TRANSCRIPTS_LIMIT = 1024 * MiB

_SHARD = re.compile(r"([1-9][0-9]{0,4})/([1-9][0-9]{0,4})")


def parse_shard(text: str) -> tuple[int, int]:
    """``"2/3"`` → ``(2, 3)``; 1-based, ``I <= N``."""
    m = _SHARD.fullmatch(text.strip())
    if not m or int(m.group(1)) > int(m.group(2)):
        raise BadInput(f"--shard: {text!r} is not I/N with 1 <= I <= N (e.g. 2/3)")
    return int(m.group(1)), int(m.group(2))


def mean_durations(baseline: Results | None) -> dict[str, float]:
    """Each task's mean run duration (seconds) in the baseline."""
    if baseline is None:
        return {}
    # a file that did not record a run's duration: that run is unknown
    known = runs_by_task(r for r in baseline.runs if r.duration_s is not None)
    return {t: sum(r.duration_s or 0.0 for r in rs) / len(rs) for t, rs in known.items()}


def split(task_ids: list[str], count: int,
          durations: dict[str, float] | None = None) -> list[list[str]]:
    """The tasks of each of ``count`` shards (index 0 is shard 1/N), each list sorted."""
    ids = sorted(set(task_ids))
    shards: list[list[str]] = [[] for _ in range(count)]
    known = {t: d for t, d in (durations or {}).items() if t in ids}
    if not known:
        for i, t in enumerate(ids):
            shards[i % count].append(t)
    else:
        typical = sum(known.values()) / len(known)
        weight = {t: known.get(t, typical) for t in ids}
        load = [0.0] * count
        for t in sorted(ids, key=lambda t: (-weight[t], t)):
            i = min(range(count), key=lambda k: (load[k], k))
            shards[i].append(t)
            load[i] += weight[t]
    return [sorted(s) for s in shards]


# -- merge -----------------------------------------------------------------------------------

def _identity(res: Results) -> dict[str, Any]:
    """What every shard of one run shares: all but the shard index and its tasks."""
    extra = res.model_extra or {}
    sim = extra.get("simulator") or {}
    schedule = res.schedule.model_dump(exclude={"shard"}) if res.schedule else None
    shard = extra.get("shard") or {}
    return {
        "suite digest": res.suite.digest,
        "suite tasks": sorted(res.suite.tasks),
        "agent fingerprint": res.agent.fingerprint,
        "agent kind": res.agent.kind,
        "model": res.model,
        "commit": res.commit,
        "upstream": extra.get("upstream"),
        "upstream api": res.upstream_api.model_dump() if res.upstream_api else None,
        "seed": sim.get("seed") if isinstance(sim, dict) else None,
        "price table": extra.get("price_table"),
        "schedule": schedule,
        # every shard records the whole suite's plan (and runs its own tasks' part of it)
        "plan": res.plan.model_dump(mode="json") if res.plan is not None else None,
        "shard count": shard.get("count") if isinstance(shard, dict) else None,
        "shard balance": shard.get("balanced_by") if isinstance(shard, dict) else None,
        "task selection": shard.get("selected") if isinstance(shard, dict) else None,
        # the conditions the run was asked for (a shard of negative-control tasks runs only
        # some of them); older files: the ones its runs have
        "conditions": (res.schedule.conditions if res.schedule and res.schedule.conditions
                       else sorted({r.condition or "" for r in res.runs})),
    }


def _shard_of(path: Path, res: Results) -> tuple[int, int, list[str]]:
    shard = (res.model_extra or {}).get("shard")
    if not isinstance(shard, dict) or not isinstance(shard.get("index"), int) \
            or not isinstance(shard.get("count"), int) or not isinstance(shard.get("tasks"), list):
        raise BadInput(f"{path}: shard: not the result of `gate run --shard I/N`")
    return shard["index"], shard["count"], [str(t) for t in shard["tasks"]]


def _merge_conditions(extra: dict[str, object], parts: list[Results]) -> None:
    """The per-task records of skill conditions (``conditions``, ``skipped_conditions``) of
    every shard: each shard recorded only its own tasks."""
    conditions: dict[str, dict[str, object]] = {}
    skipped: dict[str, object] = {}
    for res in parts:
        rec = (res.model_extra or {}).get("conditions")
        for name, entry in (rec.items() if isinstance(rec, dict) else ()):
            if not isinstance(entry, dict):
                continue
            into = conditions.setdefault(name, dict(entry))
            for field, value in entry.items():
                have = into.get(field)
                if isinstance(value, dict) and isinstance(have, dict):
                    into[field] = {**have, **value}  # per-task maps: the union
        more = (res.model_extra or {}).get("skipped_conditions")
        if isinstance(more, dict):
            skipped.update(more)
    if conditions:
        extra["conditions"] = conditions
    if skipped:
        extra["skipped_conditions"] = skipped


def merge(shards: list[tuple[Path, Results]]) -> Results:
    """One results file from all N shards of one run; refuses shards of different runs,
    overlapping or missing shards, and runs outside their shard's tasks."""
    if not shards:
        raise BadInput("gate merge: no shard given")
    first_path, first = shards[0]
    ident = _identity(first)
    seen: dict[int, Path] = {}
    count = 0
    owner: dict[str, Path] = {}
    for path, res in shards:
        index, count, tasks = _shard_of(path, res)
        other = _identity(res)
        for what, value in ident.items():
            if other[what] != value:
                raise BadInput(f"{path}: a shard of another run: its {what} differs from "
                               f"{first_path}'s ({other[what]!r} vs {value!r})")
        if index in seen:
            raise BadInput(f"{path}: shard {index}/{count} overlaps {seen[index]} (the same "
                           "shard twice)")
        seen[index] = path
        for t in tasks:
            if t in owner:
                raise BadInput(f"{path}: task {t} is also in {owner[t]}'s shard")
            owner[t] = path
        for i, run in enumerate(res.runs):
            if run.task not in tasks:
                raise BadInput(f"{path}: runs.{i}: task {run.task} is not in the file's shard")
    missing = sorted(set(range(1, count + 1)) - set(seen))
    if missing:
        raise BadInput(f"gate merge: shard{'s' if len(missing) > 1 else ''} "
                       f"{', '.join(f'{i}/{count}' for i in missing)} missing")
    runs = sorted((r for _, res in shards for r in res.runs), key=lambda r: r.key.order)
    extra = {k: v for k, v in (first.model_extra or {}).items()
             if k not in ("shard", "selected_tasks", "simulator", "budget")}
    sim = (first.model_extra or {}).get("simulator")
    if isinstance(sim, dict):
        extra["simulator"] = {"seed": sim.get("seed")}
    selected = ident["task selection"]
    if selected:
        extra["selected_tasks"] = selected
    problems: dict[str, object] = {}
    for _, res in shards:
        problems.update((res.model_extra or {}).get("problems") or {})
    if problems:
        extra["problems"] = problems
    _merge_conditions(extra, [res for _, res in shards])
    extra["merged_from"] = [f"{path} (shard {_shard_of(path, res)[0]}/{count})"
                            for path, res in sorted(shards, key=lambda s: _shard_of(*s)[0])]
    schedule = first.schedule.model_copy(update={"shard": None}) if first.schedule else None
    merged = new_results(model=first.model, agent=first.agent, suite=first.suite,
                         commit=first.commit, runs=runs, schedule=schedule,
                         upstream_api=first.upstream_api, plan=first.plan, **extra)
    gaps = [(path, res.interrupted) for path, res in shards if res.interrupted is not None]
    if gaps:  # a shard that did not finish leaves the whole run incomplete
        merged.interrupted = Interruption(
            reason="; ".join(f"{path}: {i.reason}" for path, i in gaps),
            missing=sorted((m for _, i in gaps for m in i.missing),
                           key=lambda m: (m.replication, m.task)))
    problem = merged.run_problem()
    if problem:
        raise BadInput(f"gate merge: {problem}")
    return merged


# -- transcripts ---------------------------------------------------------------------------

def _transcript_name(recorded: str) -> str | None:
    """The file name a run's recorded transcript path ends in (read by that name only, from
    the directory beside its results file: a results file cannot point at another file)."""
    name = Path(recorded.replace("\\", "/")).name
    return name if name.endswith(".jsonl") and not name.startswith(".") else None


def _real_dir(path: Path) -> str | None:
    """Why ``path`` is not a directory of its own (a symlink is never followed); None when it
    is one, "" when there is nothing there."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return ""
    except OSError as exc:
        return f"cannot be read ({exc.strerror})"
    if stat.S_ISLNK(st.st_mode):
        return "is a symlink (never followed)"
    return None if stat.S_ISDIR(st.st_mode) else "is not a directory"


def _write_new(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path``, never through a symlink already there."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0),
                 0o666)
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)


def carry_transcripts(shards: list[tuple[Path, Results]], merged: Results,
                      output: Path) -> tuple[Results, int, list[str]]:
    """``merged`` (of ``shards``) with each run's transcript copied from its shard's
    ``.transcripts/`` directory into ``output``'s, and its ``transcript`` pointing there (None
    where none was carried); how many were carried; one warning line per shard (or place)
    where some were skipped, naming the first reason."""
    dest = transcripts_dir(output)
    source: dict[RunKey, Path] = {run.key: path for path, res in shards for run in res.runs}
    wanted = [r for r in merged.runs if r.transcript and source.get(r.key) is not None]
    warnings: list[str] = []
    carried: dict[RunKey, str] = {}
    if wanted:
        why = _real_dir(dest)
        if why:
            return (_pointed(merged, carried), 0,
                    [f"{printable(str(dest))} {why}: the merged runs have no transcripts"])
    skipped: dict[Path, list[str]] = {}
    names: set[str] = set()
    total = 0
    for run in wanted:
        assert run.transcript is not None
        path = source[run.key]
        folder = transcripts_dir(path)
        name = _transcript_name(run.transcript)
        problem: str | None
        if name is None:
            problem = f"{printable(run.transcript)} is not a transcript file name"
        elif name in names:
            problem = f"{printable(name)} is named by two runs"
        else:
            why = _real_dir(folder)
            if why == "":  # no transcripts in this shard: its runs have no traces
                continue
            problem = f"{printable(str(folder))} {why}" if why else None
        if problem is None and name is not None:
            try:
                src = folder / name
                if os.path.islink(src):
                    raise BadInput(f"{src}: transcript is a symlink (never followed)")
                data = read_bytes(src, TRANSCRIPT_LIMIT, "transcript", nofollow=True)
                if total + len(data) > TRANSCRIPTS_LIMIT:
                    raise BadInput(f"{src}: transcript passes the merge's limit of "
                                   f"{TRANSCRIPTS_LIMIT // MiB} MiB of transcripts")
                dest.mkdir(parents=True, exist_ok=True)
                _write_new(dest / name, data)
            except BadInput as exc:
                problem = str(exc)
            except OSError as exc:
                problem = f"{dest / name}: cannot write the transcript ({exc.strerror})"
            else:
                total += len(data)
                names.add(name)
                carried[run.key] = str(dest / name)
                continue
        skipped.setdefault(path, []).append(problem or "")
    for path, problems in skipped.items():
        n = len(problems)
        runs = "their runs have" if n > 1 else "its run has"
        warnings.append(f"{printable(str(path))}: {n} transcript{'s' if n > 1 else ''} not "
                        f"carried into the merge, so {runs} no trace ({printable(problems[0])})")
    return _pointed(merged, carried), len(carried), warnings


def _pointed(merged: Results, carried: dict[RunKey, str]) -> Results:
    """``merged`` with each run's transcript the copy carried for it, or None."""
    runs = [r.model_copy(update={"transcript": carried.get(r.key)}) for r in merged.runs]
    return merged.model_copy(update={"runs": runs})
