"""Issue 39, item 8, in process (the CLI's lines: tests/e2e/test_errors_name_the_fix.py):
the nearest valid key of a gate.toml table, the nearest known model of the price table."""

from __future__ import annotations

from pathlib import Path

import pytest

from gate.core.config import parse_config
from gate.core.cost import default_prices
from gate.errors import BadInput


@pytest.mark.parametrize(("toml", "said"), [
    ("[gate]\nmetric_alfa = 0.01\n", "gate.metric_alfa: unknown key; did you mean "
                                     "`metric_alpha`? [gate] has: baseline, alpha, "),
    ("[siute]\n", "siute: unknown section; did you mean `[suite]`? gate.toml has: [agent]"),
    ("[conditions.a]\nskils = []\n", "conditions.a.skils: unknown key; did you mean `skills`? "
                                     "[conditions.a] has: skills, description, agent"),
])
def test_an_unknown_key_names_the_nearest_and_the_tables_keys(toml: str, said: str) -> None:
    with pytest.raises(BadInput) as err:
        parse_config(toml, where="g.toml", root=Path("."))
    assert str(err.value).startswith(f"g.toml: {said}"), err.value


def test_any_other_error_keeps_its_own_wording() -> None:
    with pytest.raises(BadInput) as err:
        parse_config("[suite]\nreplications = 0\n", where="g.toml", root=Path("."))
    assert str(err.value) == "g.toml: suite.replications: Input should be greater than 0"


@pytest.mark.parametrize(("model", "near"), [
    ("claude-sonet-5-5", "claude-sonnet-5-5"), ("Claude-Opus-5-5", "claude-opus-5-5"),
    ("claude-sonet-4-5-20250929", "claude-sonnet-4-5"), ("claude-sonnet-9-0", None),
    ("claude-fable-6", None), ("claude-sonnet-4-5-20250929", None), ("gpt-5", None),
])
def test_a_misspelling_is_told_from_a_model_newer_than_the_table(model: str,
                                                                  near: str | None) -> None:
    assert default_prices().misspelled(model) == near
