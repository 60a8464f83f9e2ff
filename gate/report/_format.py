"""The one number formatter: percentages, points, dollars, deltas, p-values, intervals.

Every view — the PR comment and step summary (Markdown), the HTML page, the plain-text
report, the terminal (``gate run``, ``gate compare``) and the templates' filters — formats
numbers here, so the same number reads the same everywhere. The functions only format: the
numbers, intervals and p-values themselves come from :mod:`gate.compare`. Output is trusted
text (digits and fixed symbols), never anything read from a file.
"""

from __future__ import annotations

import math

from gate.core.metrics import BY_NAME

MINUS = "−"  # U+2212: a minus sign, not a hyphen


def signed(x: float, digits: int = 1) -> str:
    """``+1.5`` / ``−2.0``."""
    return f"{x:+.{digits}f}".replace("-", MINUS)


def pct(x: float | None) -> str:
    """A rate as a percentage with one decimal: ``66.7 %``."""
    return "n/a" if x is None else f"{x * 100:.1f} %"


def rate(x: float | None) -> str:
    """A rate in a terminal line, whole percent: ``67%``."""
    return "n/a" if x is None else f"{x:.0%}"


def pts(x: float | None) -> str:
    """A change of a rate, in percentage points: ``−12.5 pts``."""
    return "n/a" if x is None else f"{signed(x * 100)} pts"


def rel(x: float | None) -> str:
    """A relative change: ``+4.0 %``."""
    return "n/a" if x is None else f"{signed(x * 100)} %"


def pval(x: float | None) -> str:
    """A p-value: two significant digits, ``< 0.0001`` below that."""
    if x is None or math.isnan(x):
        return "n/a"
    return "< 0.0001" if x < 1e-4 else f"{x:.2g}"


def p_is(x: float) -> str:
    """``p = 0.012`` / ``p < 0.0001``."""
    text = pval(x)
    return f"p {text}" if text.startswith("<") else f"p = {text}"


def count(n: float, noun: str) -> str:
    """``1 task``, ``2 tasks``: a count said as a person would."""
    return f"{n:g} {noun}{'s' if n != 1 else ''}"


def usd(x: float | None) -> str:
    """Dollars in a report: four decimals under a dollar, cents above."""
    if x is None:
        return "n/a"
    return f"${x:.4f}" if abs(x) < 1 else f"${x:,.2f}"


def dollars(x: float) -> str:
    """Dollars in a terminal line and a budget: always four decimals."""
    return f"${x:.4f}"


def num(x: float | None, digits: int = 1) -> str:
    if x is None:
        return "n/a"
    return f"{x:,.{digits}f}"


def seconds(x: float | None) -> str:
    """A duration: ``12.3 s``."""
    return "n/a" if x is None else f"{x:,.1f} s"


def metric_value(name: str, x: float | None) -> str:
    """A value of one of compare's metrics (gate/core/metrics.py) in its unit."""
    unit = BY_NAME[name].unit
    if unit == "rate":
        return pct(x)
    return usd(x) if unit == "usd" else seconds(x) if unit == "seconds" else num(x)


def interval(name: str, iv: tuple[float, float] | None) -> str:
    """A metric's interval in its unit: ``61.2–70.3 %``, ``$0.0100–$0.0200``, ``3.0–4.5``,
    ``1.2–1.9 s``."""
    if iv is None:
        return ""
    lo, hi = iv
    unit = BY_NAME[name].unit
    if unit == "rate":
        return f"{lo * 100:.1f}–{hi * 100:.1f} %"
    if unit == "usd":
        return f"{usd(lo)}–{usd(hi)}"
    return f"{num(lo)}–{num(hi)}" + (" s" if unit == "seconds" else "")


def metric_delta(name: str, x: float | None) -> str:
    """A metric's change: points for a rate, percent for the others."""
    return pts(x) if BY_NAME[name].points else rel(x)


def change_interval(name: str, iv: tuple[float, float] | None) -> str:
    """An interval of a change: points for a rate, percent for the others."""
    if iv is None:
        return ""
    lo, hi = iv
    unit = " pts" if BY_NAME[name].points else " %"
    return f"{signed(lo * 100)} to {signed(hi * 100)}{unit}"


FILTERS = {"pct": pct, "rate": rate, "pts": pts, "rel": rel, "pval": pval, "p_is": p_is,
           "usd": usd, "dollars": dollars, "num": num, "signed": signed, "counted": count}
"""The formatter as Jinja2 filters, registered in every template environment."""
