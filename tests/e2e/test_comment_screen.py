"""The PR comment as a phone shows it, rendered by the real CLI from real simulator runs.

``gate init``, a baseline, then the scaffold's agent capped at one turn (``max_turns = 1``:
every run fails). Against a deep baseline that is a regression; against three runs it is a
comparison that could not have blocked it (exit 3), whose rows are never painted green. The
first screen (the lines before the first collapsed block) is at most 15 lines, none wider than
80 columns as GitHub shows it, with no table wider than four columns; on it the verdict, the
one-line why (the collapsed task, the metric and by how much, ``max_turns 30 → 1``) and the
command that reproduces it; the agent change said by key and value, and counts in words.
"""

from __future__ import annotations

import html
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers.process import gate as run_gate
from tests.helpers.process import user_env

pytestmark = pytest.mark.slow


def gate(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run_gate(*args, cwd=cwd, base=user_env())


def _capped(repo: Path) -> Iterator[None]:
    toml = repo / "gate.toml"
    text = toml.read_text()
    assert "max_turns = 30" in text
    toml.write_text(text.replace("max_turns = 30", "max_turns = 1", 1))
    try:
        yield
    finally:
        toml.write_text(text)


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A scaffold with a deep baseline, a 3-run baseline, and a capped agent's runs."""
    repo = tmp_path_factory.mktemp("screen") / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True, env=user_env())
    assert gate(repo, "init").returncode == 0
    for args in (("run", "--sim", "--seed", "1", "-o", "deep.json"),
                 ("baseline", "deep.json", "--baseline", "deep-baseline.json"),
                 ("run", "--sim", "-k", "3", "--seed", "5", "-o", "b3.json"),
                 ("baseline", "b3.json", "--baseline", "baseline3.json")):
        p = gate(repo, *args)
        assert p.returncode == 0, p.stderr
    for _ in _capped(repo):
        for args in (("run", "--sim", "--seed", "3", "-o", "collapse.json"),
                     ("run", "--sim", "-k", "3", "--seed", "6", "-o", "c3.json")):
            p = gate(repo, *args)
            assert p.returncode == 0, p.stderr
    return repo


def comment(repo: Path, baseline: str, results: str, code: int) -> str:
    p = gate(repo, "compare", baseline, results, "--format", "markdown")
    assert p.returncode == code, p.stderr
    return p.stdout


def first_screen(body: str) -> list[str]:
    head = body[:body.index("<details>")]
    assert head.endswith("\n\n")  # a blank line: the collapsed block starts a block
    return head[:-1].split("\n")


def metric_rows(lines: list[str]) -> dict[str, str]:
    rows = {}
    for line in lines:
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("| ") and cells[0] in ("pass rate", "mean turns", "cost per run",
                                                   "cache-hit rate"):
            rows[cells[0]] = line
    return rows


def shown(line: str) -> str:
    """A source line as GitHub shows it: a link is its text; no emphasis marks, code ticks,
    backslash escapes or hard-break backslash; an entity is its character."""
    text = re.sub(r"\[([^\]]*)\]\([^)\s]*\)", r"\1", line.removesuffix("\\"))
    text = re.sub(r"\\(.)", r"\1", text.replace("**", "").replace("`", ""))
    return html.unescape(text).replace("\u200d", "")


def check_phone_screen(body: str, command: str) -> list[str]:
    screen = first_screen(body)
    assert len(screen) <= 15, "\n".join(screen)
    for line in screen:
        assert len(shown(line)) <= 80, line
        if line.startswith("|"):
            assert line.strip().strip("|").count("|") + 1 <= 4, line
    why = screen[1]
    assert why.startswith("**Why:** ") and "max\\_turns 30 → 1" in why, why
    assert body.count(why) == 1  # said once
    assert f"📎 Locally: `{command}`" in screen  # as the user typed it
    return screen


def test_a_comparison_that_could_not_block_is_never_green(repo: Path) -> None:
    body = comment(repo, "baseline3.json", "c3.json", 3)
    screen = check_phone_screen(body, "gate compare baseline3.json c3.json")
    assert screen[0] == "### ⚠️ agent-gate: inconclusive"
    assert screen[1].startswith("**Why:** could not block: needs ≥ 6 runs per task · ")
    rows = metric_rows(screen)
    assert "100.0 % → 0.0 %" in rows["pass rate"]
    full = metric_rows(body[body.index("<details>"):].splitlines())  # the wide table's
    assert "100.0 % (3/3) | 0.0 % (0/3)" in full["pass rate"]
    for table in (rows, full):
        assert set(table) == {"pass rate", "mean turns", "cost per run", "cache-hit rate"}
        for row in table.values():
            assert "✅" not in row and "could not block" in row, row
    assert "could not have detected a regression" in body  # compare's words, collapsed
    text = gate(repo, "compare", "baseline3.json", "c3.json")  # the terminal says it too
    assert text.returncode == 3 and text.stdout.count("[could not block") == 4, text.stdout
    assert "\nWhy: could not block: needs ≥ 6 runs per task · " in text.stdout  # the why too
    assert re.search(r"\bok\b", text.stdout) is None, text.stdout
    page = gate(repo, "report", "c3.json", "--baseline", "baseline3.json", "--html", "r.html")
    assert page.returncode == 0, page.stderr
    cells = re.findall(r'<td class="vd (\w*)">([^<]*)</td>', (repo / "r.html").read_text())
    # the page: never green (the duration, which never gates, says so)
    assert cells == [("warn", "could not block (too few runs)")] * 4 + [
        ("warn", "reported, not gating")]
    # counts in words: one task, "3 runs/task", "1 of 1 baseline task"
    assert "on 1 task," in body and "(3 runs/task)" in body
    assert "Suite: 1 of 1 baseline task compared" in body
    assert "on the 1 compared task " in body
    assert re.search(r"\b1 (tasks|runs|changes|compared tasks)\b", body) is None
    assert re.search(r"\w\(s\)", body) is None  # never "task(s)"


def test_a_regression_opens_on_a_phone_screen(repo: Path) -> None:
    body = comment(repo, "deep-baseline.json", "collapse.json", 1)
    screen = check_phone_screen(body, "gate compare deep-baseline.json collapse.json")
    assert screen[0] == "### ❌ agent-gate: regression"
    # the metric and by how much, the task that collapsed, the setting that changed
    assert screen[1] == ("**Why:** pass rate −100.0 pts · example-count-words collapsed · "
                         "max\\_turns 30 → 1")
    rows = metric_rows(screen)
    assert "❌ regression" in rows["pass rate"]
    # the wide table (interval, p-values, margin) is in a collapsed block
    assert "95 % CI" not in "\n".join(screen) and "95 % CI" in body


def test_the_agent_change_is_said_by_key_and_value(repo: Path) -> None:
    body = comment(repo, "deep-baseline.json", "collapse.json", 1)
    assert "<details><summary>Agent configuration: 1 change</summary>" in body
    assert "- `max_turns`: 30 → 1\n" in body
    assert "sampling" not in body  # the part's digests are not the change


def test_an_agent_change_from_results_without_values_shows_the_digests(repo: Path) -> None:
    """A results file written before the values were recorded: the part's digests."""
    import json

    old = json.loads((repo / "collapse.json").read_text())
    del old["agent"]["values"]
    (repo / "collapse-old.json").write_text(json.dumps(old))
    body = comment(repo, "deep-baseline.json", "collapse-old.json", 1)
    assert re.search(r"- sampling \(digest\): [0-9a-f]{12} → [0-9a-f]{12}\n", body)
