"""Infra errors that rise on one task are named in the verdict, never a silent pass.

A suite-wide infra rate under ``max_infra_rate`` and a one-sided Fisher test over the whole
arm let one task go from 6/6 passed to 1 passed + 5 infra errors unseen: its one valid run
passed, so it "did not change", and ``gate compare`` said "No regression" with exit 0. Through
``gate run`` (a task whose ``setup.sh`` fails, an infra error, in all but its first run of the
PR's) and ``gate compare`` in every format: the verdict is inconclusive (exit 3) and names the
task and its infra errors in the headline, the text table's first lines and the comment's.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.helpers.process import gate as run_gate
from tests.helpers.process import user_env
from tests.helpers.suites import write_sim_task

pytestmark = pytest.mark.slow

TASKS = 10
REPS = 6


def gate(cwd: Path, *args: str | Path) -> subprocess.CompletedProcess[str]:
    return run_gate(*args, cwd=cwd, base=user_env())


def _suite(root: Path, flag: Path) -> Path:
    """``TASKS`` tasks the command agent passes; ``t0``'s setup fails (infra) on every run
    but the first while ``flag`` exists."""
    suite = root / "suite"
    for i in range(TASKS):
        setup = (f'if [ -e {flag} ]; then mkdir {flag}/first 2>/dev/null || {{ echo "the '
                 f'fixture service is down" >&2; exit 1; }}; fi\n') if i == 0 else None
        write_sim_task(suite, f"t{i}", prompt="Do nothing.\n", verify="true\n",
                       solve="true\n", setup=setup)
    return suite


@pytest.fixture(scope="module")
def arms(tmp_path_factory: pytest.TempPathFactory) -> Path:
    repo = tmp_path_factory.mktemp("infra-task")
    flag = repo / "broken"
    (repo / "gate.toml").write_text('[agent]\nkind = "command"\ncommand = "true"\n'
                                    f'[suite]\ntasks = "{_suite(repo, flag)}"\n')
    for name in ("base", "pr"):
        if name == "pr":
            flag.mkdir()
        p = gate(repo, "run", "--sim", "-k", str(REPS), "-j", "2", "-o", f"{name}.json")
        assert (repo / f"{name}.json").exists(), p.stdout + p.stderr
    runs = json.loads((repo / "pr.json").read_text())["runs"]
    t0 = sorted(r["status"] for r in runs if r["task"] == "t0")
    assert t0 == ["error"] * (REPS - 1) + ["passed"], t0
    assert sum(r["status"] == "error" for r in runs) == REPS - 1
    return repo


def test_a_task_gone_to_infra_errors_is_named_and_never_a_pass(arms: Path) -> None:
    p = gate(arms, "compare", "base.json", "pr.json", "--format", "json")
    assert p.returncode == 3, (p.returncode, p.stdout[:2000], p.stderr)
    c = json.loads(p.stdout)
    assert c["verdict"] == "inconclusive"
    assert "t0" in c["headline"] and "5 infra errors" in c["headline"], c["headline"]
    text = gate(arms, "compare", "base.json", "pr.json")
    assert text.returncode == 3
    head = "\n".join(text.stdout.splitlines()[:3])
    assert "t0" in head and "5 infra errors" in head, text.stdout
    md = gate(arms, "compare", "base.json", "pr.json", "--format", "markdown")
    assert md.returncode == 3
    first = "\n".join(md.stdout.splitlines()[:15])  # the comment's first screen
    assert "t0" in first and "5 infra errors" in first, md.stdout
