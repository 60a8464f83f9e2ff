"""A broken task in the judge (issue 39, item 4): a task the candidate's run recorded in
``problems`` is ``broken``, never ``removed``; it counts as not compared against
``min_comparable`` (also when the baseline never had it), and every headline names it."""

from __future__ import annotations

import json

import numpy as np
import pytest

from gate.compare import compare
from gate.compare._synthetic import synthetic_results
from gate.core.config import GateSettings
from gate.core.results import Results, parse_results
from gate.errors import BadInput
from gate.report import render_markdown

FAST = GateSettings(permutations=999, power_simulations=0, block_on=["pass_rate"])
RATES = [0.9] * 10


def _without(results: Results, task: str, reason: str | None) -> Results:
    """``results`` as a run that could not load ``task``: not in its suite, no run of it, and
    (``reason``) recorded as broken."""
    suite = results.suite.model_copy(update={"tasks": {
        t: info for t, info in results.suite.tasks.items() if t != task}})
    extra = {"problems": {task: reason}} if reason is not None else {}
    return Results.model_validate({**results.model_dump(), "suite": suite.model_dump(),
                                   "runs": [r.model_dump() for r in results.runs
                                            if r.task != task], **extra})


def _pair(seed: int = 1) -> tuple[Results, Results]:
    rng = np.random.default_rng(seed)
    return synthetic_results(RATES, 5, rng), synthetic_results(RATES, 5, rng)


def test_a_broken_task_is_broken_not_removed_and_named_in_the_headline() -> None:
    base, cand = _pair()
    c = compare(base, _without(cand, "t03", "missing verify.sh"), FAST)
    assert c.suite.broken == ["t03"] and c.suite.removed == []
    (row,) = [t for t in c.tasks if t.task == "t03"]
    assert row.status == "broken" and row.reasons == ["missing verify.sh"]
    assert c.verdict == "pass" and c.suite.compared == 9  # 9 of 10 ≥ 80 %
    assert c.headline.startswith("No regression: ")
    assert c.headline.endswith("; 1 task broken, not run: t03 (missing verify.sh)")
    # the same task merely gone from the suite (no record of why) is still "removed"
    gone = compare(base, _without(cand, "t03", None), FAST)
    assert gone.suite.removed == ["t03"] and gone.suite.broken == []
    assert "broken" not in gone.headline


def test_broken_tasks_count_against_min_comparable_even_outside_the_baseline() -> None:
    base, cand = _pair(2)
    two = _without(_without(cand, "t01", "missing verify.sh"), "t02", "missing task.md")
    two = Results.model_validate({**two.model_dump(), "problems": {
        "t01": "missing verify.sh", "t02": "missing task.md"}})
    c = compare(base, two, FAST)  # 8 of 10
    assert c.verdict == "pass", c.headline
    assert "2 tasks broken, not run: t01 (missing verify.sh), t02 (missing task.md)" \
        in c.headline
    # a third broken task the baseline never had: 8 of 11 < 80 %
    three = Results.model_validate({**two.model_dump(), "problems": {
        "t01": "missing verify.sh", "t02": "missing task.md", "new": "missing verify.sh"}})
    c = compare(base, three, FAST)
    assert c.verdict == "inconclusive" and c.exit_code == 3
    assert "only 8 of 11 tasks (1 broken, not in the baseline) are comparable" in c.headline


def test_the_comments_short_headline_names_the_broken_task() -> None:
    base, cand = _pair(3)
    reason = "task.toml: verify_timeout: Input should be a valid number " + "x" * 80
    c = compare(base, _without(cand, "t07", reason), FAST)
    assert len(c.headline) > 120  # too long for the first screen: shortened
    body = render_markdown(c)
    headline = next(ln for ln in body.splitlines() if ln.startswith("**"))
    assert "1 task broken (t07)" in headline, body
    assert "➖ removed" not in body and "⛔ broken" in body


def test_a_results_file_whose_problems_are_not_reasons_is_refused() -> None:
    base, _ = _pair(4)
    data = base.model_dump(mode="json")
    for spoiled in ({"t01": 3}, ["t01"], {"t01": "x" * 30_000}):
        data["problems"] = spoiled
        with pytest.raises(BadInput, match=r"^r\.json: invalid results file: problems: "):
            parse_results(json.dumps(data).encode(), "r.json")
