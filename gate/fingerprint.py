"""The agent fingerprint: a sha256 over everything that defines the agent's behaviour.

Kept as named parts (model, sampling, prompt, tools, skills, command) so a comparison can say
*what* changed, not only that something did. ``model`` is kept as the plain id.
"""

from __future__ import annotations

from pathlib import Path

from gate.agents import agent_kind, digest_of, system_prompt_text
from gate.config import GateConfig
from gate.errors import BadInput
from gate.tasks import digest_dir

__all__ = ["digest_of", "fingerprint", "fingerprint_parts", "system_prompt_text"]


def fingerprint_parts(cfg: GateConfig, kind: str) -> dict[str, str]:
    spec = agent_kind(kind)
    parts = spec.fingerprint_parts(cfg)
    if spec.uses_model and cfg.agent.skills:
        skills = Path(cfg.path(cfg.agent.skills))
        if not skills.is_dir():
            raise BadInput(f"[agent].skills: {skills} is not a directory")
        from gate.skills import config_skills

        config_skills(cfg)  # a broken skill is bad configuration, before anything runs
        parts["skills"] = digest_dir(skills)
    return parts


def fingerprint(parts: dict[str, str], kind: str) -> str:
    return digest_of({"kind": kind, **parts})
