"""What the simulator knows about model ids: family, minimum cacheable length, strength.

Model ids are normalised first: a ``-sim`` suffix and a date suffix (``-20250929``, or
``@20250929`` as a cloud platform writes it) are dropped.
An exact id documented by Anthropic uses its documented minimum cacheable length; an id the table
does not know (a new release such as ``claude-sonnet-5-5`` or ``claude-haiku-5-5``) takes the
value of the newest documented member of its family: opus 512, sonnet 1,024, haiku 4,096,
fable / mythos 512; a family we do not know at all gets 1,024.

Strength is per family (documented in ``PASS_RATES``): the probability that the simulated model
sets out to solve a task of each difficulty. fable / mythos > opus > sonnet > haiku, so a
weaker model passes fewer tasks; an unknown family is treated as sonnet.
"""

from __future__ import annotations

import re

SIM_SUFFIX = "-sim"

_DATE = re.compile(r"[-@]\d{8}$")  # -20250929, or a platform's @20250929

MIN_CACHEABLE: dict[str, int] = {
    "claude-opus-5-5": 512, "claude-opus-5": 512,
    "claude-fable-5-2": 512, "claude-fable-5-1": 512, "claude-fable-5": 512,
    "claude-mythos-5-2": 512, "claude-mythos-5-1": 512, "claude-mythos-5": 512,
    "claude-opus-4-8": 1024, "claude-sonnet-5": 1024, "claude-sonnet-4-6": 1024,
    "claude-sonnet-4-5": 1024, "claude-sonnet-4": 1024, "claude-opus-4-1": 1024,
    "claude-opus-4": 1024,
    "claude-opus-4-7": 2048, "claude-haiku-3-5": 2048,
    "claude-opus-4-6": 4096, "claude-opus-4-5": 4096, "claude-haiku-4-5": 4096,
}

FAMILY_MIN_CACHEABLE: dict[str, int] = {
    "opus": 512, "sonnet": 1024, "haiku": 4096, "fable": 512, "mythos": 512,
}
DEFAULT_MIN_CACHEABLE = 1024

# P(the model sets out to solve the task) by family and difficulty. A task with no difficulty
# counts as medium. The remaining probability is split over the failure modes (see _model.py).
PASS_RATES: dict[str, dict[str, float]] = {
    "fable": {"easy": 0.98, "medium": 0.93, "hard": 0.82},
    "mythos": {"easy": 0.98, "medium": 0.93, "hard": 0.82},
    "opus": {"easy": 0.97, "medium": 0.90, "hard": 0.75},
    "sonnet": {"easy": 0.93, "medium": 0.80, "hard": 0.60},
    "haiku": {"easy": 0.85, "medium": 0.62, "hard": 0.35},
}
DEFAULT_FAMILY = "sonnet"


def normalise(model: str) -> str:
    """Drop the ``-sim`` label and a date suffix: ``claude-x-4-5-20250929`` (or a platform's
    ``claude-x-4-5@20250929``) → ``claude-x-4-5``."""
    m = model.strip().lower()
    if m.endswith(SIM_SUFFIX):
        m = m[: -len(SIM_SUFFIX)]
    return _DATE.sub("", m)


def sim_label(model: str) -> str:
    """The model id the simulator reports back: the requested id plus ``-sim``."""
    return model if model.endswith(SIM_SUFFIX) else model + SIM_SUFFIX


def family(model: str) -> str:
    """``opus`` / ``sonnet`` / ``haiku`` / ``fable`` / ``mythos``, or ``unknown``."""
    m = normalise(model)
    for fam in FAMILY_MIN_CACHEABLE:
        if re.search(rf"(^|-){fam}(-|$)", m):
            return fam
    return "unknown"


def min_cacheable_tokens(model: str) -> int:
    m = normalise(model)
    if m in MIN_CACHEABLE:
        return MIN_CACHEABLE[m]
    return FAMILY_MIN_CACHEABLE.get(family(m), DEFAULT_MIN_CACHEABLE)


def pass_rate(model: str, difficulty: str | None) -> float:
    rates = PASS_RATES.get(family(model), PASS_RATES[DEFAULT_FAMILY])
    return rates.get(difficulty or "medium", rates["medium"])
