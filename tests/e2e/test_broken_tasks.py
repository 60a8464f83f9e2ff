"""A task that cannot load is never "removed" (issue 39, item 4), through the real CLI.

``gate run`` refuses a suite with a broken task (exit 2, one line naming the task's folder
and what is wrong) unless ``--skip-broken`` runs the rest on purpose, and then the results
file records which task was broken and why. ``gate compare`` on such a file lists the task as
broken (never "removed"), counts it as not compared against ``min_comparable`` and names it in
the headline, in every view (terminal, Markdown, JSON, the HTML report).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers.process import gate

pytestmark = pytest.mark.slow


def _suite(make_task, names: list[str]) -> None:
    for name in names:
        make_task(name)


def _run(suite: Path, out: Path, *args: str):
    return gate("run", "--tasks", suite, "--agent", "oracle", "-k", "2", "-j", "4", "-o", out,
                *args, timeout=180)


def test_a_broken_task_stops_the_run_naming_it_unless_skip_broken(
        make_task, suite_dir: Path, tmp_path: Path) -> None:
    _suite(make_task, ["a", "b", "c"])
    (make_task("no-verify") / "verify.sh").unlink()
    out = tmp_path / "r.json"
    p = _run(suite_dir, out)
    assert p.returncode == 2, p.stdout + p.stderr
    assert "Traceback" not in p.stderr and p.stderr.strip().count("\n") == 0, p.stderr
    assert f"{suite_dir / 'no-verify'}: task no-verify cannot load: missing verify.sh" \
        in p.stderr and "--skip-broken" in p.stderr
    assert not out.exists()  # nothing ran, nothing to compare

    # a task.toml that does not parse: named with its file and its field
    make_task("typo", toml="verify_timout = 5\n")
    p = _run(suite_dir, out)
    assert p.returncode == 2, p.stderr
    assert "task no-verify cannot load: missing verify.sh (and 1 more broken task: typo)" \
        in p.stderr, p.stderr

    p = _run(suite_dir, out, "--skip-broken")
    assert p.returncode == 0, p.stderr
    data = json.loads(out.read_text())
    assert sorted({r["task"] for r in data["runs"]}) == ["a", "b", "c"]
    assert data["problems"]["no-verify"] == "missing verify.sh"
    assert "task.toml: unknown key 'verify_timout'" in data["problems"]["typo"]
    assert "no-verify" not in data["suite"]["tasks"]


def test_compare_lists_a_broken_task_as_broken_and_names_it_in_the_headline(
        make_task, suite_dir: Path, tmp_path: Path) -> None:
    names = ["a", "b", "c", "d", "e"]
    _suite(make_task, names)
    base = tmp_path / "base.json"
    assert _run(suite_dir, base).returncode == 0
    (suite_dir / "e" / "verify.sh").unlink()
    cand = tmp_path / "cand.json"
    assert _run(suite_dir, cand, "--skip-broken").returncode == 0

    # 4 of 5 compared: min_comparable (80 %) holds, the verdict stands, the task is named
    p = gate("compare", base, cand, timeout=120)
    assert p.returncode == 0, p.stdout + p.stderr
    headline = p.stdout.splitlines()[0]
    assert headline.startswith("No regression"), p.stdout
    assert "4/5 tasks compared" in headline
    assert "1 task broken, not run: e (missing verify.sh)" in headline
    assert "removed" not in p.stdout
    row = next(ln for ln in p.stdout.splitlines() if ln.lstrip().startswith("e: "))
    assert "broken" in row, p.stdout

    p = gate("compare", base, cand, "--format", "json", timeout=120)
    c = json.loads(p.stdout)
    assert c["suite"]["broken"] == ["e"] and c["suite"]["removed"] == []
    (task,) = [t for t in c["tasks"] if t["task"] == "e"]
    assert task["status"] == "broken" and task["reasons"] == ["missing verify.sh"]

    p = gate("compare", base, cand, "--format", "markdown", timeout=120)
    assert p.returncode == 0, p.stderr
    why = next(ln for ln in p.stdout.splitlines() if ln.startswith("**Why:** "))  # 1st screen
    assert "1 task broken: e" in why, p.stdout
    assert "1 task broken, not run: e (missing verify.sh)" in p.stdout
    assert "➖ removed" not in p.stdout

    html = tmp_path / "report.html"
    p = gate("report", cand, "--baseline", base, "--html", html, timeout=120)
    assert p.returncode == 0, p.stderr
    page = html.read_text()
    assert "1 task broken, not run: e (missing verify.sh)" in page
    assert "broken: not run, not compared" in page


def test_a_broken_task_counts_against_min_comparable(
        make_task, suite_dir: Path, tmp_path: Path) -> None:
    _suite(make_task, ["a", "b", "c", "d"])
    base = tmp_path / "base.json"
    assert _run(suite_dir, base).returncode == 0
    (suite_dir / "d" / "task.toml").write_text("verify_timeout = 'soon'\n")
    cand = tmp_path / "cand.json"
    assert _run(suite_dir, cand, "--skip-broken").returncode == 0
    p = gate("compare", base, cand, timeout=120)
    assert p.returncode == 3, p.stdout + p.stderr  # 3 of 4 < 80 %: inconclusive, not a pass
    headline = p.stdout.splitlines()[0]
    assert headline.startswith("Inconclusive: only 3 of 4 baseline tasks are comparable")
    assert "1 task broken, not run: d (task.toml: verify_timeout" in headline, headline
    assert "removed" not in p.stdout


def test_a_results_file_whose_broken_tasks_are_not_reasons_is_exit_2(
        make_task, suite_dir: Path, tmp_path: Path) -> None:
    _suite(make_task, ["a"])
    base = tmp_path / "base.json"
    assert _run(suite_dir, base).returncode == 0
    data = json.loads(base.read_text())
    data["problems"] = {"b": ["not", "a", "reason"]}
    spoiled = tmp_path / "spoiled.json"
    spoiled.write_text(json.dumps(data))
    p = gate("compare", base, spoiled, timeout=120)
    assert p.returncode == 2, p.stdout + p.stderr
    assert str(spoiled) in p.stderr and "problems" in p.stderr
    assert "Traceback" not in p.stderr
