"""What ``gate ci`` posts besides the comparison's report, rendered here like the report: the
bodies from ``gate/templates`` (running, cancelled, skipped, failure, refresh, the artifact's
link), the CI layer's one-line notes on a verdict, and main's pass-rate trend. Every value is
escaped as untrusted text unless it is ``Markup``; no forge is named here (the adapters post
what is rendered). Light to import: the templates' environment loads on first use."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gate.core.history import HistoryEntry


def render_body(template: str, **values: object) -> str:
    """A body the gate posts, from ``gate/templates``: the same environment as the report, so
    every value is escaped as untrusted text unless it is ``Markup``."""
    from gate.report._render import template_env  # the comparison's modules load on use

    return template_env().get_template(template).render(**values)


def render_note(name: str, **values: object) -> str:
    """One of the CI layer's one-line notes on a verdict: a macro of
    ``gate/templates/notes.md.j2``, escaped like every body."""
    from gate.report._render import template_env

    return str(getattr(template_env().get_template("notes.md.j2").module, name)(**values))


def with_report_link(body: str, url: str, footer: str | None = None) -> str:
    """``body`` with the report's link on its first screen: first on the link line (which
    the renderer starts with :data:`LINK_MARK`, before the first collapsed block), replacing
    a report link already there; a line of its own when there is none. ``footer`` (the
    report's line that says what it holds) closes the body."""
    from gate.report._escape import link_url
    from gate.report._screen import LINK_MARK, REPORT_TEXT

    target = link_url(url)
    if target is None:
        return body
    link = f"[{REPORT_TEXT}]({target})"
    lines = body.split("\n")
    end = next((i for i, line in enumerate(lines) if line.startswith("<details>")), len(lines))
    at = next((i for i in range(end) if lines[i].startswith(LINK_MARK)), None)
    if at is None:
        lines[end:end] = [LINK_MARK + link, ""]
    else:
        rest = lines[at].removeprefix(LINK_MARK)
        if rest.startswith(f"[{REPORT_TEXT}]("):
            rest = rest.split(")", 1)[1].removeprefix(" · ")
        lines[at] = LINK_MARK + link + (f" · {rest}" if rest else "")
    out = "\n".join(lines)
    if footer:
        out = out.rstrip("\n") + "\n\n" + footer.strip("\n") + "\n"
    return out


def trend_markdown(entries: list[HistoryEntry], last: int = 20) -> str | None:
    """A Mermaid chart (GitHub renders it) of main's pass rate, for main's step summary.
    None when there is too little to draw."""
    from gate.core.history import trend_entries

    same = trend_entries(entries, last)
    if len(same) < 2:
        return None
    labels = ", ".join(f'"{(e.commit or "?")[:7]}"' for e in same)
    rates = ", ".join(f"{100 * (e.pass_rate or 0):.0f}" for e in same)
    costs = [e.cost_usd for e in same]
    lines = [
        "```mermaid",
        "xychart-beta",
        f'    title "main: pass rate of the last {len(same)} runs (%)"',
        f"    x-axis [{labels}]",
        '    y-axis "pass rate %" 0 --> 100',
        f"    line [{rates}]",
        "```",
        "",
        f"Latest main run: {_pct(same[-1].pass_rate)} passed ({same[-1].passed}/"
        f"{same[-1].total}), cost ${costs[-1]:.4f}; range over these runs "
        f"{_pct(min(e.pass_rate or 0 for e in same))}–{_pct(max(e.pass_rate or 0 for e in same))}.",
    ]
    return "\n".join(lines)


def _pct(v: float | None) -> str:
    return "n/a" if v is None else f"{100 * v:.0f}%"
