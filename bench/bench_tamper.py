"""False flags of the tamper check (gate/sandbox/_tamper.py) on the real Harbor sample.

Runs every task of tests/fixtures/harbor_real through ``gate run`` on Docker (the stand-in
images of ``.ci/harbor-images``; ``[suite].reward_unprotected`` as the sample's tests set it)
with the oracle, and with ``--claude-code`` also Claude Code installed by the documented
script (docs/claude-code/install.sh, the install layer checked too) on the simulator, under a
seed where the simulated model solves each run (it runs the task's own solution through Claude
Code's tools: ``apt-get install``, ``pip install`` and services included). Prints, per task
and agent, the runs failed as tampering (each a false flag: nothing here tampers) and their
reasons; the last line is the total. The bar is zero.

    python bench/bench_tamper.py [--claude-code] [--tasks a,b] [-k 1] [-j 4]

``--claude-code`` needs npm's registry from a container: ``NPM_CONFIG_REGISTRY`` and, behind
a TLS proxy, ``NODE_EXTRA_CA_CERTS`` (the host's CA file) are passed to the install as
tests/sandbox/test_agent_install.py passes them.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SAMPLE = REPO / "tests" / "fixtures" / "harbor_real"
UNPROTECTED = ["tb2-nginx-request-logging", "tb2-pypi-server"]  # as test_harbor_real.py
MODEL = "claude-sonnet-5-5"


def _suite(tmp: Path, tasks: list[str]) -> Path:
    if not tasks:
        return SAMPLE
    suite = tmp / "suite"
    for t in tasks:
        shutil.copytree(SAMPLE / t, suite / t)
    return suite


def _claude_code(tmp: Path) -> str:
    """The [agent] table of Claude Code installed by the documented script, this host's
    registry and CA passed as the install test passes them."""
    registry = subprocess.run(["npm", "config", "get", "registry"], capture_output=True,
                              text=True).stdout.strip().rstrip("/")
    prefix = f"export NPM_CONFIG_REGISTRY={registry}\n"
    ca = os.environ.get("NODE_EXTRA_CA_CERTS", "")
    if ca and Path(ca).is_file():
        prefix += ("mkdir -p /usr/local/share/gate-test && cat > /usr/local/share/gate-test/"
                   f"ca.crt <<'CA'\n{Path(ca).read_text().strip()}\nCA\n"
                   "export NODE_EXTRA_CA_CERTS=/usr/local/share/gate-test/ca.crt\n")
    script = (REPO / "docs" / "claude-code" / "install.sh").read_text()
    (tmp / "install.sh").write_text(script.replace("set -eu\n", "set -eu\n" + prefix, 1))
    guide = (REPO / "docs" / "harbor-migration.md").read_text()
    m = re.search(r"^command = '(.*claude .*)'$", guide, re.MULTILINE)
    assert m, "docs/harbor-migration.md has no Claude Code command line"
    return (f"[agent]\nkind = \"command\"\ncommand = {json.dumps(m.group(1))}\n"
            "install = \"install.sh\"\ninstall_timeout_sec = 1800\n")


def _seed(suite: Path, k: int) -> int:
    from gate.core.tasks import load_suite
    from gate.sim import decide_outcome

    tasks = load_suite(suite).tasks
    return next(s for s in range(5000) if all(
        decide_outcome(s, MODEL, t.id, t.difficulty, r) == "solve"
        for t in tasks for r in range(k)))


def measure(tmp: Path, suite: Path, agent: str, k: int, jobs: int) -> list[dict]:
    cfg = tmp / f"{agent}.toml"
    table = _claude_code(tmp) if agent == "claude-code" else ""
    cfg.write_text(f"{table}[suite]\ntasks = \"{suite}\"\nsandbox = \"docker\"\n"
                   f"reward_unprotected = {json.dumps(UNPROTECTED)}\n")
    out = tmp / f"{agent}.json"
    args = ["--agent", "oracle"] if agent == "oracle" else [
        "--sim", "--seed", str(_seed(suite, k))]
    subprocess.run([sys.executable, "-m", "gate", "run", "--config", str(cfg), "-k", str(k),
                    "-j", str(jobs), "-o", str(out), *args], cwd=tmp, timeout=7200)
    return json.loads(out.read_text())["runs"] if out.exists() else []


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--claude-code", action="store_true")
    ap.add_argument("--tasks", default="", help="comma-separated task ids (default: all)")
    ap.add_argument("-k", type=int, default=1)
    ap.add_argument("-j", type=int, default=4)
    opts = ap.parse_args()
    subprocess.run(["bash", str(REPO / ".ci" / "harbor-images")], check=True,
                   capture_output=True)
    total = 0
    with tempfile.TemporaryDirectory(prefix="bench-tamper-") as d:
        tmp = Path(d)
        suite = _suite(tmp, [t for t in opts.tasks.split(",") if t])
        for agent in ["oracle", *(["claude-code"] if opts.claude_code else [])]:
            runs = measure(tmp, suite, agent, opts.k, opts.j)
            for task in sorted({r["task"] for r in runs}):
                mine = [r for r in runs if r["task"] == task]
                flagged = [r for r in mine if (r["reason"] or "").startswith("tampering")]
                total += len(flagged)
                statuses = ",".join(r["status"] for r in mine)
                print(f"{agent:12} {task:38} runs {len(mine)} ({statuses}) "
                      f"false flags {len(flagged)}")
                for r in flagged:
                    print(f"    {r['reason'][:400]}")
    print(f"false flags in all: {total}")
    return 0 if total == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
