"""Skills and the oracle on real Harbor tasks, through ``gate run`` / ``gate validate``.

Where a Harbor task's skills go (the agent user's own ``~/.claude/skills``, not the task's
working directory), that no skill is ever dropped silently (a skill whose ``name`` is not its
folder's, a ``SKILL.md`` elsewhere in the image), that ``--condition control`` leaves no skill
where a skill-loading agent looks, and that ``gate validate`` runs a multi-step task's per-step
oracles. Real tasks: tests/fixtures/harbor_real (its README names each source); the runs need
a Docker engine and the stand-in images (``.ci/harbor-images``), and skip without them.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.helpers.docker import engine_problem
from tests.helpers.process import gate

REPO = Path(__file__).resolve().parents[2]
SAMPLE = Path(__file__).resolve().parents[1] / "fixtures" / "harbor_real"


@pytest.fixture(scope="module")
def standins() -> None:
    why = engine_problem()
    if why is None:
        p = subprocess.run(["bash", str(REPO / ".ci" / "harbor-images")], capture_output=True,
                           text=True, timeout=1500)
        why = None if p.returncode == 0 else "the Harbor stand-in images could not be built"
    if why is not None:
        if os.environ.get("GATE_REQUIRE_DOCKER") == "1":
            pytest.fail(why)
        pytest.skip(why)


def _suite(tmp_path: Path, *names: str) -> Path:
    """A suite of copies of the real sample's tasks ``names``, and its gate.toml."""
    tasks = tmp_path / "tasks"
    for name in names:
        shutil.copytree(SAMPLE / name, tasks / name)
    cfg = tmp_path / "gate.toml"
    cfg.write_text(f'[suite]\ntasks = "{tasks}"\nsandbox = "docker"\n')
    return cfg


@pytest.mark.docker
@pytest.mark.slow
@pytest.mark.timeout(900)
@pytest.mark.usefixtures("standins")
def test_validate_runs_each_steps_own_oracle(tmp_path: Path) -> None:
    cfg = _suite(tmp_path, "cookbook-multi-step")
    p = gate("validate", "--config", cfg, cwd=tmp_path, timeout=800)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "no oracle" not in p.stdout, p.stdout
    assert "passes" in p.stdout and "1 sound, 0 broken" in p.stdout, p.stdout
    # a step without its own solution is named, and the oracle is not called broken
    (tmp_path / "tasks" / "cookbook-multi-step" / "steps" / "document" / "solution" /
     "solve.sh").unlink()
    p = gate("validate", "--config", cfg, cwd=tmp_path, timeout=800)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "for step 'document'" in " ".join(p.stdout.split()), p.stdout
    assert "1 sound (1 without an oracle), 0 broken" in p.stdout, p.stdout
