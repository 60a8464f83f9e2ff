"""The builtin agent's fingerprint is what it runs: the prompt text it renders (its default
when none is configured) and its own code (tool loop, tools, prompt handling). A change to
either is a new agent; a change elsewhere in the gate (reporting) is not."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import gate.agents._parts as parts_module
import gate.agents._prompt as prompt_module
from gate.agents import agent_kind
from gate.core.config import GateConfig, load_config
from gate.core.fingerprint import digest_of, fingerprint, fingerprint_parts

AGENTS = Path(parts_module.__file__).parent


def _cfg(tmp_path: Path, prompt: str | None = None) -> GateConfig:
    body = '[agent]\nkind = "builtin"\nmodel = "claude-sonnet-5-5"\n'
    if prompt is not None:
        (tmp_path / "system.md").write_text(prompt)
        body += 'system_prompt = "system.md"\n'
    (tmp_path / "gate.toml").write_text(body)
    return load_config(tmp_path / "gate.toml")


def _fp(cfg: GateConfig) -> str:
    return fingerprint(fingerprint_parts(cfg, agent_kind("builtin")), "builtin")


def test_the_default_prompts_text_is_in_the_fingerprint(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cfg = _cfg(tmp_path)
    parts = fingerprint_parts(cfg, agent_kind("builtin"))
    assert parts["prompt"] == digest_of(prompt_module.DEFAULT_SYSTEM_PROMPT)
    # a configured file with the default's very text is the same agent
    (tmp_path / "same").mkdir()
    assert _fp(_cfg(tmp_path / "same", prompt_module.DEFAULT_SYSTEM_PROMPT)) == _fp(cfg)
    before = _fp(cfg)
    monkeypatch.setattr(prompt_module, "DEFAULT_SYSTEM_PROMPT",
                        prompt_module.DEFAULT_SYSTEM_PROMPT + "Be brief.\n")
    assert _fp(cfg) != before  # a release that changes the default prompt is a new agent


@pytest.mark.parametrize("edited, changes", [
    ("_builtin.py", True), ("_tools.py", True), ("_prompt.py", True),  # what it runs
    ("_command.py", False), ("_oracle.py", False),  # another kind's code
])
def test_the_builtin_agents_own_code_is_in_the_fingerprint(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, edited: str, changes: bool) -> None:
    cfg = _cfg(tmp_path)
    copy = tmp_path / "agents"
    shutil.copytree(AGENTS, copy, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(parts_module, "AGENTS_DIR", copy)
    before = fingerprint_parts(cfg, agent_kind("builtin"))
    assert before["code"] == parts_module.code_digest(parts_module.BUILTIN_CODE, AGENTS)
    with (copy / edited).open("a") as fh:
        fh.write("\n# the next release\n")
    after = fingerprint_parts(cfg, agent_kind("builtin"))
    assert (after != before) is changes
    assert {k for k in before if before[k] != after[k]} == ({"code"} if changes else set())


def test_the_comment_says_a_new_fingerprint_starts_a_new_baseline() -> None:
    import numpy as np

    from gate.compare import compare
    from gate.compare._synthetic import reference_rates, synthetic_results
    from gate.core.config import GateSettings
    from gate.report import render_markdown

    fast = GateSettings(permutations=199, power_simulations=0)
    rates = reference_rates()
    base = synthetic_results(rates, 5, np.random.default_rng(1), fingerprint="sha256:aaaa")
    same = synthetic_results(rates, 5, np.random.default_rng(2), fingerprint="sha256:aaaa")
    new = synthetic_results(rates, 5, np.random.default_rng(2), fingerprint="sha256:bbbb")
    sentence = "A new fingerprint starts a new baseline"
    assert sentence in render_markdown(compare(base, new, fast))
    assert sentence not in render_markdown(compare(base, same, fast))
