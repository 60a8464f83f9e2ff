"""What a command agent gets from the gate is documented (docs/agents.md, issue 41 item 6):
every variable of the gate's own a real command agent sees, run by `gate run --sim`, is named
in the page's table."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.helpers.process import gate, user_env
from tests.helpers.suites import write_task

REPO = Path(__file__).resolve().parents[2]
#: the gate's own names: its variables, the model's, and the sandbox's
OWN = re.compile(r"^(GATE_\w+|ANTHROPIC_\w+|NO_PROXY|no_proxy|WORK_DIR|HOME|TMPDIR|"
                 r"PYTHONDONTWRITEBYTECODE)$")


@pytest.mark.slow
def test_every_variable_a_command_agent_gets_is_in_the_docs(tmp_path: Path) -> None:
    write_task(tmp_path / "suite", "env")
    dump = tmp_path / "agent.env"
    cfg = tmp_path / "gate.toml"
    cfg.write_text(f'[agent]\nkind = "command"\nmodel = "claude-sonnet-5-5"\n'
                   f'command = "env > {dump}; echo hi > hello.txt"\n'
                   f'[suite]\ntasks = "{tmp_path / "suite"}"\nreplications = 1\n')
    p = gate("run", "--sim", "--config", cfg, "-o", tmp_path / "r.json",
             base=user_env(PWD=str(tmp_path)))
    assert p.returncode == 0, p.stderr
    got = {line.split("=", 1)[0] for line in dump.read_text().splitlines() if "=" in line}
    own = sorted(n for n in got if OWN.match(n))
    assert {"ANTHROPIC_MODEL", "ANTHROPIC_BASE_URL", "GATE_PROMPT_FILE"} <= set(own)
    table = (REPO / "docs" / "agents.md").read_text(encoding="utf-8")
    rows = "\n".join(ln for ln in table.splitlines() if ln.startswith("| `"))
    assert [n for n in own if f"`{n}`" not in rows] == []
