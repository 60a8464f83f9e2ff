"""The one number formatter (gate/report/_format.py): every view formats with it."""

from __future__ import annotations

import math

import pytest

from gate.report import (
    FILTERS,
    change_interval,
    dollars,
    interval,
    metric_value,
    num,
    p_is,
    pct,
    pts,
    pval,
    rate,
    rel,
    signed,
    template_env,
    usd,
)


@pytest.mark.parametrize("got, want", [
    (pct(0.6667), "66.7 %"), (pct(None), "n/a"),
    (rate(0.6667), "67%"), (rate(None), "n/a"),
    (pts(-0.125), "−12.5 pts"), (pts(0.0), "+0.0 pts"),
    (rel(0.04), "+4.0 %"), (rel(-0.5), "−50.0 %"),
    (signed(-2.0), "−2.0"), (signed(1.25, 2), "+1.25"),
    (pval(0.01234), "0.012"), (pval(0.00001), "< 0.0001"), (pval(math.nan), "n/a"),
    (pval(None), "n/a"), (p_is(0.05), "p = 0.05"), (p_is(0.00001), "p < 0.0001"),
    (usd(0.01234), "$0.0123"), (usd(1234.5), "$1,234.50"), (usd(None), "n/a"),
    (dollars(1234.5), "$1234.5000"), (num(1234.56), "1,234.6"), (num(2.0, 0), "2"),
    (metric_value("pass_rate", 0.5), "50.0 %"), (metric_value("cost", 0.5), "$0.5000"),
    (metric_value("turns", 3.0), "3.0"),
    (interval("pass_rate", (0.612, 0.703)), "61.2–70.3 %"),
    (interval("cost", (0.01, 0.02)), "$0.0100–$0.0200"), (interval("turns", None), ""),
    (change_interval("cost", (-0.1, 0.05)), "−10.0 to +5.0 %"),
    (change_interval("cache_hit_rate", (-0.02, 0.01)), "−2.0 to +1.0 pts"),
])
def test_each_number_reads_the_same_everywhere(got: str, want: str) -> None:
    assert got == want


def test_the_templates_have_the_formatter_as_filters() -> None:
    env = template_env()
    for name, fn in FILTERS.items():
        assert env.filters[name] is fn
    assert env.from_string("{{ x | pct }} {{ y | usd }}").render(x=0.5, y=2) == "50.0 % $2.00"
