"""A broken task, defined once (docs/statistics.md §4): a task of the suite the candidate's run
could not load (or run here), which its results file records (``Results.broken_tasks``).

It is never "removed": the comparison lists it as ``broken`` with its reason, counts it as not
compared against ``min_comparable`` (whether the baseline has it or not), and every headline
names it (:func:`broken_reason`), whatever the verdict.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from gate.compare._model import TaskChange
from gate.core.results import Results

#: broken tasks named in the headline before "and N more"
MAX_NAMED = 5


def broken_tasks(candidate: Results, loaded: Mapping[str, object]) -> dict[str, str]:
    """The candidate's broken tasks (name → why), those not among the tasks it ``loaded``."""
    return {k: v for k, v in candidate.broken_tasks().items() if k not in loaded}


def broken_reason(tasks: Sequence[TaskChange]) -> str | None:
    """The clause every headline carries when some task is broken: each named with why."""
    gone = [t for t in tasks if t.status == "broken"]
    if not gone:
        return None
    named = ", ".join(f"{t.task} ({t.reasons[0] if t.reasons else 'not run'})"
                      for t in gone[:MAX_NAMED])
    more = f" and {len(gone) - MAX_NAMED} more" if len(gone) > MAX_NAMED else ""
    return f"{len(gone)} task{'s' if len(gone) != 1 else ''} broken, not run: {named}{more}"
