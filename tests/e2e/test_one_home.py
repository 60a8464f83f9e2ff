"""Small rules of a results file, each written once, in ``gate/core/results.py``: which runs are
valid (:attr:`RunResult.valid`: all but infra errors), runs grouped by task
(:func:`runs_by_task`), and where a results file's transcripts are
(:func:`transcripts_dir`: ``X.json`` → ``X.transcripts/``).

Checked twice: from the source (no other module writes the rule again), and through the CLI
(``gate run`` writes the transcripts where ``gate merge`` and ``gate report`` read them).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from gate.core.results import transcripts_dir
from tests.helpers.process import gate
from tests.helpers.suites import tiny_suite

GATE = Path(__file__).resolve().parents[2] / "gate"
HOME = GATE / "core" / "results.py"


def _is_task_of_a_run(node: ast.AST) -> bool:
    return isinstance(node, ast.Attribute) and node.attr == "task"


def _rules(tree: ast.AST) -> set[str]:
    """Which of the three rules a module writes itself."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare) and isinstance(node.left, ast.Attribute) \
                and node.left.attr == "status" and isinstance(node.ops[0], ast.NotEq) \
                and isinstance(node.comparators[0], ast.Constant) \
                and node.comparators[0].value == "error":
            found.add("a valid run (status != 'error')")
        if isinstance(node, ast.Constant) and isinstance(node.value, str) \
                and node.value.startswith(".transcripts"):
            found.add("the transcripts directory ('.transcripts')")
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and (
                (node.func.attr == "setdefault" and node.args
                 and _is_task_of_a_run(node.args[0]))
                or (node.func.attr == "append" and isinstance(node.func.value, ast.Subscript)
                    and _is_task_of_a_run(node.func.value.slice))):
            found.add("grouping runs by task")
    return found


def test_each_rule_is_written_in_results_py_alone() -> None:
    where = {p.relative_to(GATE.parent).as_posix(): sorted(rules)
             for p in sorted(GATE.rglob("*.py")) if p != HOME
             and (rules := _rules(ast.parse(p.read_text(encoding="utf-8"))))}
    assert where == {}
    assert len(_rules(ast.parse(HOME.read_text(encoding="utf-8")))) == 3


@pytest.mark.parametrize("source, rule", [
    ("ok = [r for r in runs if r.status != 'error']\n", "a valid run"),
    ("d = out.with_name(f'{out.stem}.transcripts')\n", "the transcripts directory"),
    ("for r in runs:\n    by.setdefault(r.task, []).append(r)\n", "grouping runs by task"),
    ("for r in runs:\n    by[r.task].append(r)\n", "grouping runs by task"),
    ("bad = [r for r in runs if r.status == 'error']\n", None),
])
def test_the_checker_sees_a_second_copy(source: str, rule: str | None) -> None:
    found = _rules(ast.parse(source))
    assert [f.split(" (")[0] for f in found] == ([rule] if rule else [])


@pytest.mark.slow
def test_the_transcripts_gate_run_writes_are_the_ones_merge_and_report_read(
        tmp_path: Path) -> None:
    """Two shards, each with its transcripts beside its results; merged; the report of the
    merge shows every run's transcript (none is "not found")."""
    suite = tiny_suite(tmp_path / "tasks")
    shards = [tmp_path / "out" / f"s{i}.json" for i in (1, 2)]
    for i, out in enumerate(shards, 1):
        p = gate("run", "--tasks", suite, "--agent", "oracle", "-k", "1", "--shard", f"{i}/2",
                 "-o", out, cwd=tmp_path)
        assert p.returncode == 0, p.stderr
        assert sorted(f.suffix for f in transcripts_dir(out).iterdir()) == [".jsonl"] * len(
            [line for line in out.read_text().split('"task":')[1:]])
    merged = tmp_path / "merged.json"
    p = gate("merge", merged, *shards, cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert len(list(transcripts_dir(merged).glob("*.jsonl"))) == 3
    page_path = tmp_path / "page.html"
    p = gate("report", merged, "--html", page_path, cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    page = page_path.read_text()
    for said in ("config.txt now says mode=on", "report written to out/report.md"):
        assert said in page  # the oracle's output, from each run's transcript
    assert "3/3 valid runs passed" in page
