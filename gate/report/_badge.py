"""The status badge: one small SVG with the default branch's pass rate and verdict.

Main's refresh writes it to the data branch (``badge.svg``), where a README shows it by its raw
URL (or the Pages URL). A pure function of two values: the label is fixed, the value is text
made from a number and a known verdict word, and every piece of text is XML-escaped anyway,
so nothing in a results file can become markup in it. Widths are estimated from a fixed
per-character advance (Verdana 11px, as shields.io badges are drawn): no font is read.
"""

from __future__ import annotations

from markupsafe import escape

from gate.report._format import pct

#: the badge's right-hand colour, by main's verdict against the baseline it replaced
COLOURS = {"pass": "#2ea043", "regression": "#cf222e", "inconclusive": "#bf8700"}
NEUTRAL = "#6e7781"  # no verdict: the first refresh, or nothing to compare with
LABEL = "agent-gate"


def _width(text: str) -> int:
    """An estimate of ``text``'s width at 11px Verdana, plus the side padding."""
    return 10 + sum(7 if ch.isupper() or ch in "%mw" else 6 for ch in text)


def badge_value(pass_rate: float | None, verdict: str | None) -> str:
    """The badge's value: ``92.0 % · pass``; no verdict: the pass rate alone."""
    rate = "no runs" if pass_rate is None else pct(pass_rate)
    return f"{rate} · {verdict}" if verdict in COLOURS else rate


def render_badge(pass_rate: float | None, verdict: str | None) -> str:
    """The SVG text (``badge.svg``). ``verdict``: pass, regression or inconclusive (else
    none is shown, in grey)."""
    value = badge_value(pass_rate, verdict)
    colour = COLOURS.get(verdict or "", NEUTRAL)
    left, right = _width(LABEL), _width(value)
    total = left + right
    title = escape(f"{LABEL}: {value}")
    label, shown = escape(LABEL), escape(value)
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{total}" height="20" role="img" '
        f'aria-label="{title}">\n'
        f"<title>{title}</title>\n"
        f'<rect width="{left}" height="20" fill="#555"/>\n'
        f'<rect x="{left}" width="{right}" height="20" fill="{colour}"/>\n'
        '<g fill="#fff" text-anchor="middle" '
        'font-family="Verdana,Geneva,DejaVu Sans,sans-serif" font-size="11">\n'
        f'<text x="{left / 2:g}" y="14">{label}</text>\n'
        f'<text x="{left + right / 2:g}" y="14">{shown}</text>\n'
        "</g>\n</svg>\n")
