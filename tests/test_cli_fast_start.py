"""A fast start: a config error of `gate run`, `gate compare` or `gate ci` loads nothing heavy
(no statistics, SDK, docker, jinja2, rich, runner), and the credential re-exec happens before
any command module is imported. Checked by what the process imported, not by a stopwatch
(bench/bench_scale.py's `startup` section measures the CPU time)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

HEAVY = ("scipy", "numpy", "anthropic", "docker", "jinja2", "rich", "requests", "gate.run",
         "gate.compare", "gate.results", "gate.agents", "gate.github._ci",
         "pydantic", "gate.config")  # a missing config file is said before the models load

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
    """No credential-looking variable at all (any of them makes the gate re-execute)."""
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
    (the re-executed one runs without -X importtime, so only the first process reports)."""
    p = subprocess.run([sys.executable, "-X", "importtime", "-m", "gate", *argv], cwd=cwd,
                       capture_output=True, text=True, timeout=60, env={**_env(), **env})
    mods = {line.split("|")[-1].strip() for line in p.stderr.splitlines()
            if line.startswith("import time:") and "|" in line}
    return p, mods


def test_the_credential_reexec_comes_before_any_command_module(tmp_path: Path) -> None:
    argv = ["run", "--config", "missing.toml"]
    # without a credential there is no re-exec: the probe sees the command load; a config
    # file that is not there is said before the configuration's models (pydantic) load
    p, mods = _imported(argv, tmp_path)
    assert p.returncode == 2 and "missing.toml: config file not found" in p.stderr
    assert "gate.cli._options" in mods and not mods & {"gate.config", "pydantic"}
    # one that is there but wrong needs them to say what is wrong
    (tmp_path / "bad.toml").write_text('[suite]\nreplications = "many"\n')
    p, mods = _imported(["run", "--config", "bad.toml"], tmp_path)
    assert p.returncode == 2 and "bad.toml" in p.stderr and "replications" in p.stderr
    assert {"gate.config", "pydantic"} <= mods
    # with one, the process re-executes itself before it imported the command or anything heavy
    p, mods = _imported(argv, tmp_path, ANTHROPIC_API_KEY="sk-ant-fast-start-secret-123")
    assert p.returncode == 2 and "missing.toml: config file not found" in p.stderr
    assert "gate.secrets" in mods  # the first process got as far as the re-exec
    assert not mods & {"gate.cli._options", "gate.config", "pydantic"}
    assert not mods & set(HEAVY), mods & set(HEAVY)
    # `python -m gate` re-executes before the CLI itself (click) or the version lookup loads
    assert not mods & {"gate.cli", "click", "importlib.metadata"}, mods & {
        "gate.cli", "click", "importlib.metadata"}
