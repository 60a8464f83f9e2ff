"""The infra-error rate of one arm and its limit, defined once (docs/statistics.md).

An arm's infra rate is its error runs over all its runs (an arm with no run has rate 0); it is
over the limit when strictly above ``[gate].max_infra_rate`` (at the limit is measurable).
``compare`` applies it to both arms, and adds the one-sided Fisher test between them;
``gate run`` and main's refresh, which have no second arm, apply the per-arm half through
``gate.ci``'s policy (``check_infra``). One task's infra errors are judged too
(:func:`infra_took_over`): an arm's rate and test can hide a task that went to infra errors.
Light on purpose: no numpy here.
"""

from __future__ import annotations

from dataclasses import dataclass

from gate.core.results import Results


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


#: a task's share of infra errors over which its runs in an arm are "mostly" errors
MOSTLY = 0.5


def infra_took_over(errors: int, valid: int, baseline_errors: int, baseline_valid: int,
                    max_rate: float) -> bool:
    """Whether one task's infra errors rose in the candidate: its infra rate there is over
    the task's limit (``max_rate``, ``[gate].max_infra_rate``, but at least :data:`MOSTLY`:
    a task has few runs) where the baseline's is not. Its few valid runs stand for runs
    that never happened, so its pass rate there is unknown: ``compare`` names it and the
    verdict is inconclusive, never a pass (a task from 6/6 passed to 1 passed + 5 errors;
    the arm's rate, 5 of 60, stays under the limit and its test). Not a regression: an infra
    error is no evidence of one. ``max_infra_rate = 1`` turns it off with the arm's limit."""
    limit = max(max_rate, MOSTLY)
    return (over_infra_limit(infra_rate(errors, errors + valid), limit)
            and not over_infra_limit(infra_rate(baseline_errors, baseline_errors
                                                + baseline_valid), limit))
