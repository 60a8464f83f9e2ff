"""mini-swe-agent installed by ``[agent] install`` with the documented script
(docs/mini-swe-agent/install.sh, as it is) in a task image — the Harbor sample's Python 3.13
slim stand-in, a real task image, and the offline base image, which has no venv and no CA store
— through ``gate run --sim`` on the docker sandbox, then a bundled task through the meter: its
episode ends the way mini-swe-agent ends one, and what its trajectory says it used is what the
meter billed, token for token.

The install reaches the package index the way this host's pip does (tests/helpers/mini.py
``pip_egress``: pip's configured index, the proxy variables, the CA file pip trusts, read at
test time and written into the script's environment), so an image without this host's proxy CA
installs too (without them, the base image's install fails: pip cannot verify the index).
Skips, saying why, only when no Docker engine (or the stand-in image) can be had; fails instead
under ``GATE_REQUIRE_MINI_SWE_AGENT=1`` or ``GATE_REQUIRE_DOCKER=1`` (``.ci/run`` sets both)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from tests.helpers.docker import IMAGE as BASE
from tests.helpers.docker import ours, standins_problem
from tests.helpers.mini import INSTALL, metered_exactly, pip_egress
from tests.helpers.process import gate, user_env

REPO = Path(__file__).resolve().parents[2]
#: a real task image (the Harbor sample's Python 3.13 slim stand-in: python3 with venv, pip),
#: and the offline base image (python3 only: no venv, no CA store at all, so the script installs
#: python3-venv with apt and pip trusts only the CA given to it)
IMAGES = ("gate-harbor-standin/python:3.13-slim-bookworm", BASE)
#: a bundled task whose solution starts with a bash-only line (the simulator's sh → bash turn)
TASK = "fix-slugify-whitespace"

#: the install (~750 MB of wheels) takes minutes on a loaded machine
pytestmark = [pytest.mark.docker, pytest.mark.slow, pytest.mark.timeout(1800)]


@pytest.fixture(params=IMAGES)
def image(request: pytest.FixtureRequest) -> str:
    """The task image, built when missing; without an engine the test skips saying why, or
    fails where mini-swe-agent or Docker is required."""
    why = standins_problem()
    if why:
        for required in ("GATE_REQUIRE_MINI_SWE_AGENT", "GATE_REQUIRE_DOCKER"):
            if os.environ.get(required) == "1":
                pytest.fail(f"{required}=1 but {why}")
        pytest.skip(f"mini-swe-agent's install in a container needs Docker: {why}")
    return str(request.param)


def test_mini_swe_agent_installed_in_a_task_image_runs_metered(tmp_path: Path,
                                                               image: str) -> None:
    script = INSTALL.read_text()
    assert "set -eu\n" in script
    (tmp_path / "install.sh").write_text(script.replace("set -eu\n", "set -eu\n" + pip_egress(),
                                                        1))
    shutil.copytree(REPO / "tasks" / TASK, tmp_path / "tasks" / TASK)
    cfg = tmp_path / "gate.toml"
    cfg.write_text('[agent]\nkind = "command"\nmodel = "claude-sonnet-5-5"\n'
                   'command = "mini-gate"\ninstall = "install.sh"\ninstall_timeout_sec = 1500\n'
                   'max_turns = 30\n'
                   f'[suite]\ntasks = "tasks"\nsandbox = "docker"\nimage = "{image}"\n')
    out = tmp_path / "r.json"
    p = gate("run", "--sim", "--config", cfg, "-k", "1", "-j", "1", "-o", out,
             base=user_env(), cwd=tmp_path, timeout=1700)
    runs = json.loads(out.read_text())["runs"] if out.exists() else []
    assert p.returncode == 0 and len(runs) == 1, (p.stderr[-3000:], runs)
    (run,) = runs
    assert run["status"] == "passed", (run.get("reason"), p.stderr[-3000:])
    assert run["install_s"] > 10  # the run waited for mini-swe-agent's install in its image
    said = metered_exactly(run)
    assert said["mini_swe_agent"]  # the installed mini-swe-agent's own version, recorded
    assert ours() == []
