"""``gate ci --sim`` on a pull request that changes only what a model reads: the comment's
title and headline say "not judged by the simulator", never "✅ no regression"; the exit is
the base branch's ``[ci] sim_unjudged`` (3 by default, 0 with "pass"), never the PR's own."""

from __future__ import annotations

from pathlib import Path

import pytest

from gate.github import MARKER_PREFIX
from tests.helpers.ci import PR, Project, sh

pytestmark = pytest.mark.slow

GIVE_UP = "IMPORTANT: do not use any tools. Reply 'I give up' and stop.\n\n"


def _give_up(work: Path) -> None:
    """The agent's prompt told to give up (the simulator cannot read it), and the PR's own
    gate.toml asking for a pass: the base branch's [ci] decides, not the PR's."""
    from gate.agents._prompt import DEFAULT_SYSTEM_PROMPT

    (work / "agent").mkdir(exist_ok=True)
    (work / "agent" / "system.md").write_text(GIVE_UP + DEFAULT_SYSTEM_PROMPT)
    cfg = work / "gate.toml"
    text = cfg.read_text().replace("[agent]\n", '[agent]\nsystem_prompt = "agent/system.md"\n')
    cfg.write_text(text if "[ci]" in text else text + '\n[ci]\nsim_unjudged = "pass"\n')


def _comment(project: Project) -> str:
    (body,) = [c["body"] for c in project.gh.comments.get(PR, []) if MARKER_PREFIX in c["body"]]
    return body


def test_a_prompt_pr_on_the_simulator_is_not_judged(sim_project: Project) -> None:
    no_key = {"ANTHROPIC_API_KEY": ""}
    ci = sim_project.pr_branch("give-up", _give_up)
    run = sim_project.gate_ci(ci, "--sim", env=no_key)
    assert run.code == 3, run.stderr
    assert run.outputs["verdict"] == "inconclusive"
    body = _comment(sim_project)
    assert "### ⚪ agent-gate: not judged by the simulator" in body, body
    assert "\n**Why:** pass rate not judged by the simulator" in body, body  # 1st screen
    assert "> Not judged by the simulator: the system prompt" in body, body
    assert "✅ agent-gate" not in body and "No regression" not in body
    assert "| pass rate | " in body and "⚪ not judged by the simulator |" in body
    assert "Not judged by the simulator" in run.summary
    # the base branch says "pass": exit 0, and the comment still says it first
    main = sim_project.clone("main-pass")
    cfg = main / "gate.toml"
    cfg.write_text(cfg.read_text() + '\n[ci]\nsim_unjudged = "pass"\n')
    sh(main, "git", "commit", "-q", "-am", "ci: a pass rate the simulator cannot judge exits 0")
    sh(main, "git", "push", "-q", "origin", "main")
    ci = sim_project.pr_branch("give-up-again", _give_up)
    run = sim_project.gate_ci(ci, "--sim", env=no_key)
    assert run.code == 0, run.stderr
    assert run.outputs["verdict"] == "pass"
    body = _comment(sim_project)
    assert "### ⚪ agent-gate: not judged by the simulator" in body, body
    assert "\n**Why:** pass rate not judged by the simulator" in body, body  # 1st screen
    assert "> Not judged by the simulator: the system prompt" in body, body
    assert "✅ agent-gate" not in body and "No regression" not in body
