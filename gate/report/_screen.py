"""The comment's first screen: what a phone shows before the first collapsed block.

:data:`FIRST_SCREEN` lines at most (the Markdown source lines before the first ``<details>``,
blank ones included), none wider than :data:`COLUMNS` as GitHub shows it (a link counts its
text, not its address): the verdict; the one-line why (the judge's short reasons,
``Comparison.why``, as many as fit, the rest in the first collapsed block); the key numbers in
a table of four columns; a few lines under it (the CI layer's notes, the action line), when
they fit; and the link line: the report, the CI run, and the command that reproduces the
verdict locally. Every number here is compare's (gate.compare), formatted, never recomputed,
and the why is the judge's, never re-decided here.
"""

from __future__ import annotations

import html
import re
from collections.abc import Sequence

from gate.compare import Comparison
from gate.report._format import metric_value

#: lines before the first ``<details>`` (blank lines included)
FIRST_SCREEN = 15
#: the widest a first-screen line may show
COLUMNS = 80
#: the compare headline's limit when a comparison carries no why (one not from the judge)
HEADLINE_MAX = COLUMNS
#: what the link line starts with; the report's link is put after it once its URL is known
LINK_MARK = "📎 "
#: the report's link as the link line shows it (``with_report_link``), and its width there
REPORT_TEXT = "Report"
REPORT_ROOM = len(REPORT_TEXT + " · ")
#: the why's label on the first screen (the title above it says the verdict)
WHY = "Why"
#: the why's reasons on the first line are joined by this
JOIN = " · "

_WORDS = {"pass": "No regression", "regression": "Regression", "inconclusive": "Inconclusive"}
_LINK = re.compile(r"!?\[([^\]]*)\]\([^)\s]*\)")
_ESCAPED = re.compile(r"\\([\\`*_{}\[\]()#+\-.!|~<>])")

#: how compare's resolution statement begins when the design was blind (gate.compare)
BLIND = "this comparison could not have detected a regression"


def shown_width(line: str) -> int:
    """How wide a Markdown source line shows on GitHub: a link is its text, emphasis marks,
    code ticks, backslash escapes and a hard break take no room, an entity is one character."""
    text = _LINK.sub(r"\1", line.rstrip("\\"))
    text = _ESCAPED.sub(r"\1", text.replace("**", "").replace("`", ""))
    return len(html.unescape(text).replace("\u200d", ""))


def verdict_words(c: Comparison) -> str:
    """The verdict in words, as compare's headline starts (``No regression``, ``Regression``,
    ``Inconclusive``, or a state a later step of the judge names there), when short."""
    prefix = c.headline.partition(": ")[0]
    return prefix if 0 < len(prefix) <= 30 else _WORDS[c.verdict]


def why_line(c: Comparison) -> tuple[str, str, list[str]]:
    """(the line's label, the why as one line, the reasons that did not fit). The why is the
    judge's (``Comparison.why``), under the title that says the verdict; a comparison
    without one (``compare`` alone) says its headline, shortened, after the verdict's words."""
    if not c.why:
        headline, details = short_headline(c)
        return verdict_words(c), headline.partition(": ")[2] or headline, details
    room = COLUMNS - len(WHY) - 2
    if len(JOIN.join(c.why)) <= room:
        return WHY, JOIN.join(c.why), []
    room -= len(f"{JOIN}+{len(c.why)} more")
    shown: list[str] = []
    for reason in c.why:  # in order; one too long leaves room for a shorter one after it
        if len(JOIN.join([*shown, reason])) <= room:
            shown.append(reason)
        elif not shown:  # the first reason is always said, cut to fit
            shown.append(reason[:room - 1].rstrip() + "…")
    rest = [r for r in c.why if r not in shown]
    return WHY, JOIN.join([*shown, *([f"+{len(rest)} more"] if rest else [])]), rest


def _after(text: str, head: str) -> str:
    """``text`` without ``head: `` at its start (said by the headline), capitalised."""
    if not text.startswith(head + ": "):
        return text
    rest = text[len(head) + 2:]
    return rest[:1].upper() + rest[1:]


def _fits(text: str) -> bool:
    return len(text) <= HEADLINE_MAX


def _arrows(c: Comparison, names: Sequence[str]) -> str:
    return ", ".join(f"{m.label} {metric_value(m.name, m.baseline)} → "
                     f"{metric_value(m.name, m.candidate)}"
                     for m in c.metrics if m.name in names)


def _reasons_below(n: int) -> str:
    return f"{n} reason{'s' if n != 1 else ''} below"


def short_headline(c: Comparison) -> tuple[str, list[str]]:
    """(the headline, the detail it leaves out, one line each). Compare's headline when it is
    short; else its verdict words and a summary, with the headline's reasons below it (a
    blocking metric's reason is its table row already, so it is not repeated). A broken task
    is named in it whatever else is left out (:func:`_naming_broken`)."""
    return _naming_broken(c, *_short_headline(c))


#: broken tasks named in a shortened headline before "and N more"
_BROKEN_NAMED = 3


def _naming_broken(c: Comparison, headline: str, details: list[str]) -> tuple[str, list[str]]:
    """``headline`` with the broken tasks named after its verdict words (the summary kept
    when it still fits): a task that could not load is never left to a line below."""
    names = c.suite.broken
    if not names or headline == c.headline:  # compare's own headline names them
        return headline, details
    prefix, _, summary = headline.partition(": ")
    shown = ", ".join(names[:_BROKEN_NAMED])
    if len(names) > _BROKEN_NAMED:
        shown += f" and {len(names) - _BROKEN_NAMED} more"
    broken = f"{len(names)} task{'s' if len(names) != 1 else ''} broken ({shown})"
    if _fits(line := f"{prefix}: {broken}; {summary}"):
        return line, details
    # the summary goes below (unless it only pointed there)
    rest = details if not summary or summary in details or summary.endswith(" below") \
        else [summary, *details]
    if _fits(line := f"{prefix}: {broken}"):
        return line, rest
    return f"{prefix}: {len(names)} task{'s' if len(names) != 1 else ''} broken", rest


def _short_headline(c: Comparison) -> tuple[str, list[str]]:
    if _fits(c.headline):
        return c.headline, []
    prefix, _, body = c.headline.partition(": ")
    if len(prefix) > 40:
        prefix, body = _WORDS[c.verdict], c.headline
    rest, details = body, []
    for r in c.reasons:
        if r in rest:
            rest = rest.replace(r, "", 1)
            details.append(r)
    details += [x.strip() for x in rest.split(";")
                if x.strip() and not x.strip().endswith(":")]  # e.g. the unpriced note
    blocking = [m for m in c.metrics if m.blocks]
    summary = None
    if c.resolution is not None and c.resolution.statement in details:
        summary = BLIND
        details = [_after(d, BLIND) for d in details]
    elif blocking:
        labels = [m.name for m in blocking]
        details = [d for d in details if not any(d.startswith(f"{m.label} ") for m in blocking)]
        extra = ["skill effect"] if c.skill_effect is not None and c.skill_effect.blocks else []
        summary = next((x for x in (", ".join([_arrows(c, labels), *extra]),
                                    ", ".join([*(m.label for m in blocking), *extra]))
                        if _fits(f"{prefix}: {x}")), None)
    elif len(details) == 1 and _fits(f"{prefix}: {details[0]}"):
        return f"{prefix}: {details[0]}", []
    elif c.unjudged is not None and details and _fits(f"{prefix}: {details[0]}"):
        # "Not judged by the simulator: the system prompt … changed": what was not judged
        return f"{prefix}: {details[0]}", details[1:]
    if summary is None or not _fits(f"{prefix}: {summary}"):
        summary = _reasons_below(len(details))
    return f"{prefix}: {summary}", details


def split_lead(lines: Sequence[str], room: int, keep_last: bool) -> tuple[list[str], list[str]]:
    """(the lines on the first screen, the rest for the first collapsed block): the first
    ``room`` lines that fit :data:`COLUMNS` (in a quote: two columns less); with
    ``keep_last`` the last line (the CI layer's action line, which it appends last) stays on
    the first screen whatever comes before it, when it fits."""
    lines = list(lines)
    fits = [shown_width(str(x)) <= COLUMNS - 2 for x in lines]
    last = len(lines) - 1 if keep_last and lines and fits[-1] else None
    room -= 1 if last is not None else 0
    lead = [i for i, ok in enumerate(fits) if ok and i != last][:max(room, 0)]
    more = [x for i, x in enumerate(lines) if i not in lead and i != last]
    return [lines[i] for i in lead] + ([lines[last]] if last is not None else []), more


def lead_room(n_metrics: int, link_lines: int) -> int:
    """Lines left for the lead: title, headline, blank, a table of header, rule and a row per
    metric, a blank; the link lines and the blank after them; the lead's own blank."""
    links = link_lines + 1 if link_lines else 0
    return FIRST_SCREEN - (3 + 2 + n_metrics + 1) - links - 1


def link_lines(run_url: str | None, command: str | None) -> list[str]:
    """The link line's parts as plain layout: ``(CI run's text, the command)`` joined on one
    line when it fits with the report's link to come, else the command on a line of its own.
    Returns the lines' shown text, to size the first screen (the template writes them)."""
    parts = (["CI run"] if run_url else []) + ([f"locally: {command}"] if command else [])
    if not parts:
        return []
    one = LINK_MARK + JOIN.join(parts)
    if len(one) + REPORT_ROOM <= COLUMNS or not (run_url and command):
        return [one]
    return [LINK_MARK + "CI run", f"Locally: {command}"]
