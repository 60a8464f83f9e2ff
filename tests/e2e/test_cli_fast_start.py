"""A fast start: a config error of `gate run`, `gate compare` or `gate ci` loads nothing heavy
(no statistics, SDK, docker, jinja2, rich, runner), and the credentials leave the process's
visible environment before any command module is imported (in place; the re-exec fallback keeps
the key). Checked by what the process imported, not by a stopwatch
(bench/bench_scale.py's `startup` section measures the CPU time)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

HEAVY = ("scipy", "numpy", "anthropic", "docker", "jinja2", "rich", "requests",
         "gate.execution.run", "gate.compare", "gate.core.results", "gate.agents", "gate.ci._run",
         "pydantic", "gate.core.config")  # a missing config file is said before the models load

PROBE = """\
import sys
from gate.cli import main
try:
    main(sys.argv[1:], prog_name="gate")
except SystemExit as exc:
    print("EXIT", exc.code)
print("HEAVY", sorted(m for m in {heavy!r} if m in sys.modules))
"""


def _env() -> dict[str, str]:
    """No credential-looking variable at all."""
    return {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG", "TMPDIR")}


@pytest.mark.parametrize("argv", [
    ["run", "--config", "missing.toml"],
    ["run", "--config", "missing.toml", "-k", "2", "--shard", "1/2", "--max-cost", "1"],
    ["compare", "--config", "missing.toml", "baseline.json", "results.json"],
    ["ci", "--config", "missing.toml"],
    ["baseline", "--config", "missing.toml", "results.json"],
])
def test_a_config_error_imports_nothing_heavy(argv: list[str], tmp_path: Path) -> None:
    p = subprocess.run([sys.executable, "-c", PROBE.format(heavy=HEAVY), *argv], cwd=tmp_path,
                       capture_output=True, text=True, timeout=60, env=_env())
    assert "missing.toml: config file not found" in p.stderr, p.stderr
    assert "EXIT 2" in p.stdout, p.stdout + p.stderr
    assert "HEAVY []" in p.stdout, p.stdout + p.stderr


def _imported(argv: list[str], cwd: Path, **env: str) -> tuple[subprocess.CompletedProcess[str],
                                                              set[str]]:
    """Run ``python -X importtime -m gate ARGV``: the modules the *first* process imported
    (no credential is set, so there is no re-exec to lose the flag across)."""
    p = subprocess.run([sys.executable, "-X", "importtime", "-m", "gate", *argv], cwd=cwd,
                       capture_output=True, text=True, timeout=60, env={**_env(), **env})
    mods = {line.split("|")[-1].strip() for line in p.stderr.splitlines()
            if line.startswith("import time:") and "|" in line}
    return p, mods


def test_without_a_credential_the_config_models_load_only_when_needed(tmp_path: Path) -> None:
    # a config file that is not there is said before the configuration's models (pydantic)
    p, mods = _imported(["run", "--config", "missing.toml"], tmp_path)
    assert p.returncode == 2 and "missing.toml: config file not found" in p.stderr
    assert "gate.cli._options" in mods and not mods & {"gate.core.config", "pydantic"}
    # one that is there but wrong needs them to say what is wrong
    (tmp_path / "bad.toml").write_text('[suite]\nreplications = "many"\n')
    p, mods = _imported(["run", "--config", "bad.toml"], tmp_path)
    assert p.returncode == 2 and "bad.toml" in p.stderr and "replications" in p.stderr
    assert {"gate.core.config", "pydantic"} <= mods


KEY, TOKEN = "sk-ant-fast-start-secret-123", "ghs_faststartSECRET4567"

# `python -m gate ARGV` as runpy runs it, with a watch on the imports: the environment block
# (/proc/self/environ, what any process of the user can read) as it was when the CLI itself
# (click) or a command module first loaded. Lines after the gate returns print only if the
# process did not re-execute itself.
WATCHED = """import os, runpy, sys
WATCH = {"click", "gate.cli", "gate.cli._options", "gate.core.config", "pydantic"}
seen = []
class Watch:
    def find_spec(self, name, path=None, target=None):
        if name in WATCH and not seen:
            with open("/proc/self/environ", "rb") as fh:
                seen.append((name, fh.read()))
        return None
sys.meta_path.insert(0, Watch())
if sys.argv[1] == "fallback":  # as on a kernel that refuses the write: the re-exec
    import gate.secrets
    gate.secrets._scrub_in_place = lambda names: False
sys.argv = ["gate", *sys.argv[2:]]
try:
    runpy.run_module("gate", run_name="__main__", alter_sys=True)
except SystemExit as exc:
    print("EXIT", exc.code)
name, block = seen[0]
with open("/proc/self/environ", "rb") as fh:
    now = fh.read()
secrets = (os.environ["ANTHROPIC_API_KEY"].encode(), os.environ["GATE_GITHUB_TOKEN"].encode())
print("FIRST", name, "AT", [s in block for s in secrets], "NOW", [s in now for s in secrets])
print("CONTROL", b"PROBE_CONTROL=visible" in block)
print("KEPT", os.environ["ANTHROPIC_API_KEY"] == KEY)
import subprocess  # a child started without an explicit environment inherits C's environ
child = "echo [${ANTHROPIC_API_KEY+set}${GATE_GITHUB_TOKEN+set}]"
print("CHILD", subprocess.run(["sh", "-c", child], capture_output=True, text=True).stdout.strip())
""".replace("KEY)", f"{KEY!r})")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/environ")
def test_the_credentials_leave_the_visible_environment_before_any_command_module(
        tmp_path: Path) -> None:
    """One process, no re-exec: the credentials' values are gone from the environment block
    before the CLI or a command module loads, and the gate still has them."""
    env = {**_env(), "ANTHROPIC_API_KEY": KEY, "GATE_GITHUB_TOKEN": TOKEN,
           "PROBE_CONTROL": "visible"}
    p = subprocess.run([sys.executable, "-c", WATCHED, "inplace", "run", "--config",
                        "missing.toml"], cwd=tmp_path, capture_output=True, text=True,
                       timeout=60, env=env)
    assert "missing.toml: config file not found" in p.stderr, p.stderr
    assert "EXIT 2" in p.stdout, p.stdout + p.stderr  # the same process: no re-exec
    assert "FIRST gate.cli AT [False, False] NOW [False, False]" in p.stdout, p.stdout
    assert "CONTROL True" in p.stdout  # the watch did read the block
    assert "KEPT True" in p.stdout, p.stdout
    assert "CHILD []" in p.stdout, p.stdout


def test_where_the_block_cannot_be_scrubbed_the_gate_re_executes_and_keeps_its_key(
        tmp_path: Path) -> None:
    """The fallback: the process re-executes itself without the credentials in its environment
    and gets them through a pipe; it still has the key (a run against the API needs it)."""
    from gate.sim import Simulator

    (tmp_path / "tasks" / "t").mkdir(parents=True)
    (tmp_path / "tasks" / "t" / "task.md").write_text("Write ok into out.txt.\n")
    (tmp_path / "tasks" / "t" / "verify.sh").write_text("grep -qx ok out.txt\n")
    # the agent reads every process's environment block it can: the key in none, the control
    # (no secret: the gate and its children have it) in the gate's among them
    probe = tmp_path / "probe.sh"
    probe.write_text(
        "for f in /proc/[0-9]*/environ; do\n"
        f"  grep -qa PROBE_CONTROL=fallback $f 2>/dev/null && echo $f >> {tmp_path}/ctl\n"
        f"  grep -qa {KEY} $f 2>/dev/null && echo $f >> {tmp_path}/found\n"
        "done\necho ok > out.txt\n")
    (tmp_path / "gate.toml").write_text(
        f'[agent]\nkind = "command"\ncommand = "sh {probe}"\n[suite]\ntasks = "tasks"\n')
    with Simulator(seed=1) as sim:
        env = {**_env(), "ANTHROPIC_API_KEY": KEY, "GATE_GITHUB_TOKEN": TOKEN,
               "ANTHROPIC_BASE_URL": sim.base_url, "PROBE_CONTROL": "fallback"}
        p = subprocess.Popen([sys.executable, "-c", WATCHED, "fallback", "run", "-k", "1",
                              "-o", "r.json"], cwd=tmp_path, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, env=env)
        out, err = p.communicate(timeout=120)
    # the re-executed gate ran the suite against the API with the key (without it: exit 3)
    assert p.returncode == 0, out + err
    assert "EXIT" not in out  # the probe's process image was replaced
    assert f"/proc/{p.pid}/environ" in (tmp_path / "ctl").read_text().split()
    assert not (tmp_path / "found").exists(), (tmp_path / "found").read_text()
    assert (tmp_path / "r.json").exists()
