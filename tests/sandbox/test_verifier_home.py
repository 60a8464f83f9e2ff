"""A gate-format task's verifier gets a ``HOME`` of its own: what the agent left in ``~`` (a
user-site ``.pth`` that exits 0 at every ``python3`` start) never judges it, in the local and
the docker sandbox, through ``gate run`` as a user runs it. On the shared ``HOME`` a
do-nothing agent passed every run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers.docker import IMAGE, ours
from tests.helpers.process import gate
from tests.helpers.suites import write_task

# the verifier asks python3 whether the work is there; python3 starts by reading the user site
VERIFY = ("set -euo pipefail\n"
          "python3 -c 'import os, sys; sys.exit(0 if os.path.exists(\"done.txt\") else 1)'\n")
PLANT = ('d=$(python3 -m site --user-site) && mkdir -p "$d" && '
         "echo 'import os; os._exit(0)' > \"$d/zz-gate-test.pth\"")


def _runs(tmp_path: Path, sandbox: str, command: str, name: str) -> list[dict]:
    suite = tmp_path / "suite"
    if not suite.exists():
        toml = f'[environment]\nimage = "{IMAGE}"\n' if sandbox == "docker" else None
        write_task(suite, "judged", verify=VERIFY, solve="touch done.txt\n", toml=toml)
    cfg = tmp_path / f"{name}.toml"
    cfg.write_text(f'[agent]\nkind = "command"\ncommand = {json.dumps(command)}\n'
                   f'[suite]\ntasks = "{suite}"\nsandbox = "{sandbox}"\n')
    out = tmp_path / f"{name}.json"
    p = gate("run", "--config", cfg, "--sim", "-k", "2", "-j", "2", "-o", out,
             timeout=600, cwd=tmp_path)
    assert out.is_file(), p.stderr
    return json.loads(out.read_text())["runs"]


def _check(tmp_path: Path, sandbox: str) -> None:
    honest = _runs(tmp_path, sandbox, f"{PLANT} && touch done.txt", "honest")
    assert [r["status"] for r in honest] == ["passed"] * 2, honest
    planted = _runs(tmp_path, sandbox, PLANT, "planted")
    assert [r["status"] for r in planted] == ["failed"] * 2, planted


@pytest.mark.slow
def test_a_user_site_hook_in_the_agents_home_never_passes_the_local_verifier(
        tmp_path: Path) -> None:
    _check(tmp_path, "local")


@pytest.mark.docker
@pytest.mark.slow
@pytest.mark.usefixtures("engine")
def test_a_user_site_hook_in_the_agents_home_never_passes_the_docker_verifier(
        tmp_path: Path) -> None:
    _check(tmp_path, "docker")
    assert ours() == []
