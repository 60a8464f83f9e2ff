"""Issue 39, item 3: a prefix too short to cache is said, through the real CLI on the simulator.

When the builtin agent's tools + system prompt are under the model's minimum cacheable length
the API caches none of it and says nothing. ``gate run`` counts the prefix (the upstream's
count_tokens, the simulator's here) and says so once on stderr (model, tokens, minimum); the
results file records it (``cache_prefix``); the comparison's cache-hit row notes it in the
terminal, the comment and the HTML report, and still gates on what the conversation cached. A
prompt long enough is counted and not mentioned; a results file without the record (an older
one) compares as before.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.helpers.process import gate, user_env

pytestmark = pytest.mark.slow

SHORT_PROMPT = "You are a careful engineer working in {{ workdir }}. Do the task.\n"
NOTE = "gate: note: the shared prefix"


def _scaffold(repo: Path) -> Path:
    """``gate init``'s scaffold: one task, a system prompt written to be cached."""
    repo.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    p = gate("init", cwd=repo, base=user_env())
    assert p.returncode == 0, p.stderr
    return repo


def _run(repo: Path, out: str) -> tuple[subprocess.CompletedProcess[str], dict[str, object]]:
    p = gate("run", "--sim", "-k", "1", "-o", out, cwd=repo, base=user_env())
    assert p.returncode == 0, p.stderr
    return p, json.loads((repo / out).read_text())


def test_a_prefix_under_the_minimum_is_said_once_recorded_and_noted_on_the_row(
        tmp_path: Path) -> None:
    repo = _scaffold(tmp_path / "repo")
    p, long = _run(repo, "long.json")
    assert NOTE not in p.stderr, p.stderr
    assert long["cache_prefix"]["cached"] is True  # type: ignore[index]
    assert long["cache_prefix"]["tokens"] >= 1024  # type: ignore[index,operator]

    (repo / "agent" / "system.md").write_text(SHORT_PROMPT)
    p, short = _run(repo, "short.json")
    record = short["cache_prefix"]
    assert isinstance(record, dict)
    tokens = record["tokens"]
    assert record == {"model": "claude-sonnet-5-5", "tokens": tokens, "minimum": 1024,
                      "cached": False}
    assert 100 < tokens < 1024  # the tools alone are a few hundred
    lines = [ln for ln in p.stderr.splitlines() if ln.startswith(NOTE)]
    assert lines == [
        f"gate: note: the shared prefix (tools + system prompt, {tokens:,} tokens) is under "
        "claude-sonnet-5-5's minimum cacheable length (1,024): not cached; the conversation "
        "is cached once it is that long"], p.stderr

    row_note = (f"candidate's prefix not cached ({tokens:,} < 1,024 tokens, "
                "claude-sonnet-5-5): the rate is the conversation's")
    text = gate("compare", "long.json", "short.json", cwd=repo, base=user_env())
    assert text.returncode in (0, 1, 3), text.stderr
    row = next(ln for ln in text.stdout.splitlines() if ln.strip().startswith("cache-hit rate"))
    assert row_note in row, text.stdout
    md = gate("compare", "long.json", "short.json", "--format", "markdown", cwd=repo,
              base=user_env())
    rows = [ln for ln in md.stdout.splitlines() if ln.startswith("| cache-hit rate")]
    assert row_note in rows[-1], md.stdout  # the full table's row (the first screen's is brief)
    html = gate("report", "short.json", "--baseline", "long.json", "--html", "r.html",
                cwd=repo, base=user_env())
    assert html.returncode == 0, html.stderr
    assert row_note.replace("<", "&lt;").replace("'", "&#39;") in (repo / "r.html").read_text()
    js = gate("compare", "long.json", "short.json", "--format", "json", cwd=repo,
              base=user_env())
    metric = next(m for m in json.loads(js.stdout)["metrics"] if m["name"] == "cache_hit_rate")
    assert metric["caveat"] == row_note
    assert metric["gating"] is True  # still gates on what the conversation cached

    # both arms short: said of both; an older file (no record) compares as before
    both = gate("compare", "short.json", "short.json", cwd=repo, base=user_env())
    assert (f"both arms' prefix not cached ({tokens:,} < 1,024 tokens, claude-sonnet-5-5)"
            in both.stdout), both.stdout
    del short["cache_prefix"]
    (repo / "old.json").write_text(json.dumps(short))
    old = gate("compare", "long.json", "old.json", cwd=repo, base=user_env())
    assert old.returncode in (0, 1, 3), old.stderr
    assert "prefix not cached" not in old.stdout, old.stdout
