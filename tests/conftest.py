"""Shared fixtures: tiny task suites written into tmp dirs, in both layouts."""

from __future__ import annotations

import os
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def write_task(
    root: Path,
    name: str,
    *,
    prompt: str = "Make hello.txt contain exactly the line `hi`.",
    verify: str = "set -euo pipefail\ngrep -qx hi hello.txt\n",
    solve: str | None = "echo hi > hello.txt\necho wrote hello.txt\n",
    setup: str | None = None,
    starting: dict[str, str] | None = None,
    toml: str | None = None,
    extra: dict[str, str] | None = None,
) -> Path:
    """Write a task directory; ``None`` leaves a file out."""
    d = root / name
    d.mkdir(parents=True)
    (d / "task.md").write_text(prompt)
    (d / "verify.sh").write_text(textwrap.dedent(verify))
    if solve is not None:
        (d / "solution").mkdir()
        (d / "solution" / "solve.sh").write_text(textwrap.dedent(solve))
    if setup is not None:
        (d / "setup.sh").write_text(textwrap.dedent(setup))
    for rel, body in (starting or {}).items():
        p = d / "starting" / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(body)
    if toml is not None:
        (d / "task.toml").write_text(toml)
    for rel, body in (extra or {}).items():
        p = d / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(body)
    return d


@pytest.fixture
def make_task(tmp_path: Path) -> Callable[..., Path]:
    suite = tmp_path / "suite"
    suite.mkdir(exist_ok=True)

    def _make(name: str, **kw: object) -> Path:
        return write_task(suite, name, **kw)  # type: ignore[arg-type]

    return _make


@pytest.fixture
def suite_dir(tmp_path: Path) -> Path:
    return tmp_path / "suite"


@pytest.fixture
def secret_env(monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """Plant credentials in the gate's own environment."""
    secrets = {
        "ANTHROPIC_API_KEY": "sk-ant-test-SECRET-0123456789",
        "GITHUB_TOKEN": "ghp_testSECRET0123456789abcdef",
        "MY_SERVICE_PASSWORD": "hunter2-hunter2",
        "INNOCENT_LOOKING": "sk-ant-test-SECRET-0123456789",  # a copy of the key
    }
    for k, v in secrets.items():
        monkeypatch.setenv(k, v)
    assert os.environ["ANTHROPIC_API_KEY"]
    return secrets
