"""The sample comments in docs/ say what the templates produce: counts in words ("1 task",
"2 tasks"), never the template's old "task(s)". A failure reason quoted from a task's own
verify script (its words, not the gate's) is left as it was."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[2] / "docs"


@pytest.mark.parametrize("name", ["example-comment.md", "example-comment-now.md"])
def test_sample_comments_count_in_words(name: str) -> None:
    text = (DOCS / name).read_text(encoding="utf-8")
    assert re.findall(r"\b\d+ (?:more )?(?:regressed )?(?:task|run)\(s\)", text) == []
    if "Behaviour notes from verify" in text:
        assert re.search(r"Behaviour notes from verify \((1 task|\d+ tasks);", text)
