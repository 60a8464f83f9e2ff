"""Every helper process the gate starts on its own account (git, the simulator's `bash -n`)
gets no credential in its environment: while runs are going, a task can read the environment
of any process of the same user (/proc/<pid>/environ)."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from gate import _git
from gate.sim import _model

KEY = "sk-ant-child-env-SECRET-1"
TOKEN = "ghs_childENVsecret12345"


@pytest.fixture
def spied(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, str]]:
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    monkeypatch.setenv("GATE_GITHUB_TOKEN", TOKEN)
    monkeypatch.delenv("GITHUB_SHA", raising=False)
    envs: list[dict[str, str]] = []
    real = subprocess.run

    def run(*args: Any, **kw: Any) -> Any:
        assert kw.get("env") is not None, f"{args[0]} inherits the gate's environment"
        envs.append(dict(kw["env"]))
        return real(*args, **kw)

    monkeypatch.setattr(subprocess, "run", run)
    return envs


def _clean(envs: list[dict[str, str]]) -> None:
    assert envs
    for env in envs:
        assert "PATH" in env
        assert KEY not in env.values() and TOKEN not in env.values()


def test_the_simulators_syntax_check_gets_no_secret(spied: list[dict[str, str]]) -> None:
    assert _model._parses("echo ok\n")
    _clean(spied)


def test_reading_the_commit_gets_no_secret(spied: list[dict[str, str]], tmp_path: Path) -> None:
    _git.current_commit(tmp_path)
    _clean(spied)


def _ci_under(shell_line: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """`gate ci` started by a bash that holds the credentials in its environment (a CI step
    that calls the gate from a script), with ``shell_line`` running it."""
    import os
    import sys

    env = {"PATH": os.environ["PATH"], "PYTHONPATH": os.environ.get("PYTHONPATH", ""),
           "HOME": str(tmp_path), "GITHUB_TOKEN": TOKEN, "ANTHROPIC_API_KEY": KEY}
    gate = f"{sys.executable} -m gate ci --config {tmp_path / 'missing.toml'}"
    return subprocess.run(["bash", "-c", shell_line.format(gate=gate)], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="needs /proc")
def test_gate_ci_warns_when_the_shell_that_started_it_holds_a_credential(
        tmp_path: Path) -> None:
    p = _ci_under("{gate}; echo exit=$?", tmp_path)  # a child of the shell: the shell stays
    warning = [line for line in p.stderr.splitlines() if "warning" in line]
    assert warning, p.stderr
    assert "GITHUB_TOKEN" in warning[0] and "ANTHROPIC_API_KEY" in warning[0]
    assert "/proc/" in warning[0] and "exec" in warning[0]
    assert TOKEN not in p.stderr and KEY not in p.stderr and TOKEN not in p.stdout


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="needs /proc")
def test_gate_ci_execd_by_the_shell_gives_no_warning(tmp_path: Path) -> None:
    p = _ci_under("exec {gate}", tmp_path)  # as the action does: no shell above holds them
    assert not [line for line in p.stderr.splitlines() if "warning" in line], p.stderr
    assert p.returncode == 2, p.stderr  # (the missing gate.toml)
