"""mini-swe-agent, a second real agent CLI, as a `command` agent: installed by the documented
script (docs/mini-swe-agent/install.sh, cached: tests/helpers/mini.py), run by `gate run --sim`
with the documented command line, metered by the gate, its episodes ended the way it expects
(its submit command, played by the simulator: gate/sim/_submit.py) and its shell's refusals
of bash syntax answered as a model answers them (gate/sim/_shell.py).

Skips when the install cannot be made (no package index), or fails under
``GATE_REQUIRE_MINI_SWE_AGENT=1`` (set by ``.ci/run``, which installs it).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.helpers.mini import installed, metered_exactly
from tests.helpers.process import gate, user_env

REPO = Path(__file__).resolve().parents[2]
#: an answer judged from the final message, a fix, and a fix whose solution starts with a
#: bash-only line that mini-swe-agent's /bin/sh refuses (gate/sim/_shell.py)
TASKS = ("find-api-rate-limit", "add-dry-run-flag", "fix-slugify-whitespace")

#: the first install (once per version of the script) takes minutes on a loaded machine
pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]


@pytest.fixture(scope="module")
def mini_gate() -> Path:
    wrapper, why = installed()
    if wrapper is None:
        if os.environ.get("GATE_REQUIRE_MINI_SWE_AGENT") == "1":
            pytest.fail(f"GATE_REQUIRE_MINI_SWE_AGENT=1 but {why}")
        pytest.skip(f"mini-swe-agent not installed: {why}")
    return wrapper


def _config(tmp_path: Path, command: str) -> Path:
    cfg = tmp_path / "gate.toml"
    cfg.write_text(f'[agent]\nkind = "command"\nmodel = "claude-sonnet-5-5"\n'
                   f"command = '{command}'\nmax_turns = 30\n"
                   f'[suite]\ntasks = "{REPO / "tasks"}"\nreplications = 1\njobs = 2\n')
    return cfg


def test_mini_swe_agent_runs_metered_and_its_episodes_end(tmp_path: Path,
                                                          mini_gate: Path) -> None:
    out = tmp_path / "r.json"
    cfg = _config(tmp_path, f'"{mini_gate}"')
    task_args = [a for t in TASKS for a in ("--task", t)]
    p = gate("run", "--sim", "--config", cfg, "-o", out, *task_args, base=user_env(),
             timeout=600)
    assert p.returncode == 0, p.stderr[-3000:]
    runs = {r["task"]: r for r in json.loads(out.read_text())["runs"]}
    assert sorted(runs) == sorted(TASKS)
    for task, run in runs.items():
        # the verdict is computed: the task's verifier judged what the agent left (for
        # find-api-rate-limit, the final message mini-gate took from the trajectory)
        assert run["status"] == "passed", (task, run.get("reason"))
        # the episode ended with its submit command; metered token for token
        metered_exactly(run)
