"""What changed in the agent between two runs: the fingerprint's parts, said by the settings
behind them (``max_turns 30 → 1``), by length for the prompt, else by their digests."""

from __future__ import annotations

from gate.compare._model import AgentChange
from gate.core.results import Results


def _short(value: str | None) -> str | None:
    """``sha256:<hex>`` digests shortened to 12 hex digits; anything else (a model id) kept."""
    if value is None or not value.startswith("sha256:"):
        return value
    return value.removeprefix("sha256:")[:12]


def agent_changes(baseline: Results, candidate: Results) -> list[AgentChange]:
    """What changed in the agent between the arms, part by part (the model, its kind, each
    fingerprint part's settings), as a reviewer would name it: ``max_turns 30 → 1``."""
    out: list[AgentChange] = []
    bp, cp = baseline.agent.parts, candidate.agent.parts
    if baseline.model != candidate.model and bp.get("model") == cp.get("model"):
        # the label (e.g. "... (simulator)") differs though the model part does not, or there
        # are no parts to tell: show the labels
        out.append(AgentChange(part="model name", baseline=baseline.model,
                               candidate=candidate.model, digest=False))
    if baseline.agent.kind != candidate.agent.kind:
        out.append(AgentChange(part="kind", baseline=baseline.agent.kind,
                               candidate=candidate.agent.kind, digest=False))
    order = ["model", "sampling", "prompt", "tools", "code", "skills", "command"]
    changed = [part for part in order + sorted((set(bp) | set(cp)) - set(order))
               if (part in bp or part in cp) and bp.get(part) != cp.get(part)]
    for part in changed:
        out += _part_changes(part, baseline, candidate)
    if baseline.agent.fingerprint != candidate.agent.fingerprint and not changed:
        out.append(AgentChange(part="fingerprint", baseline=_short(baseline.agent.fingerprint),
                               candidate=_short(candidate.agent.fingerprint), digest=True))
    return out


def _shown(value: object) -> str:
    """A recorded setting as gate.toml would spell it (``None``: unset)."""
    if value is None:
        return "unset"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, list):
        return ", ".join(str(x) for x in value) or "none"
    return f"{value:,}" if isinstance(value, int) else str(value)


def _part_changes(part: str, baseline: Results, candidate: Results) -> list[AgentChange]:
    """One changed fingerprint part: the settings behind it that differ, by key and value,
    when both arms recorded them (``values``); else the part's digests. The prompt is said
    by its length, never its text."""
    bv, cv = baseline.agent.values.get(part), candidate.agent.values.get(part)
    bp, cp = baseline.agent.parts.get(part), candidate.agent.parts.get(part)
    if part == "model" or bv is None or cv is None:
        return [AgentChange(part=part, baseline=_short(bp), candidate=_short(cp),
                            digest=part != "model")]
    if part == "prompt" and "characters" in bv and "characters" in cv:
        return [AgentChange(part="system prompt", baseline=f"{_shown(bv['characters'])} "
                            "characters", candidate=f"{_shown(cv['characters'])} characters",
                            digest=None)]
    keys = [k for k in [*bv, *(k for k in cv if k not in bv)] if bv.get(k) != cv.get(k)]
    if not keys:  # the digest moved but no recorded setting did (more went into it)
        return [AgentChange(part=part, baseline=_short(bp), candidate=_short(cp), digest=True)]
    return [AgentChange(part=k, baseline=_shown(bv.get(k)), candidate=_shown(cv.get(k)),
                        digest=False) for k in keys]
