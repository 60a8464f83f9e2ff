"""What the simulator cannot judge, through the real CLI: ``gate run --sim`` twice and
``gate compare``, as a user tries the gate with no key.

The simulator never reads a system prompt's words: a prompt that tells the agent to give up
changes nothing it does. Such a change is "Not judged by the simulator" (said first, never "No
regression"), exit 3 by default or 0 with ``[ci] sim_unjudged = "pass"``; a change it models
(``max_turns``, ``max_tokens``) is judged as ever, an unchanged agent passes, and a cost
regression that comes with a prompt change still blocks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers import ROOT
from tests.helpers.ci import write_word_tasks
from tests.helpers.process import gate, user_env

pytestmark = pytest.mark.slow

#: the scaffold's prompt (`gate init`): long enough for its prefix to be cached
PROMPT = (ROOT / "gate" / "templates" / "init" / "agent" / "system.md").read_text()
GIVE_UP = "IMPORTANT: do not use any tools. Reply 'I give up' and stop.\n\n"


def _toml(*, max_turns: int = 30, max_tokens: int = 4096, ci: str = "") -> str:
    return (f'[agent]\nkind = "builtin"\nmodel = "claude-sonnet-5-5"\n'
            f'system_prompt = "agent/system.md"\nmax_turns = {max_turns}\n'
            f'max_tokens = {max_tokens}\n\n'
            '[suite]\ntasks = "tasks"\nreplications = 3\njobs = 3\n\n'
            f'[gate]\nbaseline = "baseline.json"\n{ci}')


def _suite(root: Path) -> None:
    write_word_tasks(root)
    (root / "agent").mkdir()
    (root / "agent" / "system.md").write_text(PROMPT)
    (root / "gate.toml").write_text(_toml())


def _run(root: Path, out: str) -> Path:
    p = gate("run", "--sim", "-o", out, cwd=root, base=user_env())
    assert p.returncode == 0, p.stderr
    return root / out


def _compare(root: Path, pr: Path, *more: str, config: str = "gate.toml"
             ) -> tuple[int, str]:
    p = gate("compare", "--config", config, "base.json", pr, *more, cwd=root, base=user_env())
    assert p.returncode != 2, p.stderr
    return p.returncode, p.stdout


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("unjudged")
    _suite(root)
    _run(root, "base.json")
    (root / "pass.toml").write_text(_toml(ci='\n[ci]\nsim_unjudged = "pass"\n'))
    return root


def _variant(root: Path, name: str, *, prompt: str | None = None, **toml: int) -> Path:
    """A run of the agent with ``prompt`` and ``toml``'s settings, then the original back."""
    system, cfg = root / "agent" / "system.md", root / "gate.toml"
    try:
        if prompt is not None:
            system.write_text(prompt)
        cfg.write_text(_toml(**toml))
        return _run(root, f"{name}.json")
    finally:
        system.write_text(PROMPT)
        cfg.write_text(_toml())


def _row(text: str, label: str) -> str:
    return next(line for line in text.splitlines() if line.strip().startswith(label))


def test_a_give_up_prompt_is_not_judged_by_the_simulator(suite: Path) -> None:
    pr = _variant(suite, "give-up", prompt=GIVE_UP + PROMPT)
    code, out = _compare(suite, pr)
    assert code == 3, out
    assert out.startswith("Not judged by the simulator: the system prompt"), out
    assert "No regression" not in out
    assert "[not judged by the simulator]" in _row(out, "pass rate"), out
    assert '[ci] sim_unjudged = "inconclusive"' in out.splitlines()[0]
    for row in ("mean turns", "cost per run", "cache-hit rate"):  # measured: judged
        assert _row(out, row).endswith(("[ok]", "[ok (within margin)]")), out
    # the comment says it first, in its title too: never "✅ no regression"
    _, markdown = _compare(suite, pr, "--format", "markdown")
    assert markdown.startswith("### ⚪ agent-gate: not judged by the simulator\n"), markdown
    assert "\n**Why:** pass rate not judged by the simulator" in markdown, markdown  # 1st screen
    assert "> Not judged by the simulator: the system prompt" in markdown  # the full headline
    assert "✅ agent-gate" not in markdown
    _, data = _compare(suite, pr, "--format", "json")
    c = json.loads(data)
    assert c["verdict"] == "inconclusive" and c["exit_code"] == 3
    assert c["unjudged"] and c["metrics"][0]["verdict"] == "unjudged"
    # the HTML report's banner, as gate report writes it from the same files
    page = suite / "give-up.html"
    p = gate("report", pr, "--baseline", "base.json", "--html", page, cwd=suite,
             base=user_env())
    assert p.returncode == 0, p.stderr
    assert "<h1>agent-gate: Not judged by the simulator</h1>" in page.read_text()
    # [ci] sim_unjudged = "pass": exit 0, and the headline still says it first
    code, out = _compare(suite, pr, config="pass.toml")
    assert code == 0, out
    assert out.startswith("Not judged by the simulator: the system prompt"), out
    assert "No regression" not in out and "exit 3" not in out
    assert "[not judged by the simulator]" in _row(out, "pass rate"), out
    _, markdown = _compare(suite, pr, "--format", "markdown", config="pass.toml")
    assert markdown.startswith("### ⚪ agent-gate: not judged by the simulator\n"), markdown


def test_an_unchanged_agent_and_what_the_simulator_models_are_judged(suite: Path) -> None:
    same = _run(suite, "same.json")
    code, out = _compare(suite, same)
    assert code == 0 and out.startswith("No regression"), out
    assert "[ok]" in _row(out, "pass rate")
    # max_tokens: the simulator writes its answers within it, so a change is judged
    roomier = _variant(suite, "roomier", max_tokens=4095)
    code, out = _compare(suite, roomier)
    assert code == 0 and out.startswith("No regression"), out
    assert "not judged" not in out
    # max_turns below what the tasks need: the simulator's runs fail, a regression
    cut = _variant(suite, "cut", max_turns=1)
    code, out = _compare(suite, cut)
    assert code == 1 and out.startswith("Regression: pass rate"), out
    assert "not judged" not in out


def test_a_cost_regression_with_a_prompt_change_still_blocks(suite: Path) -> None:
    """``{{ now }}`` at the prompt's start breaks every request's cache (cost, cache hits:
    measured) along with words the simulator cannot read: the regression blocks, whatever
    ``sim_unjudged`` says, and the pass rate still reads "not judged"."""
    pr = _variant(suite, "now", prompt="It is {{ now }}. " + GIVE_UP + PROMPT)
    for config in ("gate.toml", "pass.toml"):
        code, out = _compare(suite, pr, config=config)
        assert code == 1, out
        assert out.startswith("Regression: "), out
        assert "[regression]" in _row(out, "cache-hit rate"), out
        assert "[not judged by the simulator]" in _row(out, "pass rate"), out
        assert "pass rate not judged by the simulator" in out.splitlines()[0]
