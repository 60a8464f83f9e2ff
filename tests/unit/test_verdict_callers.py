"""One verdict function: nothing outside ``gate.compare`` reaches a verdict with plain
``compare()``; every view is handed ``compare.judge``'s (through ``gate.ci.verdict``), so
``gate compare``, the PR comment and ``gate report``'s page say the same from the same files.

The one exception is main's A/A self-check (``gate/ci/_refresh.py``): it measures the
pass-rate test's own false blocks for the drift guard, so it must not pass through the guard
(or the skill-effect test) it feeds. tests/e2e/test_one_verdict.py checks the outcome through
the real CLI; this checks the source, so a new caller cannot quietly judge on its own.
"""

from __future__ import annotations

import ast
from pathlib import Path

GATE = Path(__file__).resolve().parents[2] / "gate"
# module → why it may call compare() itself
EXEMPT = {"gate/ci/_refresh.py": "main's A/A self-check, the drift guard's own input"}


def plain_compare_callers(files: dict[str, str]) -> list[str]:
    """``path:line`` of every module outside gate/compare that imports ``compare`` from
    ``gate.compare`` (or calls ``gate.compare.compare``)."""
    found = []
    for rel, text in files.items():
        if rel.startswith("gate/compare/") or rel in EXEMPT:
            continue
        for node in ast.walk(ast.parse(text)):
            imports = (isinstance(node, ast.ImportFrom) and node.module == "gate.compare"
                       and any(a.name == "compare" for a in node.names))
            calls = (isinstance(node, ast.Attribute) and node.attr == "compare"
                     and ast.unparse(node.value) == "gate.compare")
            if imports or calls:
                found.append(f"{rel}:{node.lineno}")
    return found


def test_no_view_judges_with_plain_compare() -> None:
    files = {str(p.relative_to(GATE.parent)): p.read_text(encoding="utf-8")
             for p in sorted(GATE.rglob("*.py"))}
    assert plain_compare_callers(files) == [], (
        "judge with gate.ci.verdict (compare.judge), as gate compare and gate ci do")


def test_the_check_sees_each_way_of_calling_compare() -> None:
    for source in ("from gate.compare import compare\n",
                   "def f():\n    from gate.compare import judge, compare\n",
                   "import gate.compare\nc = gate.compare.compare(a, b, s)\n"):
        assert plain_compare_callers({"gate/cli/_x.py": source}) != [], source
    assert plain_compare_callers({"gate/cli/_x.py": "from gate.compare import judge\n",
                                  "gate/compare/_judge.py": "from gate.compare import compare\n",
                                  "gate/ci/_refresh.py": "from gate.compare import compare\n"}
                                 ) == []
