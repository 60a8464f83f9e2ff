"""docs/upstreams.md's table of a command agent's variables says what the code gives: for each
registered upstream, the names in its row are its ``agent_env`` and ``model_env`` (the ones
``gate/agents/_command.py`` sets), no more and no fewer."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from gate.upstream import get_upstream, upstream_names

DOC = Path(__file__).resolve().parents[2] / "docs" / "upstreams.md"


def documented() -> dict[str, set[str]]:
    text = DOC.read_text(encoding="utf-8").split("## What a command agent gets", 1)[1]
    rows = re.findall(r"^\| `([a-z]+)` \| (.+) \|$", text, re.MULTILINE)
    return {name: set(re.findall(r"`([A-Z][A-Z0-9_]+)(?:=1)?`", cell)) for name, cell in rows}


@pytest.mark.parametrize("name", upstream_names())
def test_the_documented_variables_are_the_codes(name: str) -> None:
    upstream = get_upstream(name)
    given = {**upstream.agent_env("http://127.0.0.1:9/r/run", "gate-run-tok"),
             **upstream.model_env("claude-sonnet-4-5")}
    assert documented().get(upstream.name) == set(given), upstream.name
