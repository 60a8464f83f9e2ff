"""Fixtures for every test: tiny task suites written into tmp dirs (both layouts), planted
credentials, the Claude Code CLI, the Docker engine; and the quick loop's guard.

Helpers live in tests/helpers/ (imported as ``tests.helpers.x``), never here: no test module
imports a conftest."""

from __future__ import annotations

import os
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.docker import engine_problem
from tests.helpers.order import longest_first, workers
from tests.helpers.process import starts_gate
from tests.helpers.suites import write_task


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under xdist, the longest modules start first on every worker (tests/helpers/order.py):
    a long test left at the end of a worker's share is what the run's wall time waits on."""
    workers = int(getattr(config, "workerinput", {}).get("workercount", 1))
    items[:] = longest_first(items, workers)


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """``-n auto``: a worker per core, one more for a run with the slow tests (they wait as
    much as they compute; tests/helpers/order.py)."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return workers(cores or 1, str(config.getoption("markexpr") or ""))


@pytest.fixture(scope="session", autouse=True)
def _temp_files_under_basetemp(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """The system temp of this test process and of everything it starts is a folder of
    pytest's basetemp (which pytest prunes, keeping the last three), not the machine's /tmp:
    what a gate killed on purpose (SIGKILL: no handler runs) leaves there, its runs'
    workspaces, goes with the basetemp."""
    temp = tmp_path_factory.getbasetemp() / "tmp"
    temp.mkdir(exist_ok=True)
    saved, saved_dir = os.environ.get("TMPDIR"), tempfile.tempdir
    os.environ["TMPDIR"], tempfile.tempdir = str(temp), str(temp)
    yield
    tempfile.tempdir = saved_dir
    if saved is None:
        os.environ.pop("TMPDIR", None)
    else:
        os.environ["TMPDIR"] = saved


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


@pytest.fixture(scope="module")
def engine() -> None:
    """A reachable Docker engine with the offline base image, or the test skips saying why
    (fails under ``GATE_REQUIRE_DOCKER=1``)."""
    why = engine_problem()
    if why:
        if os.environ.get("GATE_REQUIRE_DOCKER") == "1":
            pytest.fail(why)
        pytest.skip(why)
