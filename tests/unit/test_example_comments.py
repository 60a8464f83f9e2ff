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


@pytest.mark.parametrize("name", ["example-comment.md", "example-comment-now.md"])
def test_sample_comments_open_on_the_first_screen_the_product_renders(name: str) -> None:
    """What the docs show first is what a PR shows first: the verdict, the why, the link line
    with the command, in 15 lines of at most 80 columns as GitHub shows them."""
    import html

    text = (DOCS / name).read_text(encoding="utf-8")
    body = text[text.index("-->") + 3:].lstrip("\n")
    head = body[:body.index("<details>")]
    screen = head[:-1].split("\n")
    assert len(screen) <= 15, head
    for line in screen:
        shown = re.sub(r"\[([^\]]*)\]\([^)\s]*\)", r"\1", line.removesuffix("\\"))
        shown = re.sub(r"\\(.)", r"\1", shown.replace("**", "").replace("`", ""))
        assert len(html.unescape(shown)) <= 80, line
    assert screen[1].startswith("**Why:** ")
    assert any(line.startswith("📎 ") and "`gate compare " in line for line in screen)
