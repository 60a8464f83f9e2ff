"""Reports of a comparison: the PR comment, the step summary, plain text.

Rendered from Jinja2 templates shipped in the package; untrusted text is escaped so a results
file cannot break the Markdown, inject HTML or mention anyone; the body stays under GitHub's
comment limit however large the suite.
"""

from gate.report._escape import defuse_markdown, md
from gate.report._render import (
    BUDGET,
    GITHUB_LIMIT,
    render_markdown,
    render_summary,
    render_text,
)

__all__ = ["BUDGET", "GITHUB_LIMIT", "defuse_markdown", "md", "render_markdown",
           "render_summary", "render_text"]
