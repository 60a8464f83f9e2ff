"""Reports of a comparison: the PR comment, the step summary, plain text, the HTML page.

Rendered from Jinja2 templates shipped in the package; untrusted text is escaped so a results
file cannot break the Markdown, inject HTML or mention anyone; the body stays under GitHub's
comment limit however large the suite.

One render API: every view formats numbers with the one formatter (``_format``: ``pct``,
``usd``, ``pval`` … also the templates' filters) and takes every number, interval and p-value
from :mod:`gate.compare`; a view only lays them out. A new format is one module here
(``_<format>.py``) exporting one ``render_<format>`` below.

The names below load on first use, so the terminal's formatter (``gate run``'s progress)
does not import Jinja2 or numpy.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gate._lazy import lazy_names

if TYPE_CHECKING:
    from gate.report._badge import badge_value, render_badge
    from gate.report._bodies import render_body, render_note, trend_markdown, with_report_link
    from gate.report._effects import render_effects_markdown, render_effects_text
    from gate.report._escape import code_span, defuse_markdown, link_url, md, plain
    from gate.report._format import (
        FILTERS,
        MINUS,
        change_interval,
        count,
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
        usd,
    )
    from gate.report._html import preload as preload_html
    from gate.report._html import render_html
    from gate.report._plan import plan_lines, plan_summary
    from gate.report._render import (
        BUDGET,
        GITHUB_LIMIT,
        HEALTH_LEAD,
        health_lines,
        is_interesting,
        metric_change,
        metric_verdict,
        overhead_note,
        preload_templates,
        render_markdown,
        render_summary,
        render_text,
        schedule_note,
        task_rank,
        task_row,
        template_env,
        title_state,
    )
    from gate.report._sandboxed import sandboxed_page

_WHERE = {
    "badge_value": "_badge", "render_badge": "_badge", "sandboxed_page": "_sandboxed",
    "render_body": "_bodies", "render_note": "_bodies", "trend_markdown": "_bodies",
    "with_report_link": "_bodies",
    "render_effects_markdown": "_effects", "render_effects_text": "_effects",
    "code_span": "_escape", "defuse_markdown": "_escape", "md": "_escape", "plain": "_escape",
    "link_url": "_escape",
    **dict.fromkeys(("FILTERS", "MINUS", "change_interval", "count", "dollars", "interval",
                     "metric_value", "num", "p_is", "pct", "pts", "pval", "rate", "rel",
                     "signed", "usd"), "_format"),
    "render_html": "_html", "preload_html": "_html:preload",
    "plan_lines": "_plan", "plan_summary": "_plan",
    **dict.fromkeys(("BUDGET", "GITHUB_LIMIT", "HEALTH_LEAD", "health_lines", "is_interesting",
                     "metric_change", "metric_verdict", "overhead_note", "preload_templates",
                     "render_markdown", "render_summary", "render_text", "schedule_note",
                     "task_rank", "task_row", "template_env", "title_state"), "_render"),
}

__all__ = [
    "BUDGET",
    "FILTERS",
    "GITHUB_LIMIT",
    "HEALTH_LEAD",
    "MINUS",
    "badge_value",
    "change_interval",
    "code_span",
    "count",
    "defuse_markdown",
    "dollars",
    "health_lines",
    "interval",
    "is_interesting",
    "link_url",
    "md",
    "metric_change",
    "metric_value",
    "metric_verdict",
    "num",
    "overhead_note",
    "p_is",
    "pct",
    "plain",
    "plan_lines",
    "plan_summary",
    "preload_html",
    "preload_templates",
    "pts",
    "pval",
    "rate",
    "rel",
    "render_badge",
    "render_body",
    "render_effects_markdown",
    "render_effects_text",
    "render_html",
    "render_markdown",
    "render_note",
    "render_summary",
    "render_text",
    "sandboxed_page",
    "schedule_note",
    "signed",
    "task_rank",
    "task_row",
    "template_env",
    "title_state",
    "trend_markdown",
    "usd",
    "with_report_link",
]
assert sorted(__all__) == sorted(_WHERE)

__getattr__ = lazy_names(__name__, _WHERE, globals())
