"""What the simulator cannot judge: a change to the agent that only a model reads.

The simulator (gate/sim) answers from the task it recognises, the model's family, the turns and
tokens it is given, the tools it is offered (a shell or none) and, for skills, whether the
task's target skill is offered and read and whether its ``SKILL.md`` holds the no-effect
marker. It never reads the system prompt's words, a tool's description, the sampling
temperature, nor a skill's text. When both arms are simulator runs and the agent's change
touches one of those, the pass rate the simulator reports says nothing about the change: the
pass-rate row reads "not judged by the simulator" and the headline says so first, never "no
regression". Turns, cost and cache hits, which the simulator measures (the prompt's length,
the cache breakpoints), are judged as ever, and a pass-rate regression stands: what the
simulator does model (``max_turns``, a removed shell tool) caused it.

Whether "not judged" exits 3 (``inconclusive``, the default: a green check must not say more
than the gate saw) or 0 (``pass``) is ``[ci] sim_unjudged``, read from the base branch in CI
and from ``gate.toml`` locally; :func:`gate.compare.judge` applies it, so both say the same.
"""

from __future__ import annotations

from gate.compare._model import Comparison
from gate.core.config import CISettings, SimUnjudged
from gate.core.results import Results

#: ``[ci] sim_unjudged``'s default, as the config has it
SIM_UNJUDGED_DEFAULT: SimUnjudged = CISettings.model_fields["sim_unjudged"].default

#: the sampling settings the simulator ignores (its draw depends on none of them)
UNREAD_SAMPLING = ("temperature", "top_p")

#: the headline's first words when the pass rate was not judged
NOT_JUDGED = "Not judged by the simulator"
#: the setting that made it exit 3, as the headline names it
POLICY = '[ci] sim_unjudged = "inconclusive"'


def _differs(part: str, base: Results, pr: Results) -> bool:
    return base.agent.parts.get(part) != pr.agent.parts.get(part)


def _values(part: str, results: Results) -> dict[str, object] | None:
    """A part's recorded values; ``{}`` when the arm has no such part (nothing configured),
    None when it has the part but recorded no values (an older file: unknown)."""
    if part not in results.agent.parts:
        return {}
    return results.agent.values.get(part)


def _prompt(base: Results, pr: Results) -> str:
    b, p = _values("prompt", base) or {}, _values("prompt", pr) or {}
    if isinstance(b.get("characters"), int) and isinstance(p.get("characters"), int):
        return f"the system prompt ({b['characters']:,} → {p['characters']:,} characters)"
    return "the system prompt"


def _sampling(base: Results, pr: Results) -> str | None:
    b, p = _values("sampling", base), _values("sampling", pr)
    if b is None or p is None:
        return "the sampling settings (not recorded)"
    keys = [k for k in UNREAD_SAMPLING if b.get(k) != p.get(k)]
    return f"the sampling ({', '.join(keys)})" if keys else None


def _skills(base: Results, pr: Results) -> str | None:
    """A skill whose text changed, beyond the simulator's no-effect marker (one offered or
    withdrawn is what the simulator models: its target skill read, or not)."""
    b, p = _values("skills", base), _values("skills", pr)
    if b is None or p is None:
        return "the skills' text (not recorded)"
    edited = sorted(n for n in set(b) & set(p) if b[n] != p[n])
    return f"the text of the skill{'s' if len(edited) != 1 else ''} {', '.join(edited)}" \
        if edited else None


def unjudged_changes(base: Results, pr: Results) -> list[str]:
    """The changes between the two arms' agents that only a model can judge, in words; empty
    unless both arms are the simulator's (a real model reads them all)."""
    if not (base.simulated and pr.simulated):
        return []
    out: list[str] = []
    if _differs("prompt", base, pr):
        out.append(_prompt(base, pr))
    if _differs("tools", base, pr):
        b, p = _values("tools", base) or {}, _values("tools", pr) or {}
        out.append("the tools' descriptions" if b.get("tools") == p.get("tools")
                   else "the tools offered")
    if _differs("sampling", base, pr) and (sampling := _sampling(base, pr)):
        out.append(sampling)
    if _differs("skills", base, pr) and (skills := _skills(base, pr)):
        out.append(skills)
    return out


def _listed(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def with_sim_unjudged(c: Comparison, base: Results, pr: Results,
                      mode: SimUnjudged = SIM_UNJUDGED_DEFAULT) -> Comparison:
    """``c`` with the pass rate "not judged by the simulator" when the change touches what
    only a model reads (:func:`unjudged_changes`): the headline says so first, and the
    verdict is ``inconclusive`` (exit 3) or, with ``mode="pass"``, stays as it was. A
    regression stands (the simulator modelled what caused it), the note after its reasons."""
    changes = unjudged_changes(base, pr)
    pass_rate = next((m for m in c.metrics if m.name == "pass_rate"), None)
    if not changes or pass_rate is None or pass_rate.blocks or pass_rate.verdict == "n/a":
        return c  # a regression stands; no compared task: inconclusive for that already
    what = f"{_listed(changes)} changed, which only a model reads"
    reason = (f"pass rate not judged by the simulator: {what} (a run through the API, with "
              "the model API's key, judges it)")
    metrics = [m.model_copy(update={"verdict": "unjudged", "note": reason})
               if m is pass_rate else m for m in c.metrics]
    update: dict[str, object] = {"metrics": metrics, "unjudged": reason}
    if c.verdict == "regression":  # the blocking metrics lead its why; the note follows
        update["headline"] = f"{c.headline}; {reason}"
        return c.model_copy(update=update)
    if c.verdict == "pass":
        measured = [m.label for m in c.metrics if m.name != "pass_rate" and m.gating
                    and m.comparable and m.verdict == "ok"]
        rest = [f"{_listed(measured)}: no regression" if measured else "nothing else gates",
                f"{c.suite.compared}/{c.suite.baseline_tasks} tasks compared"]
    else:
        rest = list(c.reasons)
    if mode == "inconclusive":
        update.update(verdict="inconclusive", exit_code=3, reasons=[reason, *c.reasons])
        rest.append(f"a run through the API judges it: exit 3 by {POLICY}, 0 with \"pass\"")
    update["headline"] = f"{NOT_JUDGED}: {what}; " + "; ".join(rest)
    update["why"] = [f"pass rate {NOT_JUDGED[0].lower()}{NOT_JUDGED[1:]}", *c.why]
    return c.model_copy(update=update)
