"""Reports of a comparison: the PR comment, the step summary, plain text.

Rendered from Jinja2 templates shipped in the package; untrusted text is escaped so a results
file cannot break the Markdown, inject HTML or mention anyone; the body stays under GitHub's
comment limit however large the suite.
"""

from typing import TYPE_CHECKING, Any

from gate.report._escape import code_span, defuse_markdown, md, plain
from gate.report._render import (
    BUDGET,
    GITHUB_LIMIT,
    preload_templates,
    render_markdown,
    render_summary,
    render_text,
)
from gate.report._render import _env as template_env
from gate.report._render import _url as link_url

if TYPE_CHECKING:
    from gate.report._html import preload as preload_html
    from gate.report._html import render_html, transcript_dir

__all__ = ["BUDGET", "GITHUB_LIMIT", "code_span", "defuse_markdown", "link_url", "md", "plain",
           "preload_html", "preload_templates", "render_html", "render_markdown",
           "render_summary", "render_text", "template_env", "transcript_dir"]

_HTML = {"preload_html": "preload", "render_html": "render_html",
         "transcript_dir": "transcript_dir"}


def __getattr__(name: str) -> Any:
    """The HTML report's names, loaded on first use (it imports numpy and scipy)."""
    if name not in _HTML:
        raise AttributeError(f"module 'gate.report' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module("gate.report._html"), _HTML[name])
