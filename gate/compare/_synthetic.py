"""Synthetic results with known truth, for the benchmark and the tests of the verdict.

Runs are drawn per task from a pass probability, with turns, cost and cache hits that look like
an agent's (turns ~ 2 + Poisson, cost ∝ turns, a per-task cache-hit level). The point is to push
them through :func:`gate.compare.compare` exactly as real results are, so a measured
false-block rate or power is the gate's, not a model of it.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from gate.core.results import (
    AgentInfo,
    Results,
    RunResult,
    RunUsage,
    Status,
    SuiteInfo,
    TaskInfo,
    summarize,
)


def reference_rates(n_tasks: int = 15) -> list[float]:
    """the statistics design's suite: 6 easy (0.95), 6 medium (0.7), 3 hard (0.35), scaled to n."""
    base = [0.95] * 6 + [0.7] * 6 + [0.35] * 3
    return [base[i * 15 // n_tasks] for i in range(n_tasks)]


def synthetic_results(
    rates: Sequence[float], runs_per_task: int | Sequence[int], rng: np.random.Generator, *,
    cost_scale: float = 1.0, turns_scale: float = 1.0, cache_hit: Sequence[float] | None = None,
    error_rate: float = 0.0, fingerprint: str = "agent-a", model: str = "simulated",
    commit: str = "0" * 40, created_at: str = "2026-11-30T00:00:00Z", digests: str = "d",
) -> Results:
    """One results file: task ``t00..`` passes with ``rates[i]``, ``runs_per_task`` runs each.

    Per-task turn and cost levels are fixed by the task index (not ``rng``), so two calls
    describe the same tasks; only the runs' noise differs.
    """
    n = len(rates)
    ks = [runs_per_task] * n if isinstance(runs_per_task, int) else list(runs_per_task)
    level = np.random.default_rng(12345).uniform(0.6, 1.6, n)  # task difficulty in turns
    hits = list(cache_hit) if cache_hit is not None else [0.8] * n
    runs: list[RunResult] = []
    for i, (p, k) in enumerate(zip(rates, ks, strict=True)):
        task = f"t{i:02d}"
        for rep in range(k):
            status: Status = "error" if rng.random() < error_rate else (
                "passed" if rng.random() < p else "failed")
            turns = int(2 + rng.poisson(6 * level[i] * turns_scale))
            prompt = int(turns * rng.integers(1500, 2500))
            read = int(prompt * float(np.clip(rng.normal(hits[i], 0.05), 0, 1)))
            creation = int((prompt - read) * 0.7)
            usage = RunUsage(input_tokens=prompt - read - creation, output_tokens=turns * 150,
                             cache_creation_input_tokens=creation,
                             cache_read_input_tokens=read)
            cost = cost_scale * (turns * 0.004 + float(rng.gamma(4.0, 0.002)))
            runs.append(RunResult(
                task=task, replication=rep, status=status,
                reason=None if status == "passed" else f"{status}: synthetic",
                turns=turns, usage=usage, cost_usd=round(cost, 6),
                duration_s=round(turns * 1.5, 3), notes=None,
            ))
    tasks = {f"t{i:02d}": TaskInfo(digest=f"{digests}{i}") for i in range(n)}
    return Results(
        schema_version=1, gate_version="0.0.0+synthetic", created_at=created_at,
        commit=commit, model=model, agent=AgentInfo(kind="builtin", fingerprint=fingerprint),
        suite=SuiteInfo(digest=f"suite-{digests}", tasks=tasks), runs=runs,
        summary=summarize(runs),
    )


def synthetic_condition_runs(
    control: Sequence[float], target: Sequence[float], pairs: int | Sequence[int],
    rng: np.random.Generator, *, coupled: bool = False, extra: Sequence[str] = (),
    first_replication: int = 0,
) -> list[RunResult]:
    """Runs of tasks ``t00..`` under the ``control`` and ``target`` conditions (and any
    ``extra`` condition, drawn like control), ``pairs`` replications each.

    ``coupled``: the two conditions of a replication share one uniform draw (the simulator's
    common random numbers: every episode control solves, target solves); otherwise they are
    independent, as two runs of a real model are.
    """
    ks = [pairs] * len(control) if isinstance(pairs, int) else list(pairs)
    runs: list[RunResult] = []
    usage = RunUsage(input_tokens=100, output_tokens=50, cache_creation_input_tokens=0,
                     cache_read_input_tokens=400)
    for i, (pc, pt, k) in enumerate(zip(control, target, ks, strict=True)):
        for rep in range(first_replication, first_replication + k):
            u = rng.random()
            draws = {"control": u if coupled else rng.random(), "target": u if coupled
                     else rng.random(), **{c: rng.random() for c in extra}}
            for cond, v in draws.items():
                p = pt if cond == "target" else pc
                status: Status = "passed" if v < p else "failed"
                runs.append(RunResult(
                    task=f"t{i:02d}", replication=rep, condition=cond, status=status,
                    reason=None if status == "passed" else "failed: synthetic", turns=6,
                    usage=usage, cost_usd=0.01, duration_s=3.0, notes=None))
    return runs
