"""The comment's first screen: what a phone shows before the first collapsed block.

The verdict, one short headline (at most :data:`HEADLINE_MAX` characters), the key numbers in a
table of four columns, and a few lines under it (what the headline left out, the CI layer's
notes, the action line), :data:`FIRST_SCREEN` lines in all. What does not fit goes into the
first collapsed block. Every number here is compare's (gate.compare), formatted, never
recomputed.
"""

from __future__ import annotations

from collections.abc import Sequence

from gate.compare import Comparison
from gate.report._format import metric_value

#: lines before the first ``<details>`` (blank lines included)
FIRST_SCREEN = 15
HEADLINE_MAX = 120


#: how compare's resolution statement begins when the design was blind (gate.compare)
BLIND = "this comparison could not have detected a regression"


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
        prefix, body = {"pass": "No regression", "regression": "Regression"}.get(
            c.verdict, "Inconclusive"), c.headline
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
    ``room`` lines; with ``keep_last`` the last line (the CI layer's action line, which it
    appends last) stays on the first screen whatever comes before it."""
    lines = list(lines)
    if len(lines) <= room:
        return lines, []
    if room <= 0:
        return [], lines
    if keep_last:
        return [*lines[:room - 1], lines[-1]], lines[room - 1:-1]
    return lines[:room], lines[room:]


def lead_room(n_metrics: int) -> int:
    """Lines left for the lead: title, blank, headline, blank, a table of header, rule and a
    row per metric, a blank before the lead and one before ``<details>``."""
    return FIRST_SCREEN - (4 + 2 + n_metrics + 2)
