"""What an agent kind's fingerprint parts are made of: a short digest of any value, and the
system prompt's text as configured.

They live with the agents (each kind names its own parts) and :mod:`gate.fingerprint`
builds on them, so the import goes one way: fingerprint → agents → config.
"""

from __future__ import annotations

import hashlib
import json
from typing import TYPE_CHECKING, Any

from gate._files import PROMPT_LIMIT, read_text
from gate.errors import BadInput

if TYPE_CHECKING:
    from gate.config import GateConfig


def digest_of(obj: Any) -> str:
    data = obj if isinstance(obj, str) else json.dumps(obj, sort_keys=True)
    return "sha256:" + hashlib.sha256(data.encode()).hexdigest()[:16]


def system_prompt_text(cfg: GateConfig) -> str | None:
    if not cfg.agent.system_prompt:
        return None
    path = cfg.path(cfg.agent.system_prompt)
    try:
        return read_text(path, PROMPT_LIMIT, "system prompt")
    except BadInput as exc:
        raise BadInput(f"[agent].system_prompt: {exc}") from None


def effective_prompt(cfg: GateConfig) -> str:
    """The template the builtin agent renders: the configured file's, else its default."""
    from gate.agents._prompt import DEFAULT_SYSTEM_PROMPT  # jinja2, only when needed

    return system_prompt_text(cfg) or DEFAULT_SYSTEM_PROMPT
