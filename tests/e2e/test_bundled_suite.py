"""The bundled example suite in tasks/: its shape, its hygiene, and that every task is sound."""

from __future__ import annotations

import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from gate.core.tasks import Suite, Task, load_suite
from gate.execution.validate import validate_suite

REPO = Path(__file__).resolve().parents[2]
TASKS = REPO / "tasks"
CONTEXT_TASK = "find-api-rate-limit"
CONTEXT_LOG = TASKS / CONTEXT_TASK / "starting" / "logs" / "diagnostic.log"
NEEDLE = "API_RATE_LIMIT=4375"

# a heredoc opener: <<EOF, <<'EOF', <<"EOF", <<-EOF
_HEREDOC = re.compile(r"<<-?\s*(['\"]?)([A-Za-z_][A-Za-z0-9_]*)\1")


@pytest.fixture(scope="module")
def suite() -> Suite:
    return load_suite(TASKS)


def _is_context_task(task: Task) -> bool:
    return (task.path / "metadata.json").is_file()


def test_suite_has_sixteen_tasks_and_loads_cleanly(suite: Suite) -> None:
    assert suite.problems == ()
    assert len(suite.tasks) == 16
    for task in suite.tasks:
        assert task.prompt.strip(), f"{task.id}: empty task.md"
        assert task.solution_script is not None, f"{task.id}: no solution/solve.sh"
        assert task.setup_script or task.starting_dir, f"{task.id}: no setup.sh or starting/"


def test_difficulty_mix(suite: Suite) -> None:
    context = [t for t in suite.tasks if _is_context_task(t)]
    assert [t.id for t in context] == [CONTEXT_TASK]
    ctx = context[0]
    # the context task is in the effectiveness-benchmark layout, difficulty from metadata.json
    assert ctx.starting_dir is not None
    assert (ctx.path / "README.md").is_file()
    for key in ("id", "slug", "target_skill", "irrelevant_skill", "category", "difficulty",
                "notes"):
        assert ctx.metadata.get(key), f"metadata.json lacks {key}"
    assert ctx.metadata["slug"] == CONTEXT_TASK

    regular = Counter(t.meta.difficulty for t in suite.tasks if not _is_context_task(t))
    assert regular == {"easy": 6, "medium": 6, "hard": 3}
    overall = Counter(t.difficulty for t in suite.tasks)
    expected = Counter({"easy": 6, "medium": 6, "hard": 3})
    expected[ctx.metadata["difficulty"]] += 1
    assert overall == expected


def test_both_workspace_layouts_are_used(suite: Suite) -> None:
    with_setup = [t.id for t in suite.tasks if t.setup_script]
    with_starting = [t.id for t in suite.tasks if t.starting_dir]
    assert len(with_setup) >= 4
    assert len(with_starting) >= 4


def test_solutions_never_read_the_task_directory(suite: Suite) -> None:
    for task in suite.tasks:
        assert task.solution_script is not None
        assert "TASK_DIR" not in task.solution_script.read_text(), task.id


def test_solution_steps_are_self_contained_chunks(suite: Suite) -> None:
    """solve.sh is replayed step by step (chunks between blank lines): no heredoc may span a
    blank line, and every chunk must be valid bash on its own."""
    for task in suite.tasks:
        assert task.solution_script is not None
        chunks = [c for c in re.split(r"\n\s*\n", task.solution_script.read_text()) if c.strip()]
        assert chunks, task.id
        for chunk in chunks:
            lines = chunk.splitlines()
            for match in _HEREDOC.finditer(chunk):
                assert match.group(2) in (ln.strip() for ln in lines), (
                    f"{task.id}: heredoc {match.group(2)} is not closed within its step")
            res = subprocess.run(["bash", "-n"], input=chunk, capture_output=True, text=True)
            assert res.returncode == 0 and not res.stderr, f"{task.id}: {res.stderr}"


def test_verify_scripts_fail_loudly(suite: Suite) -> None:
    for task in suite.tasks:
        body = task.verify_script.read_text()
        assert "|| true" not in body, task.id
        assert "set -euo pipefail" in body, task.id


def test_context_log_hides_exactly_one_needle() -> None:
    text = CONTEXT_LOG.read_text(encoding="utf-8")
    lines = text.splitlines()
    assert len(lines) >= 4500
    assert text.count(NEEDLE) == 1
    assert text.count("4375") == 1
    assert [ln for ln in lines if ln.startswith("API_RATE_LIMIT=")] == [NEEDLE]
    assert lines.index(NEEDLE) > len(lines) // 2, "the needle should be buried deep"
    # decoys that must not be mistaken for the answer are still there
    assert "API_RATE_LIMIT_BURST=" in text
    assert "# API_RATE_LIMIT=" in text


def test_context_log_is_reproducible() -> None:
    gen = TASKS / CONTEXT_TASK / "tools" / "gen_log.py"
    res = subprocess.run([sys.executable, str(gen)], capture_output=True, text=True, check=True)
    assert res.stdout == CONTEXT_LOG.read_text(encoding="utf-8")


@pytest.mark.slow
def test_every_task_is_sound(suite: Suite) -> None:
    checks = validate_suite(suite)
    assert len(checks) == 16
    broken = {c.task: c.problem for c in checks if not c.sound}
    assert broken == {}
    assert all(c.untouched == "fails" and c.oracle == "passes" for c in checks)
