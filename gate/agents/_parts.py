"""What an agent kind's fingerprint parts are made of: the system prompt it runs, and a digest
of the gate's own code a kind runs.

They live with the agents (each kind names its own parts, through its registry entry) and
:mod:`gate.core.fingerprint` is handed them, so the import goes one way: agents → fingerprint.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from gate._files import PROMPT_LIMIT, read_text
from gate.errors import BadInput

if TYPE_CHECKING:
    from gate.core.config import GateConfig

#: the builtin agent's own code: its tool loop, its tools, its prompt (default and rendering).
#: Not the whole gate: a release that changes only reporting keeps every baseline.
BUILTIN_CODE = ("_builtin.py", "_prompt.py", "_tools.py")
AGENTS_DIR = Path(__file__).resolve().parent


def system_prompt_text(cfg: GateConfig) -> str | None:
    if not cfg.agent.system_prompt:
        return None
    path = cfg.agent_path("system_prompt")
    try:
        return read_text(path, PROMPT_LIMIT, "system prompt")
    except BadInput as exc:
        raise BadInput(f"[agent].system_prompt: {exc}") from None


def install_text(cfg: GateConfig) -> str | None:
    """The text of ``[agent].install`` (the script that installs a command agent into each
    task's image), ``None`` when there is none."""
    if not cfg.agent.install:
        return None
    path = cfg.agent_path("install")
    try:
        text = read_text(path, PROMPT_LIMIT, "install script")
    except BadInput as exc:
        raise BadInput(f"{cfg.where('agent.install')}: {exc}") from None
    if not text.strip():
        raise BadInput(f"{cfg.where('agent.install')}: {path} is empty")
    return text


def effective_prompt(cfg: GateConfig) -> str:
    """The template the builtin agent renders: the configured file's, else its default."""
    from gate.agents._prompt import DEFAULT_SYSTEM_PROMPT  # jinja2, only when needed

    return system_prompt_text(cfg) or DEFAULT_SYSTEM_PROMPT


def code_digest(names: Iterable[str], root: Path | None = None) -> str:
    """A digest of source files' bytes (sorted by name, each with its name and length), read
    from ``root`` (the installed ``gate/agents``)."""
    h = hashlib.sha256()
    for name in sorted(names):
        data = ((root or AGENTS_DIR) / name).read_bytes()
        h.update(f"{name}\0{len(data)}\0".encode())
        h.update(data)
    return "sha256:" + h.hexdigest()[:16]
