"""Shared fixtures: tiny task suites written into tmp dirs, in both layouts."""

from __future__ import annotations

import os
import subprocess
import textwrap
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[1]


def starts_gate(args: Any) -> bool:
    """Whether a subprocess command line runs the gate (``python -m gate``, or the ``gate``
    console script)."""
    argv = [os.fsdecode(a) for a in args] if isinstance(args, Sequence) \
        and not isinstance(args, (str, bytes)) else [os.fsdecode(args)]
    if len(argv) == 1:
        argv = argv[0].split()
    return (bool(argv) and Path(argv[0]).name == "gate") \
        or any(argv[i:i + 2] == ["-m", "gate"] for i in range(len(argv) - 1))


@pytest.fixture(autouse=True)
def _quick_tests_start_no_gate(request: pytest.FixtureRequest,
                               monkeypatch: pytest.MonkeyPatch) -> None:
    """The quick loop (``-m "not slow"``) never starts ``gate`` as a subprocess (README): a
    test that does is refused here until it is marked ``slow``."""
    if request.node.get_closest_marker("slow") is not None:
        return
    real = subprocess.Popen.__init__

    def guarded(self: subprocess.Popen[Any], args: Any, *rest: Any, **kwargs: Any) -> None:
        if starts_gate(args):
            raise AssertionError(f"{request.node.nodeid} starts `gate` as a subprocess: "
                                 "mark it @pytest.mark.slow (the quick loop starts none)")
        real(self, args, *rest, **kwargs)

    monkeypatch.setattr(subprocess.Popen, "__init__", guarded)


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


@pytest.fixture
def claude_bin() -> str:
    """The Claude Code CLI ($GATE_CLAUDE_BIN, then `claude` on PATH). Without it the test
    skips, or fails under ``GATE_REQUIRE_CLAUDE_CODE=1`` (set by ``.ci/run``, which installs
    it from the npm registry)."""
    import shutil

    found = os.environ.get("GATE_CLAUDE_BIN") or shutil.which("claude")
    if found and Path(found).is_file():
        return found
    reason = ("Claude Code not installed (set GATE_CLAUDE_BIN or put `claude` on PATH; "
              "npm install --prefix DIR @anthropic-ai/claude-code)")
    if os.environ.get("GATE_REQUIRE_CLAUDE_CODE") == "1":
        pytest.fail(f"GATE_REQUIRE_CLAUDE_CODE=1 but {reason}")
    pytest.skip(reason)
