"""What the agent plants can never judge it: the bundled suite's and ``gate init``'s verifiers
decide through gatecheck.py, which compares, outside the checked code's process, values the
checked code hands back (docs/tasks.md, "Writing tasks").

Through the real CLI: ``gate run`` with a command agent (tests/helpers/plant.py) that plants a
``unittest.py`` and import-time hooks that exit 0, print what the old verifiers looked for,
patch ``unittest``, or forge the shipped tests' run; none passes a task. The real fix does.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from gate.setup.init import EXAMPLE_TASK
from tests.helpers.plant import HOOKS
from tests.helpers.process import gate, user_env

REPO = Path(__file__).resolve().parents[2]
TASKS = REPO / "tasks"
PLANT = REPO / "tests" / "helpers" / "plant.py"
TEMPLATE = REPO / "gate" / "templates" / "init" / "task" / "gatecheck.py"


def _attack(tmp_path: Path, tasks: Path, variant: str, *only: str) -> dict[str, str]:
    """Each task's status after one run of the planting agent (``variant``)."""
    cfg = tmp_path / "attack.toml"
    cfg.write_text(f'[agent]\nkind = "command"\ncommand = "{sys.executable} {PLANT} {variant}"\n'
                   f'[suite]\ntasks = "{tasks}"\n')
    out = tmp_path / f"{variant}.json"
    picked = [arg for task in only for arg in ("--task", task)]
    p = gate("run", "--config", cfg, "--sim", "-k", "1", "-o", out, *picked, cwd=tmp_path,
             base=user_env())
    assert p.returncode == 0, p.stdout + p.stderr
    runs = json.loads(out.read_text())["runs"]
    return {r["task"]: f"{r['status']}: {r['reason']}" for r in runs}


@pytest.mark.slow
@pytest.mark.parametrize("variant", sorted(HOOKS))
def test_planted_code_passes_no_bundled_task(tmp_path: Path, variant: str) -> None:
    statuses = _attack(tmp_path, TASKS, variant)
    assert len(statuses) == 16
    assert {t: s for t, s in statuses.items() if not s.startswith("failed")} == {}


@pytest.mark.slow
def test_fix_version_compare_passes_with_its_fix(tmp_path: Path) -> None:
    task = "fix-version-compare"
    statuses = _attack(tmp_path, TASKS, task, task)
    assert statuses[task].startswith("passed"), statuses


@pytest.mark.slow
@pytest.mark.parametrize("variant", [*sorted(HOOKS), "fix-wordcount"])
def test_gate_init_example_is_judged_outside_the_checked_code(tmp_path: Path,
                                                             variant: str) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    p = gate("init", cwd=repo, base=user_env())
    assert p.returncode == 0, p.stderr
    statuses = _attack(tmp_path, repo / "tasks", variant)
    want = "passed" if variant == "fix-wordcount" else "failed"
    assert statuses[EXAMPLE_TASK].startswith(want), statuses


def test_every_gatecheck_copy_is_gate_inits(tmp_path: Path) -> None:
    """A verifier sees only its task directory, so each bundled task carries gatecheck.py:
    one source (what ``gate init`` writes), copies kept identical."""
    copies = sorted(TASKS.glob("*/gatecheck.py"))
    assert len(copies) == 14
    assert [c for c in copies if c.read_bytes() != TEMPLATE.read_bytes()] == []


def test_no_bundled_verifier_decides_on_the_checked_codes_exit_status() -> None:
    """Python that imports the workspace runs only in gatecheck.py's worker: no heredoc or -c
    script and no ``-m unittest`` whose exit status or output decides."""
    for verify in [*TASKS.glob("*/verify.sh"), TEMPLATE.with_name("verify.sh")]:
        body = verify.read_text()
        for banned in ("python3 - ", "python3 -c", "-m unittest"):
            assert banned not in body, (verify, banned)
        if "gatecheck.py" in body:
            assert 'python3 -I -S "$TASK_DIR/gatecheck.py"' in body, verify


def _gatecheck(workspace: Path, checks: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-I", "-S", TEMPLATE, "-"], input=checks, text=True,
                          capture_output=True, cwd=workspace, timeout=60)


def test_only_plain_data_comes_back(tmp_path: Path) -> None:
    """An object that equals everything (or a str subclass that does) is refused, not
    compared: the worker hands back plain data by exact type."""
    (tmp_path / "m.py").write_text(
        "class Any:\n    def __eq__(self, other):\n        return True\n"
        "class Str(str):\n    def __eq__(self, other):\n        return True\n"
        "anything, text = Any(), Str('x')\n")
    for expr in ("m.anything", "m.text", "[m.text]"):
        p = _gatecheck(tmp_path, f"do('import m')\nexpect({expr!r}, 'y')\n")
        assert p.returncode == 1, p.stderr
        assert "not plain data" in p.stderr.splitlines()[-1], p.stderr
    p = _gatecheck(tmp_path, "do('import m')\nexpect('m.text + \"\"', 'x')\n")
    assert p.returncode == 0 and p.stderr.splitlines()[-1] == "gatecheck: 1 checks passed"


def test_gatecheck_refuses_to_run_where_the_workspace_could_be_imported(tmp_path: Path) -> None:
    """Without -I -S the checks' own process would have the current directory (the
    workspace) or site-packages on its path: it refuses (exit 2), so such a verify fails."""
    (tmp_path / "json.py").write_text("import os\nos._exit(0)\n")
    for flags in ([], ["-I"], ["-S"]):
        p = subprocess.run([sys.executable, *flags, TEMPLATE, "-"], input="check(True, '')\n",
                           text=True, capture_output=True, cwd=tmp_path, timeout=60)
        assert p.returncode == 2 and "usage: python3 -I -S" in p.stderr, (flags, p)
