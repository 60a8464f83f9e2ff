"""A shell tool that runs ``sh``, not bash: the model reads the refusal and runs again in bash.

mini-swe-agent's local environment runs each command of its ``bash`` tool through Python's
``subprocess.Popen(command, shell=True)`` (``minisweagent/environments/local.py``, ``_run``):
``/bin/sh``, which is dash on Debian and Ubuntu. A bash-only line then fails there, and five
bundled solutions start with one: ``set -euo pipefail`` answers ``/bin/sh: 1: set: Illegal
option -o pipefail`` (dash stops at it: nothing of the command ran). A model reading that answer
runs the same command again through bash; so does the simulated one. When the answer to its
previous command is sh refusing bash syntax, its next turn runs that command again as
``bash -c '…'``, and the episode's later acts go through bash from the start. The retry costs a
turn, as it costs a real model one, and both calls are in the transcript.

A retry's tool call is marked in its id (``toolu_sim_<episode>_<step>_r<hash>``, ``<step>`` the
plan's step it runs again), so the stateless server counts them from the history: the plan's
step of a turn is the turn minus the retries before it.
"""

from __future__ import annotations

import re
import shlex
from typing import Any

#: sh (dash) refusing bash syntax, as the tool's answer shows it
_REFUSAL = re.compile(r"(^|[\s\"'])(\S*/)?(sh|dash): \d+: (set: Illegal option -o \w+|"
                      r"Syntax error: .*unexpected|\[\[: not found|source: not found)",
                      re.MULTILINE)
RETRY_MARK = "r"  # not a hex digit: the rest of the id is one


def through_bash(command: str) -> str:
    return f"bash -c {shlex.quote(command)}"


def _uses(messages: list[dict[str, Any]], episode: int) -> list[str]:
    """The ids of this episode's tool calls, in order."""
    prefix = f"toolu_sim_{episode}_"
    return [str(b.get("id")) for m in messages if m.get("role") == "assistant"
            and isinstance(m.get("content"), list) for b in m["content"]
            if isinstance(b, dict) and b.get("type") == "tool_use"
            and str(b.get("id", "")).startswith(prefix)]


def _is_retry(tool_id: str) -> bool:
    parts = tool_id.split("_")
    return len(parts) > 4 and parts[4].startswith(RETRY_MARK)


def _last_answer(messages: list[dict[str, Any]], tool_id: str) -> str:
    """The text of the tool result for ``tool_id`` in the newest message."""
    last = messages[-1] if messages else {}
    if last.get("role") != "user" or not isinstance(last.get("content"), list):
        return ""
    for b in last["content"]:
        if isinstance(b, dict) and b.get("type") == "tool_result" \
                and b.get("tool_use_id") == tool_id:
            content = b.get("content")
            if isinstance(content, list):
                return "\n".join(str(c.get("text", "")) for c in content if isinstance(c, dict))
            return str(content or "")
    return ""


def retries(messages: list[dict[str, Any]], episode: int) -> tuple[int, bool]:
    """(how many of this episode's calls were retries in bash, whether the newest call — not
    itself a retry — was refused by sh and is to be run again now)."""
    uses = _uses(messages, episode)
    done = sum(1 for u in uses if _is_retry(u))
    again = bool(uses) and not _is_retry(uses[-1]) \
        and _REFUSAL.search(_last_answer(messages, uses[-1])) is not None
    return done, again
