"""The table of metrics: one row per number the comparison measures in both arms.

A row says what the metric is called, its unit, which way is better, which ``[gate]`` setting
holds its practical margin (none: it never gates), how one run gives its sample and so which
test judges it. Everything that lists the metrics reads this table: the settings
(``block_on``), the comparison and its tests (``gate.compare``), the intervals, the
resolution, the views (``gate.report``), the CI's step outputs. Adding a metric is one row
here plus its test (docs/architecture.md, "How to add a metric").

A run that does not record a metric's sample (a file written before the gate recorded it)
gives ``None``: the metric is then not available in that comparison, and says so.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

#: how a metric reads and is tested: ``pass`` (each run passed or not: the pass rate, exact
#: stratified tests), ``mean`` (a per-run value averaged per task; its change is relative:
#: a within-task permutation test), ``ratio`` (a pooled rate Σ numerator / Σ denominator;
#: its change is in points: the same permutation test)
Kind = Literal["pass", "mean", "ratio"]
#: how a value is written: a rate in percent, a count, dollars, seconds
Unit = Literal["rate", "count", "usd", "seconds"]
#: one run's sample: ``(value,)`` for a mean, ``(numerator, denominator)`` for a ratio;
#: None: the run did not record it
Sample = Callable[[Any], "tuple[float, ...] | None"]


@dataclass(frozen=True)
class Metric:
    """One row of the table."""

    name: str  # the key in JSON, in ``block_on`` and in code
    label: str  # the comparison's words for it ("mean turns")
    short: str  # in a list of several ("turns, cost")
    title: str  # the HTML page's row heading
    kind: Kind
    unit: Unit
    higher_is_better: bool
    sample: Sample
    # the ``[gate]`` setting of its practical margin (relative for a mean, points for a
    # ratio); None for a permutation-tested metric: reported with its change, never gating
    margin: str | None = None
    # its value depends on how usage is metered: not comparable across metering definitions
    metered: bool = False
    # on the comment's first screen (else only in its collapsed details and the other views)
    first_screen: bool = True
    # the step output (and the results summary's field, suite-wide) that reports it
    output: str | None = None
    # the most extreme change of it, as the resolution speaks of it
    effect: str = ""

    @property
    def gates(self) -> bool:
        """Whether it can block: the pass rate always may, a permutation-tested metric only
        with a margin."""
        return self.kind == "pass" or self.margin is not None

    @property
    def points(self) -> bool:
        """A rate whose change is in percentage points (else relative, in percent)."""
        return self.unit == "rate"


def _duration(run: Any) -> tuple[float, ...] | None:
    value = getattr(run, "duration_s", None)
    return None if value is None else (float(value),)


METRICS: tuple[Metric, ...] = (
    Metric("pass_rate", "pass rate", "pass rate", "Pass rate", "pass", "rate", True,
           lambda r: (1.0 if r.status == "passed" else 0.0,), output="pass_rate",
           effect="every run of every task failing"),
    Metric("turns", "mean turns", "turns", "Mean turns", "mean", "count", False,
           lambda r: (float(r.turns),), margin="turns_margin", output="mean_turns",
           effect="turns up on every run"),
    Metric("cost", "cost per run", "cost", "Cost per task-run", "mean", "usd", False,
           lambda r: (float(r.cost_usd),), margin="cost_margin", metered=True,
           output="cost_usd", effect="cost up on every run (a doubling, say)"),
    Metric("cache_hit_rate", "cache-hit rate", "cache-hit rate", "Cache-hit rate", "ratio",
           "rate", True,
           lambda r: (float(r.usage.cache_read_input_tokens), float(r.usage.prompt_tokens)),
           margin="cache_hit_margin", metered=True, output="cache_hit_rate",
           effect="the cache broken on every request"),
    # wall time per run: depends on the runner and the provider, so it never gates
    Metric("duration", "duration per run", "duration", "Duration per task-run", "mean",
           "seconds", False, _duration, first_screen=False, output="duration_s"),
)

BY_NAME: dict[str, Metric] = {m.name: m for m in METRICS}
#: the metrics ``[gate].block_on`` may name (its default: all of them)
GATING: tuple[str, ...] = tuple(m.name for m in METRICS if m.gates)
#: the metrics a within-task permutation test judges, in the table's order
PERMUTED: tuple[Metric, ...] = tuple(m for m in METRICS if m.kind != "pass")


def said(rows: Sequence[Metric]) -> str:
    """``rows``' short names as a sentence says them: ``turns, cost and cache-hit rate``."""
    words = [m.short for m in rows]
    return " and ".join([", ".join(words[:-1]), words[-1]]) if len(words) > 1 else "".join(words)


#: the metrics the permutation tests can block on (those with a margin)
PERMUTED_GATING: tuple[Metric, ...] = tuple(m for m in PERMUTED if m.gates)


def metric(name: str) -> Metric:
    """The row called ``name`` (KeyError for a name not in the table)."""
    return BY_NAME[name]
