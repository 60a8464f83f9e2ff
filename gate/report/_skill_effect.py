"""The skill-effect check in a report: one row per condition (pass rate in each arm, the
effect against ``control`` with its interval, the baseline's effect, the change) and the line
that says what the test decided (gate/compare/_did.py). Condition names come from gate.toml
and results files: escaped like any untrusted text."""

from __future__ import annotations

from typing import Any

from markupsafe import Markup

from gate.compare import Comparison, SkillConditionRow, SkillEffect
from gate.report._escape import md, plain
from gate.report._format import p_is, pct, pts, signed


def _pts(x: float | None) -> str:
    return "—" if x is None else pts(x)


def _ci(x: float | None, low: float | None, high: float | None) -> str:
    if x is None:
        return "—"
    if low is None or high is None:
        return _pts(x)
    return f"{_pts(x)} ({signed(low * 100)} to {signed(high * 100)})"


def _rate(rate: float | None, passed: int, runs: int) -> str:
    return "—" if rate is None else f"{pct(rate)} ({passed}/{runs})"




def summary(s: SkillEffect) -> str:
    """What the test decided, in one sentence (trusted: numbers and fixed words only)."""
    if s.p_value is None:
        return "Not tested: " + (s.note or "no pairs")
    verdict = ("fell significantly: **blocks**" if s.blocks
               else "did not fall significantly" if (s.change or 0) < 0
               else "did not fall")
    ci = _ci(s.change, s.change_ci_low, s.change_ci_high)
    level = f"{(s.ci_level or 0.95) * 100:g} % CI"
    n = len(s.tasks)
    return (f"The target skill's effect (target − control) {_pts(s.baseline_effect)} → "
            f"{_pts(s.candidate_effect)}: change {ci.replace(' (', f' ({level} ', 1)}, "
            f"{p_is(s.p_value)} (blocks at ≤ {s.threshold:g}) on {n} task{'s' if n != 1 else ''}"
            f" — {verdict}.")


def _row(r: SkillConditionRow, s: SkillEffect) -> dict[str, Any]:
    mark = ""
    if r.gating and s.p_value is not None:
        mark = " ❌" if s.blocks else " ✅"
    return {
        "condition": md(r.condition, 64),
        "tasks": Markup(str(r.tasks)),
        "baseline": Markup(_rate(r.baseline_rate, r.baseline_passed, r.baseline_runs)),
        "candidate": Markup(_rate(r.candidate_rate, r.candidate_passed, r.candidate_runs)),
        "effect": Markup(_ci(r.candidate_effect, r.candidate_ci_low, r.candidate_ci_high)),
        "baseline_effect": Markup(_ci(r.baseline_effect, r.baseline_ci_low,
                                      r.baseline_ci_high)),
        "change": Markup(_ci(r.change, r.change_ci_low, r.change_ci_high) + mark),
    }


def skill_effect_context(c: Comparison) -> dict[str, Any] | None:
    """The template's ``skill_effect``: None when the results ran no conditions."""
    s = c.skill_effect
    if s is None:
        return None
    # the summary is the gate's own words and numbers (condition names are fixed there)
    return {"summary": Markup(summary(s)),
            "rows": [_row(r, s) for r in s.conditions],
            "level": Markup(f"{(s.ci_level or 0.95) * 100:g} %"),
            "rule": md(s.rule, 300)}


def skill_effect_lines(c: Comparison) -> list[str]:
    """The same for the plain-text report."""
    s = c.skill_effect
    if s is None:
        return []
    lines = ["", "Skill conditions: " + summary(s).replace("**", "")]
    for r in s.conditions:
        base = _rate(r.baseline_rate, r.baseline_passed, r.baseline_runs)
        mine = _rate(r.candidate_rate, r.candidate_passed, r.candidate_runs)
        lines.append(
            f"  {plain(r.condition, 64):<22} baseline {base:>18}  this PR {mine:>18}  "
            f"effect {_ci(r.candidate_effect, r.candidate_ci_low, r.candidate_ci_high)}  "
            f"baseline effect {_ci(r.baseline_effect, r.baseline_ci_low, r.baseline_ci_high)}"
            f"  change {_ci(r.change, r.change_ci_low, r.change_ci_high)}")
    return lines
