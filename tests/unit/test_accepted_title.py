"""A regression a maintainer accepted is titled by the template itself ("☑️ agent-gate:
regression accepted"), comment and step summary alike: no caller rewrites the rendered
report's heading."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from gate.compare import Comparison, compare
from gate.compare._synthetic import reference_rates, synthetic_results
from gate.core.config import GateSettings
from gate.report import render_markdown, render_summary

TITLE = "### ☑️ agent-gate: regression accepted"


def _pair(rates: list[float]) -> Comparison:
    rng = np.random.default_rng(3)
    base = synthetic_results(reference_rates(), 20, rng)
    return compare(base, synthetic_results(rates, 5, rng),
                   GateSettings(permutations=999, power_simulations=0))


def test_the_template_titles_an_accepted_regression() -> None:
    c = _pair([0.0] * 15)
    assert c.verdict == "regression"
    plain = render_markdown(c)
    accepted = render_markdown(c, accepted=True)
    assert plain.startswith("### ❌ agent-gate: ") and TITLE not in plain
    assert accepted.splitlines()[0] == TITLE and accepted.count("agent-gate:") == 1
    # only the title differs: the verdict, its numbers and the rest stay
    assert accepted.splitlines()[1:] == plain.splitlines()[1:]
    assert render_summary(c, accepted=True) == accepted


def test_accepted_titles_only_a_regression() -> None:
    c = _pair(reference_rates())
    assert c.verdict != "regression"
    assert render_markdown(c, accepted=True) == render_markdown(c)


def test_no_stage_of_gate_ci_rewrites_the_reports_heading() -> None:
    ci = Path(__file__).resolve().parents[2] / "gate" / "ci"
    assert [p.name for p in sorted(ci.glob("*.py"))
            if "regression accepted" in p.read_text(encoding="utf-8")] == []
