"""An agent's own way to end an episode: the submit command its prompt tells the model to run.

Some agents do not stop on a text answer: they stop when the model runs a command they named
in the prompt. mini-swe-agent (2.x, its default ``mini.yaml``) asks the model to "finish your
work by issuing the following command: `echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT`", treats a
reply with no tool call as a format error (three in a row end the run as
``RepeatedFormatError``) and ends the episode, ``Submitted``, when a command's output starts
with that word (``minisweagent/environments/local.py``, ``_check_finished``).

So when the request's system prompt or first user message names such a command — a backquoted
``echo WORD`` (``WORD`` in capitals, digits and ``_``) in a sentence that speaks of submitting
or finishing — the simulated model ends its episode with its final answer *and* that command
as one tool call, as a real model following that prompt does. Nothing else changes: the same
task, outcome and turns; a prompt that names no such command gets the plain final answer.
"""

from __future__ import annotations

import re
from typing import Any

#: a backquoted ``echo WORD``; the sentence it ends must speak of submitting or finishing
_COMMAND = re.compile(r"`(echo\s+[A-Z][A-Z0-9_]{3,})`")
_INTENT = re.compile(r"\b(submit|finish|complete)", re.IGNORECASE)
#: how far back from the command the intent is looked for (the sentence that names it)
_REACH = 200


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(b.get("text", "")) for b in content
                         if isinstance(b, dict) and b.get("type") == "text")
    return ""


def submit_command(request: dict[str, Any]) -> str | None:
    """The command the request's prompt says ends the episode, or None."""
    first = next((m for m in request.get("messages") or []
                  if isinstance(m, dict) and m.get("role") == "user"), None)
    text = _text(request.get("system")) + "\n" + _text((first or {}).get("content"))
    for found in _COMMAND.finditer(text):
        before = text[max(0, found.start() - _REACH):found.start()]
        sentence = re.split(r"[.!?]\s|\n\s*\n", before)[-1]
        if _INTENT.search(sentence):
            return " ".join(found.group(1).split())
    return None
