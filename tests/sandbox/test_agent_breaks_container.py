"""What a root agent breaks in its own container is its failure, never infra.

The gate's own steps in a Harbor task's container run after the agent phase (the phase
boundary's ``sh -c`` listing and ``kill -STOP``, the tests' upload, the verifier). An agent
that renamed ``/bin/sh`` or stopped the container's pid 1 made the next of them fail, and the
run was recorded as an infra error: it dropped out of the comparison, and a task that went
from 6/6 to 1/6 read "No regression" (one that removed ``awk`` blinded the listing, and
passed). Through ``gate run`` on a real container: the run is failed,
its reason naming the gate's step; a task the agent leaves alone passes beside them (the
verifier writes 1 whatever the agent did, so only the break can fail a run).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers.docker import IMAGE, ours
from tests.helpers.harbor import harbor_task
from tests.helpers.process import gate

#: the verifier passes whatever the agent did: a failed run is the break's doing only
PASS = "#!/bin/bash\necho 1 > /logs/verifier/reward.txt\n"
BREAKS = {
    "honest": "true",
    # the gate's own steps run `sh -c ...` as root
    "no-sh": "mv /bin/sh /bin/sh.x",
    # ... or a `sh` that runs nothing, says nothing and exits 0: every answer the gate reads
    # through it comes back empty (never whole), which is the container's doing, not infra
    "mute-sh": "printf '#!/bin/bash\\nexit 0\\n' > /bin/sh.new && chmod 755 /bin/sh.new "
               "&& mv /bin/sh.new /bin/sh",
    # the phase boundary's listing of processes and sockets ends in awk: it cannot be trusted
    "no-awk": "rm -f \"$(command -v awk)\"",
    # pid 1 (the container's keep-alive) ends: the container stops under the gate
    "pid1": "kill -TERM 1; kill -KILL 1; sleep 5",
}


@pytest.mark.docker
@pytest.mark.slow
@pytest.mark.usefixtures("engine")
def test_an_agent_that_breaks_its_container_fails_its_run_not_as_infra(tmp_path: Path) -> None:
    suite = tmp_path / "suite"
    for name, attack in BREAKS.items():
        d = harbor_task(suite, name, test=PASS,
                        dockerfile=f"FROM {IMAGE}\nWORKDIR /app\nCOPY attack.sh /opt/attack.sh\n")
        (d / "environment" / "attack.sh").write_text(f"#!/bin/bash\n{attack}\n")
    cfg = tmp_path / "gate.toml"
    cfg.write_text('[agent]\nkind = "command"\ncommand = "bash /opt/attack.sh"\n'
                   f'[suite]\ntasks = "{suite}"\n')
    out = tmp_path / "r.json"
    p = gate("run", "--config", cfg, "-k", "1", "-j", "2", "-o", out, "--sim", timeout=600)
    assert out.exists(), p.stdout + p.stderr
    runs = {r["task"]: r for r in json.loads(out.read_text())["runs"]}
    assert runs["honest"]["status"] == "passed", runs["honest"]
    for name in ("no-sh", "mute-sh", "no-awk", "pid1"):
        run = runs[name]
        assert run["status"] == "failed", (name, run["status"], run["reason"])
        assert run["reason"].startswith("the gate's "), (name, run["reason"])
        assert "step failed after the agent phase" in run["reason"], (name, run["reason"])
    for name in ("no-sh", "mute-sh", "no-awk"):
        assert "phase-boundary" in runs[name]["reason"], runs[name]["reason"]
    assert "the container stopped" in runs["pid1"]["reason"], runs["pid1"]["reason"]
    assert ours() == []
