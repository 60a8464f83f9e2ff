"""A ``SKILL.md`` the agent's own ``[agent] install`` puts in the image (a pip package's bundled
skills under ``site-packages``) is the agent's, never named as a stray skill of the task's
image in every run's notes; one the task's image holds elsewhere still is. Through ``gate run``
on a real Harbor task and a real install (the offline base image has no pip: the script puts
the package's files where pip puts them)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers.harbor import DOCKERFILE, harbor_task
from tests.helpers.process import gate

PACKAGE = "/usr/local/lib/python3.11/site-packages/my_agent/skills/review"
INSTALL = f"""#!/bin/sh
set -e
mkdir -p {PACKAGE}
printf -- '---\\nname: review\\ndescription: Review code.\\n---\\nReview it.\\n' \\
  > {PACKAGE}/SKILL.md
"""
VENDORED = ("RUN mkdir -p /opt/vendor/tool && printf -- '---\\nname: tool\\ndescription: A "
            "tool.\\n---\\nUse it.\\n' > /opt/vendor/tool/SKILL.md\n")


@pytest.mark.docker
@pytest.mark.slow
@pytest.mark.usefixtures("engine")
def test_the_agents_own_install_is_never_a_stray_skill(tmp_path: Path) -> None:
    suite = tmp_path / "suite"
    harbor_task(suite, "count", dockerfile=DOCKERFILE + VENDORED)
    (tmp_path / "install.sh").write_text(INSTALL)
    cfg = tmp_path / "gate.toml"
    cfg.write_text(f'[agent]\nkind = "command"\ncommand = "ls {PACKAGE} >&2"\n'
                   f'install = "install.sh"\n[suite]\ntasks = "{suite}"\nsandbox = "docker"\n')
    out = tmp_path / "r.json"
    p = gate("run", "--config", cfg, "--sim", "-k", "1", "-o", out, timeout=600, cwd=tmp_path)
    assert out.exists(), p.stdout + p.stderr
    (run,) = json.loads(out.read_text())["runs"]
    assert run["status"] != "error", run["reason"]
    events = [json.loads(ln) for ln in Path(run["transcript"]).read_text().splitlines()]
    # the install did put its skill in the image the agent ran in
    assert any("SKILL.md" in e.get("stderr", "") for e in events if e["type"] == "command")
    notes = " ".join((run["notes"] or "").split())
    assert "SKILL.md outside the skill folders, left as the image has it (no condition " \
        "switches it): /opt/vendor/tool/SKILL.md" in notes, notes  # the task's: named
    assert "site-packages" not in notes, notes  # the agent's own: not a stray
