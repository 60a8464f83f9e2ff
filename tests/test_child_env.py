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
