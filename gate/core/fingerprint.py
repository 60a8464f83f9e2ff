"""The agent fingerprint: a sha256 over everything that defines the agent's behaviour.

Kept as named parts (model, sampling, prompt, tools, code, skills, command) so a comparison can
say *what* changed, not only that something did. ``model`` is kept as the plain id.

Which parts an agent kind has is the kind's own business: the caller hands in the kind's
registry entry (a :class:`PartsSource`), so this module imports no agent.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Protocol

from gate.core.config import UPSTREAM_DEFAULT, GateConfig
from gate.core.tasks import digest_dir
from gate.errors import BadInput

__all__ = ["PartsSource", "digest_of", "fingerprint", "fingerprint_parts", "fingerprint_values"]


class PartsSource(Protocol):
    """What an agent kind tells the fingerprint: its named parts, and whether it talks to a
    model (only then do skills reach it)."""

    @property
    def uses_model(self) -> bool: ...

    def fingerprint_parts(self, cfg: GateConfig) -> dict[str, str]: ...

    def fingerprint_values(self, cfg: GateConfig) -> dict[str, dict[str, object]]: ...


def digest_of(obj: Any) -> str:
    data = obj if isinstance(obj, str) else json.dumps(obj, sort_keys=True)
    return "sha256:" + hashlib.sha256(data.encode()).hexdigest()[:16]


def _moved_upstream(cfg: GateConfig, source: PartsSource) -> str | None:
    """Where a model's agent runs, when not the API direct: the agent's choice too, so a PR
    that only moves it is measured (never "nothing under test changed"). The default adds no
    part, so the fingerprint of every agent on the API direct is what it was before upstreams."""
    moved = source.uses_model and cfg.agent.upstream != UPSTREAM_DEFAULT
    return cfg.agent.upstream if moved else None


def fingerprint_parts(cfg: GateConfig, source: PartsSource) -> dict[str, str]:
    parts = source.fingerprint_parts(cfg)
    if upstream := _moved_upstream(cfg, source):
        parts["upstream"] = upstream
    if source.uses_model and cfg.agent.skills:
        skills = cfg.agent_path("skills")
        if not skills.is_dir():
            raise BadInput(f"[agent].skills: {skills} is not a directory")
        from gate.core.skills import config_skills

        config_skills(cfg)  # a broken skill is bad configuration, before anything runs
        parts["skills"] = digest_dir(skills)
    return parts


def fingerprint_values(cfg: GateConfig, source: PartsSource) -> dict[str, dict[str, object]]:
    """What the readable parts hash (the kind's ``fingerprint_values``): recorded in results
    beside the digests, so a comparison names the setting that changed and its values. The
    skills (a model's agent with ``[agent].skills``): each skill's wording by name
    (:func:`gate.core.skills.skill_wording`), so a comparison tells a skill offered or withdrawn,
    or only marked for the simulator, from one whose text changed."""
    values = source.fingerprint_values(cfg)
    if upstream := _moved_upstream(cfg, source):
        values["upstream"] = {"upstream": upstream}
    if source.uses_model and cfg.agent.skills:
        from gate.core.skills import config_skills, skill_wording

        values["skills"] = {s.name: skill_wording(s) for s in config_skills(cfg)}
    return values


def fingerprint(parts: dict[str, str], kind: str) -> str:
    return digest_of({"kind": kind, **parts})
