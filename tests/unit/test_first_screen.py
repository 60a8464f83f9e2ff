"""The PR comment's first screen, over every shape a verdict takes: at most 15 source lines
before the first collapsed block, none wider than 80 columns as GitHub shows it (a link shows
its text), and on it the verdict, the judge's one-line why, the report's link and the command
that reproduces the verdict locally.

Each shape is judged by the real judge (``gate.compare.judge``) on synthetic results: a
regression with an agent setting changed, a pass with the prompt changed, a design too small
to block, infra errors, a run the budget stopped, a skill whose effect fell; each rendered with
the CI layer's notes and action line, a yardstick change and the CI run's link, then given
the report's link as the posting step gives it.
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable
from functools import cache

import numpy as np
import pytest

from gate.compare import Comparison, judge
from gate.compare._synthetic import (
    reference_rates,
    synthetic_condition_runs,
    synthetic_results,
)
from gate.core.config import GateSettings
from gate.core.results import Interruption, MissingRun, Results, summarize
from gate.report import code_span, render_markdown, render_note, with_report_link

SETTINGS = GateSettings(permutations=999, power_simulations=0)
RUN_URL = "https://github.com/acme/agent/actions/runs/1234567890"
ARTIFACT = RUN_URL + "/artifacts/9876543210"
COMMAND = "gate compare --base-ref origin/main results.json"
FOOTER = f"<sub>📎 [The full report]({ARTIFACT}): the verdict, every task.</sub>"
#: the CI layer's action line on a regression (its last note), as it renders it
ACTION = render_note("how_to_accept", label=code_span("gate:accept-regression"))
LONG = ("The baseline holds 3 refreshes made from a working tree with uncommitted changes: "
        "the commit it names is not the agent it measured.")


def _agent(r: Results, part: str, values: dict[str, object]) -> Results:
    digest = "sha256:" + format(abs(hash(repr(values))), "x").rjust(16, "0")[:16]
    agent = r.agent.model_copy(update={"fingerprint": digest, "parts": {part: digest},
                                       "values": {part: values}})
    return r.model_copy(update={"agent": agent})


def _files(base_rates: list[float], pr_rates: list[float], base_k: int, pr_k: int,
           **pr_kw: object) -> tuple[Results, Results]:
    rng = np.random.default_rng(7)
    return (synthetic_results(base_rates, base_k, rng),
            synthetic_results(pr_rates, pr_k, rng, **pr_kw))  # type: ignore[arg-type]


def regression() -> tuple[Results, Results]:
    """Two tasks collapse and turns are capped: ``max_turns 30 → 1``."""
    rates = reference_rates()
    base, pr = _files(rates, [0.0 if i in (0, 6) else r for i, r in enumerate(rates)], 20, 5)
    return (_agent(base, "sampling", {"max_turns": 30, "temperature": 1.0}),
            _agent(pr, "sampling", {"max_turns": 1, "temperature": 1.0}))


def no_regression() -> tuple[Results, Results]:
    rates = reference_rates()
    base, pr = _files(rates, rates, 20, 5)
    return (_agent(base, "prompt", {"characters": 2184}),
            _agent(pr, "prompt", {"characters": 2391}))


def blind() -> tuple[Results, Results]:
    return _files([1.0], [0.0], 3, 3)


def infra() -> tuple[Results, Results]:
    rates = reference_rates()
    return _files(rates, rates, 5, 5, error_rate=0.5)


def budget_stop() -> tuple[Results, Results]:
    rates = reference_rates()
    base, pr = _files(rates, rates, 20, 5)
    missing = [MissingRun(task="t00", replication=r) for r in range(3)]
    return base, pr.model_copy(update={"interrupted": Interruption(
        reason="budget: $1.00 spent, $0.40 in flight", missing=missing)})


def skill_effect_fell() -> tuple[Results, Results]:
    rng = np.random.default_rng(3)
    plain = reference_rates(15)
    base, pr = synthetic_results(plain, 20, rng), synthetic_results(plain, 5, rng)
    b_runs = [*base.runs, *synthetic_condition_runs([0.5] * 6, [0.875] * 6, 20, rng,
                                                    coupled=True)]
    p_runs = [*pr.runs, *synthetic_condition_runs([0.5] * 6, [0.5] * 6, 5, rng, coupled=True)]
    return (base.model_copy(update={"runs": b_runs, "summary": summarize(b_runs)}),
            pr.model_copy(update={"runs": p_runs, "summary": summarize(p_runs)}))


SHAPES: dict[str, tuple[Callable[[], tuple[Results, Results]], str]] = {
    "regression": (regression, "regression"),
    "no regression": (no_regression, "pass"),
    "too few runs": (blind, "inconclusive"),
    "infra errors": (infra, "inconclusive"),
    "budget stop": (budget_stop, "inconclusive"),
    "skill conditions": (skill_effect_fell, "regression"),
}

_LINK = re.compile(r"\[([^\]]*)\]\([^)\s]*\)")


def shown(line: str) -> str:
    """A Markdown source line as GitHub shows it: links by their text; no emphasis marks,
    code ticks, backslash escapes or hard-break backslash; entities as their character."""
    text = _LINK.sub(r"\1", line.removesuffix("\\"))
    text = re.sub(r"\\(.)", r"\1", text.replace("**", "").replace("`", ""))
    return html.unescape(text).replace("\u200d", "")


def first_screen(body: str) -> list[str]:
    head = body[:body.index("<details>")]
    assert head.endswith("\n\n")
    return head[:-1].split("\n")


def check(body: str) -> list[str]:
    screen = first_screen(body)
    assert len(screen) <= 15, "\n".join(screen)
    for line in screen:
        assert len(shown(line)) <= 80, line
    return screen


@cache  # a frozen comparison per shape: judged once for the module's tests
def _judged(shape: str) -> Comparison:
    make, verdict = SHAPES[shape]
    c = judge(*make(), SETTINGS)
    assert c.verdict == verdict, c.headline
    return c


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_the_first_screen_holds_the_verdict_its_why_the_report_and_the_command(
        shape: str) -> None:
    c = _judged(shape)
    assert c.why, c.headline
    notes = [LONG, *(f"note {i}: something the CI layer said" for i in range(3)), ACTION]
    from gate.core.config import GateConfig
    from gate.execution.yardstick import SettingChange, Yardstick

    ys = Yardstick(ref="r", label="main", config=GateConfig(), tasks_dir=GateConfig().root,
                   baseline_rel="baseline.json", baseline_text=None, history_text=None,
                   settings=[SettingChange("[gate].alpha", 0.01, 0.5)])
    body = render_markdown(c, run_url=RUN_URL, notes=notes, yardstick=ys.note(),
                           command=COMMAND)
    screen = check(body)
    title = {"regression": "❌ agent-gate: regression", "pass": "✅ agent-gate: no regression",
             "inconclusive": "⚠️ agent-gate: inconclusive"}[c.verdict]
    assert screen[0] == f"### {title}"
    why = shown(screen[1])
    assert why.startswith("Why: ") and why.removeprefix("Why: ").startswith(c.why[0][:20])
    assert any(f"locally: `{COMMAND}`" in line for line in screen), screen
    assert any(f"[CI run]({RUN_URL})" in line for line in screen)
    # every reason of the why is said: on the first screen, or right under it, collapsed
    first = "\n".join(shown(x) for x in screen)
    more = shown(body[body.index("<details>"):body.index("</details>")])
    for reason in c.why:
        assert reason in first or reason in more, reason
    assert f"> {ACTION}" in screen  # the action line stays on the first screen
    assert LONG in more  # too wide for it: collapsed, kept

    posted = with_report_link(body, ARTIFACT, FOOTER)
    screen = check(posted)
    link = next(line for line in screen if line.startswith("📎 "))
    assert link.startswith(f"📎 [Report]({ARTIFACT}) · [CI run]({RUN_URL})"), link
    assert posted.rstrip("\n").endswith(FOOTER)  # the last line is still the poster's own


def test_the_why_names_the_collapse_the_metric_and_the_setting() -> None:
    c = _judged("regression")
    assert c.why[0].startswith("pass rate −")
    assert "2 tasks collapsed: t00, t06" in c.why
    assert "max_turns 30 → 1" in c.why
    line = shown(first_screen(render_markdown(c))[1])
    assert line.startswith("Why: pass rate −") and "max_turns 30 → 1" in line


def test_the_why_of_a_pass_says_the_pass_rate_and_the_prompt() -> None:
    c = _judged("no regression")
    assert c.why[0].startswith("pass rate ") and "→" in c.why[0]
    assert "system prompt 2,184 → 2,391 characters" in c.why


def test_the_why_of_a_blind_design_says_what_would_let_it_block() -> None:
    c = _judged("too few runs")
    assert c.why[0] == "could not block: needs ≥ 6 runs per task"


def test_the_why_of_a_budget_stop_and_of_infra_errors() -> None:
    assert _judged("budget stop").why[0] == "this run stopped early (budget): 3 runs missing"
    assert _judged("infra errors").why[0].startswith("infra errors in ")


def test_a_skill_whose_effect_fell_is_the_why() -> None:
    assert _judged("skill conditions").why[0].startswith("skill effect −")


def test_a_state_a_later_step_of_the_judge_adds_comes_first() -> None:
    """The why is data: a reason another step of the judge put there leads the line."""
    from gate.compare._why import with_why

    c = _judged("no regression")
    extra = c.model_copy(update={"why": ["⚪ prompt not judged by the simulator"]})
    said = with_why(extra).why
    assert said[0] == "⚪ prompt not judged by the simulator" and said[1:] == c.why


def test_the_report_link_is_put_on_a_comment_without_a_link_line() -> None:
    c = _judged("regression")
    body = render_markdown(c)  # no CI run, no command: no link line
    assert "📎" not in body[:body.index("<details>")]
    screen = first_screen(with_report_link(body, ARTIFACT))
    assert f"📎 [Report]({ARTIFACT})" in screen


def test_collapsed_tasks_are_named_only_when_their_names_are_short() -> None:
    from gate.compare._why import with_why

    c = _judged("regression")
    long = c.model_copy(update={"why": [], "tasks": [
        t.model_copy(update={"task": f"a-rather-long-task-name-{t.task}"}) for t in c.tasks]})
    assert "2 tasks collapsed" in with_why(long).why
