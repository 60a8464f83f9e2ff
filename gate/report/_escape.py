"""Making untrusted text inert in a GitHub comment.

Task ids, failure reasons, model names and verify notes come from files a pull request
controls. Rendered raw they could close our ``<details>``, inject HTML, break a table row,
open a code span, or ping ``@everyone``. :func:`md` turns any such text into one line of
literal characters: HTML-significant characters become entities, Markdown punctuation is
backslash-escaped, ``|`` cannot end a cell, and ``@`` gets a zero-width joiner so it can never
form a mention.
"""

from __future__ import annotations

import re

from markupsafe import Markup

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f\u202a-\u202e\u2066-\u2069]")
_NEWLINES = re.compile(r"\s*[\r\n\u2028\u2029]+\s*")
_MD_PUNCT = re.compile(r"([\\*_\[\]~])")  # emphasis, links/images, strikethrough
_ZWJ = "\u200d"


def md(value: object, limit: int = 200) -> Markup:
    """One line of literal text, safe in a Markdown paragraph, table cell or HTML block."""
    if isinstance(value, Markup):
        return value
    text = "" if value is None else str(value)
    text = _NEWLINES.sub(" ", text)
    text = _CONTROL.sub("", text)
    if len(text) > limit:
        text = text[: limit - 1].rstrip() + "…"
    text = (text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
            .replace('"', "&quot;"))
    text = _MD_PUNCT.sub(r"\\\1", text)
    text = (text.replace("|", "&#124;").replace("`", "&#96;")
            .replace("@", "@" + _ZWJ))
    return Markup(text)


def plain(value: object, limit: int = 200) -> str:
    """One line for the plain-text report: newlines and control characters gone, length cut."""
    text = "" if value is None else str(value)
    text = _CONTROL.sub("", _NEWLINES.sub(" ", text))
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def slug(value: object, limit: int = 40) -> str:
    """Letters, digits, ``.``, ``_``, ``-`` only: for Mermaid labels, which escape nothing."""
    return re.sub(r"[^A-Za-z0-9._-]", "", str(value))[:limit] or "?"
