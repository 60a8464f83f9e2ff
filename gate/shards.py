"""Shards over a CI matrix: ``gate run --shard I/N`` runs a deterministic part of the suite's
tasks, and ``gate merge`` joins the N parts back into one results file.

The split is by task (every replication of a task stays in one shard, so per-task statistics
never straddle two runners). With a baseline, tasks are balanced by their mean run duration in
it (longest first, each to the shard with the least work so far, ties to the lower shard
index; a task the baseline lacks counts as the mean task); without one, the sorted task ids
are dealt round-robin. Every shard computes the same split from the same inputs, so N matrix
jobs agree without talking to each other.
"""

from __future__ import annotations

import re
from collections import defaultdict
from pathlib import Path
from typing import Any

from gate.errors import BadInput
from gate.results import Interruption, Results, new_results

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
    acc: dict[str, list[float]] = defaultdict(list)
    for r in baseline.runs:
        acc[r.task].append(r.duration_s)
    return {t: sum(v) / len(v) for t, v in acc.items()}


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
        "seed": sim.get("seed") if isinstance(sim, dict) else None,
        "price table": extra.get("price_table"),
        "schedule": schedule,
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
    runs = sorted((r for _, res in shards for r in res.runs), key=lambda r: r.key)
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
                         commit=first.commit, runs=runs, schedule=schedule, **extra)
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

