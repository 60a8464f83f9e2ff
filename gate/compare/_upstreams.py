"""A yardstick never crosses upstreams silently.

A results file records the model API that answered its runs (``upstream_api``: the upstream,
its provider, region, the model id as called, the base URL's host and the price rules applied;
gate/upstream). When the baseline was measured on another upstream than the run it judges:

- the verdict names both (a note and the headline's end), whatever it is;
- where the two are priced by different rules (``pricing``: a platform's regional endpoint, a
  gateway's own prices), cost is reported but not gated, as for a change of metering
  definition (docs/statistics.md): a cost difference would be the price list's, not the
  agent's;
- where the configured model differs too, the comparison is inconclusive (exit 3), naming the
  fix: a difference could be the model's or the upstream's, and nothing in the two files tells
  them apart.

An older file (no record) compares as it always has: nothing is known of its upstream, so
nothing is claimed.
"""

from __future__ import annotations

from dataclasses import dataclass

from gate.compare._model import Comparison, ScheduleCheck
from gate.core.results import Results, UpstreamInfo

#: the metrics whose value is a price (cost per run): reported, not gated, across price rules
PRICED = ("cost",)


@dataclass(frozen=True)
class UpstreamChange:
    """The two arms' upstreams, when they differ."""

    baseline: UpstreamInfo
    candidate: UpstreamInfo

    @property
    def prices_differ(self) -> bool:
        return self.baseline.pricing != self.candidate.pricing

    def named(self) -> str:
        return (f"the baseline was measured on {self.baseline.describe()}, this run on "
                f"{self.candidate.describe()}")


def upstream_change(base: Results, pr: Results) -> UpstreamChange | None:
    """The two arms' upstreams when both are recorded and they differ (upstream, provider,
    region or host); None otherwise."""
    b, p = base.upstream_api, pr.upstream_api
    if b is None or p is None:
        return None
    if b.place == p.place:
        return None
    return UpstreamChange(b, p)


def with_prices_check(schedule: ScheduleCheck, base: Results, pr: Results) -> ScheduleCheck:
    """``schedule`` with cost left out of the verdict when the two arms' upstreams price by
    different rules (reported, with why)."""
    change = upstream_change(base, pr)
    if change is None or not change.prices_differ:
        return schedule
    why = (f"cost is reported, not gated: {change.named()}, priced by "
           f"{change.baseline.pricing}'s rules and this run by {change.candidate.pricing}'s; "
           "refresh the baseline on this upstream to gate cost")
    notes = {**schedule.notes, **{name: "not comparable: the two arms' upstreams price "
                                  "differently" for name in PRICED}}
    return schedule.model_copy(update={
        "not_comparable": [*schedule.not_comparable,
                           *(n for n in PRICED if n not in schedule.not_comparable)],
        "reason": "; ".join(filter(None, [schedule.reason, why])), "notes": notes})


def with_upstream_check(c: Comparison, base: Results, pr: Results) -> Comparison:
    """``c`` with the baseline's other upstream named (a note, the headline's end); when the
    model differs too, inconclusive (exit 3) with the fix. A regression found by what the
    comparison could measure is kept as "would block"."""
    change = upstream_change(base, pr)
    if change is None:
        return c
    named = change.named()
    note = f"Another upstream: {named}."
    if base.model == pr.model:
        return c.model_copy(update={"notes": [*c.notes, note],
                                    "headline": f"{c.headline}; {named}"})
    problem = (f"{named}, and the model differs ({base.model} → {pr.model}): a difference "
               "could be the upstream's or the model's. Refresh the baseline on this upstream "
               f"(`gate run` with [agent] upstream = \"{change.candidate.upstream}\", then "
               "`gate baseline`), or run this change on the baseline's upstream "
               f"(\"{change.baseline.upstream}\")")
    kept = [r for r in c.reasons if c.verdict == "inconclusive"]
    kept += [f"would block: {r}" for r in c.reasons if c.verdict == "regression"]
    reasons = [problem, *kept]
    return c.model_copy(update={"verdict": "inconclusive", "exit_code": 3, "reasons": reasons,
                                "notes": [*c.notes, note],
                                "headline": "Inconclusive: " + "; ".join(reasons)})
