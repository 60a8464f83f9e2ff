"""The cache-hit row's caveat: an arm whose shared prefix (tools + system prompt) is under the
model's minimum cacheable length caches none of it (the API says nothing), so its cache-hit
rate is what the conversation cached, once long enough. Said on the row; the row still gates
on that rate (docs/statistics.md)."""

from __future__ import annotations

from collections.abc import Sequence

from gate.compare._model import MetricResult
from gate.core.results import Results, cache_prefix


def prefix_caveat(baseline: Results, candidate: Results) -> str | None:
    """One clause naming the arms whose prefix is not cached (model, tokens, minimum), or
    None when both arms' prefixes are cached or unknown (an older file, a command agent)."""
    arms = [(who, p) for who, arm in (("baseline", baseline), ("candidate", candidate))
            if (p := cache_prefix(arm)) is not None and not p.cached]
    if not arms:
        return None
    if len(arms) == 2 and arms[0][1] == arms[1][1]:
        said = f"both arms' {arms[0][1].brief()}"
    else:
        said = "; ".join(f"{who}'s {p.brief()}" for who, p in arms)
    return f"{said}: the rate is the conversation's"


def with_prefix_caveat(metrics: Sequence[MetricResult], baseline: Results,
                       candidate: Results) -> list[MetricResult]:
    """``metrics`` with the cache-hit row's caveat set, when there is one."""
    caveat = prefix_caveat(baseline, candidate)
    return [m.model_copy(update={"caveat": caveat})
            if caveat and m.name == "cache_hit_rate" else m for m in metrics]
