"""Making untrusted text inert in a GitHub comment.

Task ids, failure reasons, model names and verify notes come from files a pull request
controls. Rendered raw they could close our ``<details>``, inject HTML, break a table row,
open a code span, or ping ``@everyone``. :func:`md` turns any such text into one line of
literal characters: HTML-significant characters become entities, Markdown punctuation is
backslash-escaped, ``|`` cannot end a cell, and ``@`` gets a zero-width joiner so it can never
form a mention. The joiner also breaks GitHub's autolinks: ``#123``, ``owner/repo#123`` and
``GH-123`` never become references (which would notify, and link back from, another issue or
pull request), and a bare ``https://…`` or ``www.…`` never becomes a link.

:func:`defuse_markdown` is for a whole report that came from elsewhere (the artifact a fork's
run uploads in the two-workflow pattern): it keeps the Markdown and the few tags our own
template emits, and makes mentions, issue references, any other HTML and hidden comments
inert.
"""

from __future__ import annotations

import re
from urllib.parse import quote

from markupsafe import Markup

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f\u202a-\u202e\u2066-\u2069]")
_NEWLINES = re.compile(r"\s*[\r\n\u2028\u2029]+\s*")
_MD_PUNCT = re.compile(r"([\\*_\[\]~])")  # emphasis, links/images, strikethrough
_ZWJ = "\u200d"
# An ``@`` not yet followed by the joiner, and the entity spellings GitHub decodes to ``@``.
_AT = re.compile(r"(?:@|&#0*64;|&#[xX]0*40;|&commat;)(?!\u200d)")
# GitHub's autolinked references: ``#123``, ``owner/repo#123``, ``GH-123``, and the entity
# spellings GitHub decodes to ``#``. (``&#124;`` is an entity, not a reference.)
_REF = re.compile(r"((?<!&)#|&#0*35;|&#x0*23;|&num;|\bGH-)(?=\d)", re.IGNORECASE)
# GitHub's autolinked bare URLs (GFM's extended autolinks): ``scheme://`` and ``www.``.
_BARE_URL = re.compile(r"\b(https?|ftp|ssh|git|file):(?=//)|\b(www)(?=\.)", re.IGNORECASE)
# The only HTML our comment template and renderer emit: bare tags, no attributes.
_OUR_TAGS = re.compile(r"<(?:/?(?:details|summary|sub|sup)|br\s*/?)>", re.IGNORECASE)
# Anything else that could open HTML: a tag, an end tag, a comment, a declaration, a PI.
_HTML_OPEN = re.compile(r"<(?=[A-Za-z/!?])")


def no_mentions(text: str) -> str:
    """Every ``@`` followed by a zero-width joiner: it can never ping a user or a team.

    Idempotent, so text :func:`md` already escaped is left as it is.
    """
    return _AT.sub("@" + _ZWJ, text)


def no_references(text: str) -> str:
    """``#123``, ``owner/repo#123`` and ``GH-123`` that GitHub will not link (idempotent)."""
    return _REF.sub(lambda m: ("#" if m.group(1)[0] == "&" else m.group(1)) + _ZWJ, text)


def no_autolinks(text: str) -> str:
    """Bare URLs that GitHub will not turn into links (idempotent): a joiner after the
    scheme's colon or after ``www``."""
    return _BARE_URL.sub(lambda m: (m.group(1) + ":" if m.group(1) else m.group(2)) + _ZWJ,
                         text)


def defuse_markdown(text: str) -> str:
    """A whole untrusted Markdown report, made inert but still rendered as Markdown.

    ``@`` cannot mention; every ``<`` that could open HTML becomes ``&lt;`` except the bare
    ``details``/``summary``/``sub``/``sup``/``br`` tags our template uses, so no ``<img>``,
    ``<script>``, attribute or ``<!-- -->`` comment survives — and with it no copy or lookalike
    of the hidden marker that finds the gate's sticky comment (only we add that). A report we
    rendered ourselves comes out unchanged. ``#123``-style references cannot link (and so
    notify) another issue; links stay, since our own report has them (the CI run).
    """
    text = _CONTROL.sub("", text.replace("\r\n", "\n"))
    out: list[str] = []
    pos = 0
    for tag in _OUR_TAGS.finditer(text):
        out.append(_HTML_OPEN.sub("&lt;", text[pos:tag.start()]))
        out.append(tag.group(0))
        pos = tag.end()
    out.append(_HTML_OPEN.sub("&lt;", text[pos:]))
    return no_references(no_mentions("".join(out)))


def md(value: object, limit: int = 200) -> Markup:
    """One line of literal text, safe in a Markdown paragraph, table cell or HTML block."""
    if isinstance(value, Markup):
        return value
    text = "" if value is None else str(value)
    text = _NEWLINES.sub(" ", text)
    text = _CONTROL.sub("", text)
    if len(text) > limit:
        text = text[: limit - 1].rstrip() + "…"
    text = no_autolinks(no_references(text))
    text = (text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
            .replace('"', "&quot;"))
    text = _MD_PUNCT.sub(r"\\\1", text)
    text = no_mentions(text.replace("|", "&#124;").replace("`", "&#96;"))
    return Markup(text)


def code_span(text: str, limit: int = 100) -> Markup:
    """A name (a branch, a path, a label) as inline code, where GitHub links and mentions
    nothing. Text that could break out of the span or hide in it (a backtick, a newline, a
    control or bidi character), or is longer than ``limit``, is escaped text instead."""
    if (text and len(text) <= limit and "`" not in text and not _CONTROL.search(text)
            and not _NEWLINES.search(text)):
        return Markup(f"`{text}`")
    return md(text, limit)


def plain(value: object, limit: int = 200) -> str:
    """One line for the plain-text report: newlines and control characters gone, length cut."""
    text = "" if value is None else str(value)
    text = _CONTROL.sub("", _NEWLINES.sub(" ", text))
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def slug(value: object, limit: int = 40) -> str:
    """Letters, digits, ``.``, ``_``, ``-`` only: for Mermaid labels, which escape nothing."""
    return re.sub(r"[^A-Za-z0-9._-]", "", str(value))[:limit] or "?"


def link_url(url: str | None) -> Markup | None:
    """An http(s) URL as a link target, its unsafe characters escaped; None for any other."""
    if not url or not url.startswith(("https://", "http://")):
        return None
    return Markup(quote(url, safe=":/?#&=%+,;~@!$*'"))
