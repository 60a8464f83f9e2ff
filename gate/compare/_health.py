"""Suite health: the baseline's tasks that carry no signal, or disagree with their own history.

One rule, read from the pooled baseline alone (its runs and the refresh each came from), named
once by every report and by ``gate validate``:

* **always fails**: every valid baseline run of the task failed, over at least
  :data:`ALWAYS_FAILS_MIN_RUNS` runs. A drop cannot show on a task that never passes, so it
  carries no signal on pass rate (it still does on turns and cost). Ten is the threshold: a task
  whose pass rate is 26 % or more fails ten runs in a row less than 5 % of the time
  (0.74¹⁰ ≈ 0.05), so "failed all 10" says the task is out of the agent's reach, not unlucky.
  A task with fewer valid runs is not judged (four failures of a 0.4-rate task are 13 % likely).
* **disagrees with its history**: the task's runs of the pool's latest refresh against its runs
  of the earlier refreshes, by Fisher's exact test (two-sided: a task that suddenly passes is
  as suspect as one that suddenly fails). Flagged at p ≤ :data:`HISTORY_ALPHA` divided by the
  number of tasks tested (Bonferroni), so a suite whose tasks are steady names none in at least
  99 % of refreshes, whatever its size.

A task of middling difficulty is where models differ: nothing here depends on a pass rate
being middling, and no reason advises dropping a task.
"""

from __future__ import annotations

from math import comb

from gate.compare._model import TaskHealth
from gate.core.results import Results, RunResult, runs_by_task, valid_runs

#: the fewest valid baseline runs, all failed, for a task to be named as always failing
ALWAYS_FAILS_MIN_RUNS = 10
#: the chance a steady suite has a task named as disagreeing with its history (Bonferroni)
HISTORY_ALPHA = 0.01


def fisher_two_sided(a: int, n_a: int, b: int, n_b: int) -> float:
    """Fisher's exact two-sided p-value of ``a`` passes in ``n_a`` runs against ``b`` in
    ``n_b``: the probability, with the margins fixed (hypergeometric), of every table no more
    likely than the one seen."""
    total, passes = n_a + n_b, a + b
    denom = comb(total, n_a)
    lo, hi = max(0, passes - n_b), min(passes, n_a)
    probs = {k: comb(passes, k) * comb(total - passes, n_a - k) / denom
             for k in range(lo, hi + 1)}
    seen = probs[a] * (1 + 1e-7)
    return min(1.0, sum(p for p in probs.values() if p <= seen))


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def _history(task: str, runs: list[RunResult], stamp: str | None
             ) -> tuple[float, str] | None:
    """The task's latest refresh against its earlier ones: the p-value and the counts said,
    or None with fewer than two refreshes."""
    by: dict[str, list[RunResult]] = {}
    for r in runs:
        by.setdefault(r.refresh or r.created_at or stamp or "", []).append(r)
    if len(by) < 2:
        return None
    latest = max(by)
    new = by[latest]
    old = [r for k, rs in by.items() if k != latest for r in rs]
    a, b = sum(r.status == "passed" for r in new), sum(r.status == "passed" for r in old)
    p = fisher_two_sided(a, len(new), b, len(old))
    said = (f"passed {a} of {len(new)} in the latest refresh ({latest[:10]}) against {b} of "
            f"{len(old)} in the {len(by) - 1} earlier refresh{'' if len(by) == 2 else 'es'}")
    return p, said


def suite_health(baseline: Results) -> list[TaskHealth]:
    """The baseline's tasks to look at, each once, with why (module docstring), in task order.
    Only the plain runs count (a skill condition's runs measure another agent)."""
    by_task = runs_by_task(r for r in valid_runs(baseline.runs) if r.condition is None)
    out: dict[str, TaskHealth] = {}
    for task, runs in by_task.items():
        if len(runs) >= ALWAYS_FAILS_MIN_RUNS and not any(r.status == "passed" for r in runs):
            out[task] = TaskHealth(
                task=task, kind="always_fails",
                reason=(f"failed all {len(runs)} valid baseline runs: it carries no signal "
                        "on pass rate (what never passes cannot fall), only on turns and cost"))
    tested = {t: h for t, runs in by_task.items() if t not in out
              if (h := _history(t, runs, baseline.created_at)) is not None}
    level = HISTORY_ALPHA / len(tested) if tested else 0.0
    for task, (p, said) in tested.items():
        if p <= level:
            out[task] = TaskHealth(
                task=task, kind="disagrees", p_value=p,
                reason=(f"disagrees with its own history: {said} (Fisher's exact p = {p:.2g}, "
                        f"at most {level:.2g}: 1 % over {_plural(len(tested), 'task')} "
                        "tested); the task, its environment or the agent changed: read its "
                        "latest runs"))
    return [out[t] for t in sorted(out)]
