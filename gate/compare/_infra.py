"""The infra-error rate of one arm and its limit, defined once (docs/statistics.md).

An arm's infra rate is its error runs over all its runs (an arm with no run has rate 0); it is
over the limit when strictly above ``[gate].max_infra_rate`` (at the limit is measurable).
``compare`` applies it to both arms, and adds the one-sided Fisher test between them;
``gate run`` and main's refresh, which have no second arm, apply the per-arm half through
``gate.ci``'s policy (``check_infra``). Light on purpose: no numpy here.
"""

from __future__ import annotations

from dataclasses import dataclass

from gate.results import Results


@dataclass(frozen=True)
class InfraCount:
    """An arm's runs and how many of them were infra errors."""

    errors: int
    runs: int

    @property
    def rate(self) -> float:
        return infra_rate(self.errors, self.runs)

    def over(self, max_rate: float) -> bool:
        return over_infra_limit(self.rate, max_rate)


def infra_rate(errors: int, runs: int) -> float:
    """Error runs over all runs (0 with no run at all)."""
    return errors / runs if runs else 0.0


def over_infra_limit(rate: float, max_rate: float) -> bool:
    """Too many infra errors: strictly over the limit."""
    return rate > max_rate


def infra_count(results: Results) -> InfraCount:
    """A results file's infra errors and runs, from its summary (every run it holds)."""
    s = results.summary
    return InfraCount(errors=s.errors, runs=s.total + s.errors)
