"""Issue 39, item 3, in process (the CLI's run and rows: tests/e2e/test_prefix_not_cached.py;
the count: tests/execution/test_prefix_count.py): the results' record of a shared prefix, read
with suspicion, and the cache-hit row's caveat."""

from __future__ import annotations

from typing import Any

import pytest

from gate.compare import compare
from gate.core.config import GateSettings
from gate.core.results import CachePrefix, Results, cache_prefix
from gate.report import metric_change, render_text
from tests.helpers.report import _results, _run

SETTINGS = GateSettings(permutations=999, power_simulations=0)


def _arm(record: Any = None) -> Results:
    res = _results([_run(t, r, "passed") for t in ("a", "b") for r in range(3)])
    if record is not None:
        res.cache_prefix = record  # type: ignore[attr-defined]
    return res


SHORT = {"model": "claude-sonnet-5-5", "tokens": 338, "minimum": 1024, "cached": False}
LONG = {"model": "claude-sonnet-5-5", "tokens": 1054, "minimum": 1024, "cached": True}


@pytest.mark.parametrize(("record", "read"), [
    (SHORT, CachePrefix("claude-sonnet-5-5", 338, 1024)),
    ({**SHORT, "model": "x *bold* <b>"}, CachePrefix("the model", 338, 1024)),
    ({**SHORT, "tokens": True}, None), ({**SHORT, "minimum": 0}, None),
    ({**SHORT, "tokens": "338"}, None), ("short", None), (None, None),
])
def test_the_record_is_read_with_suspicion(record: Any, read: CachePrefix | None) -> None:
    assert cache_prefix(_arm(record)) == read


def test_the_cache_hit_row_notes_the_arm_whose_prefix_is_not_cached() -> None:
    c = compare(_arm(LONG), _arm(SHORT), SETTINGS)
    row = c.metric("cache_hit_rate")
    assert row.caveat == ("candidate's prefix not cached (338 < 1,024 tokens, "
                          "claude-sonnet-5-5): the rate is the conversation's")
    assert metric_change(row).endswith(f" · {row.caveat}")
    assert row.caveat in render_text(c)
    assert all(m.caveat is None for m in c.metrics if m.name != "cache_hit_rate")
    both = compare(_arm(SHORT), _arm(SHORT), SETTINGS).metric("cache_hit_rate")
    assert both.caveat is not None and both.caveat.startswith("both arms' prefix not cached")


@pytest.mark.parametrize(("base", "pr"), [(LONG, LONG), (None, None), (SHORT, None)])
def test_no_caveat_when_no_arm_is_known_short_but_the_one_that_is(base: Any, pr: Any) -> None:
    row = compare(_arm(base), _arm(pr), SETTINGS).metric("cache_hit_rate")
    if base is SHORT:
        assert row.caveat is not None and row.caveat.startswith("baseline's prefix not cached")
    else:
        assert row.caveat is None
