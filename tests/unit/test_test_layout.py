"""The test suite's own layout, checked from its source so it stays so.

Tests sit in a folder by what they exercise (unit, execution, ci, sandbox, e2e). What several
modules share lives in ``tests/helpers/`` and is imported one way, ``tests.helpers.<module>``;
no test module imports another test module or a conftest (a module imported twice, under two
names, holds two copies of its state; a fixture imported from another module runs under the
importer's rules). A fixture several modules use is declared once, in the conftest.py of the
folder that holds them, and no test module declares a fixture of that name again.
"""

from __future__ import annotations

import ast
import sys
from importlib.machinery import PathFinder
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parents[1]
FOLDERS = {"unit", "execution", "ci", "sandbox", "e2e"}


def _ours(p: Path) -> bool:
    """Not a real task's own files (tests/fixtures: user code, run in containers, never here)."""
    return "node_modules" not in p.parts and "fixtures" not in p.relative_to(TESTS).parts


def _sources() -> list[Path]:
    return sorted(p for p in TESTS.rglob("*.py") if _ours(p))


def _imported(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, module) of every import, at any depth (a function's own import counts)."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found += [(node.lineno, node.module)]
            # `from tests import test_x` names the module in the imported names
            found += [(node.lineno, f"{node.module}.{a.name}") for a in node.names
                      if node.module == "tests"]
        elif isinstance(node, ast.ImportFrom):
            found += [(node.lineno, "." * node.level + (node.module or ""))]
    return found


def layout_problems(files: dict[Path, str], root: Path) -> list[str]:
    """Every way ``files`` (path → source, under ``root``) break the layout, one line each."""
    local = {"helpers"}
    # a helper's bare name, unless it is also an installed module's (tests.helpers.docker
    # beside the Docker SDK's ``docker``)
    outside = [e for e in sys.path if not Path(e or ".").resolve().is_relative_to(root)]
    local |= {p.stem for p in files if p.parent.name == "helpers" and p.stem != "__init__"
              and PathFinder.find_spec(p.stem, outside) is None}
    problems = []
    for path, text in files.items():
        rel = path.relative_to(root.parent)
        for line, module in _imported(ast.parse(text)):
            parts = module.split(".")
            if module.startswith("."):
                problems.append(f"{rel}:{line}: relative import {module}: use tests.helpers")
            elif any(p.startswith("test_") or p == "conftest" for p in parts):
                problems.append(f"{rel}:{line}: imports the test module {module}: move what it "
                                "needs into tests/helpers/ (a fixture: into a conftest.py)")
            elif parts[0] in local:
                problems.append(f"{rel}:{line}: imports {module} by its bare name: "
                                "import helpers as tests.helpers.<module>")
            elif parts[0] == "tests" and len(parts) > 1 and parts[1] != "helpers":
                problems.append(f"{rel}:{line}: imports {module}: only tests.helpers is shared")
        if path.name.startswith("test_") and (len(path.relative_to(root).parts) != 2
                                              or path.parent.name not in FOLDERS):
            problems.append(f"{rel}: a test module outside tests/{{{','.join(sorted(FOLDERS))}}}/")
    return problems + _redeclared_fixtures(files, root)


def _fixtures(text: str) -> set[str]:
    names = set()
    for node in ast.parse(text).body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            for dec in node.decorator_list:
                target = dec.func if isinstance(dec, ast.Call) else dec
                if ast.unparse(target) in ("pytest.fixture", "fixture"):
                    names.add(node.name)
    return names


def _redeclared_fixtures(files: dict[Path, str], root: Path) -> list[str]:
    """A test module declaring a fixture a conftest above it already declares (two fixtures
    of one name: which one a test gets depends on where it sits)."""
    conftests = {p.parent: _fixtures(t) for p, t in files.items() if p.name == "conftest.py"}
    problems = []
    for path, text in files.items():
        if not path.name.startswith("test_"):
            continue
        above = set().union(*(names for d, names in conftests.items()
                              if path.parent == d or d in path.parents))
        problems += [f"{path.relative_to(root.parent)}: declares the fixture {name}, which a "
                     "conftest.py above it declares" for name in sorted(_fixtures(text) & above)]
    return problems


def test_no_test_module_imports_another_and_helpers_are_imported_one_way() -> None:
    files = {p: p.read_text(encoding="utf-8") for p in _sources()}
    assert layout_problems(files, TESTS) == []


def test_every_test_module_sits_in_a_folder_and_nothing_is_left_at_the_top() -> None:
    assert sorted(p.name for p in TESTS.glob("*.py")) == ["conftest.py"]
    assert {p.parent.name for p in TESTS.rglob("test_*.py") if _ours(p)} == FOLDERS


@pytest.mark.parametrize(("where", "source", "complaint"), [
    ("ci/test_b.py", "from test_a import Project\n", "imports the test module"),
    ("ci/test_b.py", "from tests.ci.test_a import Project\n", "imports the test module"),
    ("ci/test_b.py", "def f():\n    from tests.conftest import REPO\n", "imports the test module"),
    ("ci/test_b.py", "import tests.ci.test_a\n", "imports the test module"),
    ("ci/test_b.py", "from tests import conftest\n", "imports the test module"),
    ("ci/test_b.py", "from helpers.ci import sh\n", "by its bare name"),
    ("ci/test_b.py", "from fake_github import FakeGitHub\n", "by its bare name"),
    ("ci/test_b.py", "from .test_a import sh\n", "relative import"),
    ("test_b.py", "import os\n", "outside tests/"),
    ("ci/test_b.py", "import pytest\n\n@pytest.fixture\ndef project():\n    pass\n",
     "declares the fixture project"),
])
def test_the_layout_check_catches_each_breach(tmp_path: Path, where: str, source: str,
                                              complaint: str) -> None:
    root = tmp_path / "tests"
    files = {root / "ci" / "test_a.py": "Project = object\n",
             root / "ci" / "conftest.py": "import pytest\n\n@pytest.fixture\ndef project():\n"
                                          "    pass\n",
             root / "helpers" / "ci.py": "def sh():\n    pass\n",
             root / "helpers" / "fake_github.py": "FakeGitHub = object\n",
             root / where: source}
    problems = layout_problems(files, root)
    assert any(complaint in p for p in problems), problems
    clean = {p: t for p, t in files.items() if p != root / where}
    clean[root / "ci" / "test_b.py"] = "from tests.helpers.ci import sh\n"
    assert layout_problems(clean, root) == []
