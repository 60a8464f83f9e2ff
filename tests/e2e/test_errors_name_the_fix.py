"""Issue 39, item 8: errors that name the fix, through the real CLI.

A misspelled model is told it is not in the price table of that date, with the nearest known
name; a name built as the table's (a model newer than the table) keeps the price advice. A
misspelled key or section of gate.toml gets "did you mean" and the valid keys of its table,
naming the file and the field: one line, exit 2, never pydantic's wording. All of it before
anything runs (the configured model is checked as the run is planned).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from gate.core.cost import default_prices
from tests.helpers.process import gate, user_env

pytestmark = pytest.mark.slow  # each starts the gate as a subprocess (about a second)

TABLE_DATE = default_prices().date

SUITE_KEYS = ("tasks, replications, jobs, verify_timeout, task_timeout, sandbox, image, pull, "
              "pass_env, reward_unprotected, server_tools, net_raw, allow_private, disk_mb, "
              "tamper_exempt")


def _suite(tmp_path: Path, toml: str) -> Path:
    """A folder with one task and ``toml`` as its gate.toml."""
    task = tmp_path / "tasks" / "t"
    task.mkdir(parents=True)
    (task / "task.md").write_text("Write hi into hello.txt.\n")
    (task / "verify.sh").write_text("grep -qx hi hello.txt\n")
    (tmp_path / "gate.toml").write_text(toml)
    return tmp_path


def _one_error(tmp_path: Path, *args: str) -> str:
    p = gate(*args, cwd=tmp_path, env=user_env(), base={})
    assert p.returncode == 2, (p.stdout, p.stderr)
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1, p.stderr  # one line, no traceback
    assert "Extra inputs" not in p.stderr and "extra_forbidden" not in p.stderr
    assert not (tmp_path / "results.json").exists()  # refused before anything ran
    return lines[0]


def test_a_misspelled_key_names_the_key_it_meant_and_the_tables_keys(tmp_path: Path) -> None:
    _suite(tmp_path, "[suite]\nreplicatons = 3\n")
    line = _one_error(tmp_path, "run", "--sim")
    assert line == ("gate: error: gate.toml: suite.replicatons: unknown key; did you mean "
                    f"`replications`? [suite] has: {SUITE_KEYS}")


def test_a_misspelled_section_names_the_section_it_meant(tmp_path: Path) -> None:
    _suite(tmp_path, '[agnet]\nmodel = "claude-sonnet-5-5"\n')
    line = _one_error(tmp_path, "run", "--sim")
    assert line == ("gate: error: gate.toml: agnet: unknown section; did you mean `[agent]`? "
                    "gate.toml has: [agent], [suite], [gate], [ci], [conditions]")


def test_a_misspelled_key_deeper_down_is_told_before_the_key_it_left_missing(
        tmp_path: Path) -> None:
    """``inptu`` also leaves ``input`` missing: the misspelling is the error to name."""
    _suite(tmp_path, '[agent.prices."my-model"]\ninptu = 1.0\noutput = 5.0\n')
    line = _one_error(tmp_path, "validate")
    assert line == ('gate: error: gate.toml: agent.prices.my-model.inptu: unknown key; did you '
                    "mean `input`? [agent.prices.my-model] has: input, output, cache_write_5m, "
                    "cache_write_1h, cache_read")


def test_a_conditions_overlay_lists_only_what_it_may_set(tmp_path: Path) -> None:
    _suite(tmp_path, '[conditions.terse.agent]\nmax_turn = 3\n')
    line = _one_error(tmp_path, "validate")
    assert line == ("gate: error: gate.toml: conditions.terse.agent.max_turn: unknown key; did "
                    "you mean `max_turns`? [conditions.terse.agent] has: model, system_prompt, "
                    "tools, max_turns, max_tokens, temperature, top_p, cache, command, install, "
                    "install_timeout_sec, env, prices")


def test_a_key_like_no_other_still_lists_the_valid_keys(tmp_path: Path) -> None:
    _suite(tmp_path, "[ci]\nzzz = 1\n")
    line = _one_error(tmp_path, "validate")
    assert line.startswith("gate: error: gate.toml: ci.zzz: unknown key; [ci] has: comment, "
                           "fail_on_regression, "), line
    assert "did you mean" not in line


def test_a_misspelled_model_names_the_nearest_known_one(tmp_path: Path) -> None:
    _suite(tmp_path, '[agent]\nmodel = "claude-sonet-5-5"\n')
    line = _one_error(tmp_path, "run", "--sim")
    assert line == (f"gate: error: {tmp_path / 'gate.toml'}: agent.model: model "
                    f"'claude-sonet-5-5' is not in the price table of {TABLE_DATE}: did you "
                    "mean 'claude-sonnet-5-5'?")


def test_a_misspelled_model_on_the_command_line_is_named_as_the_flag(tmp_path: Path) -> None:
    _suite(tmp_path, "")
    line = _one_error(tmp_path, "run", "--sim", "--model", "claude-opsu-5-5")
    assert line == (f"gate: error: --model: model 'claude-opsu-5-5' is not in the price "
                    f"table of {TABLE_DATE}: did you mean 'claude-opus-5-5'?")


@pytest.mark.parametrize("model", ["claude-sonnet-9-0", "claude-opus-7-20270101"])
def test_a_model_newer_than_the_table_keeps_the_price_advice(tmp_path: Path,
                                                             model: str) -> None:
    """Built as the table's names are, with a family it knows: a new model, not a typo."""
    _suite(tmp_path, f'[agent]\nmodel = "{model}"\n')
    line = _one_error(tmp_path, "run", "--sim")
    assert line == (f"gate: error: {tmp_path / 'gate.toml'}: agent.model: no price for model "
                    f"'{model}' (price table of {TABLE_DATE}): add it to gate.toml as "
                    f'[agent.prices."{model}"] with input = ... and output = ... (USD per '
                    "million tokens)")
    assert "did you mean" not in line
