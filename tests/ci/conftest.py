"""Fixtures the CI tests share, declared once: the gate-ci project (tests/helpers/ci.py) with an
oracle or a simulated agent, the same-job A/B's project with no baseline anywhere, and
action.yml with a runner it is installed into (tests/helpers/action.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.helpers import ROOT
from tests.helpers.action import (
    Installed,
    _plant_hostile_modules,
    _prepare_runner,
    _run_setup_steps,
)
from tests.helpers.ci import Project, _project, ab_project


@pytest.fixture
def project(tmp_path: Path) -> Iterator[Project]:
    """An oracle-agent suite: fast and deterministic."""
    yield from _project(tmp_path, sim=False)


@pytest.fixture
def sim_project(tmp_path: Path) -> Iterator[Project]:
    """The built-in agent against the simulator: the model's behaviour responds to gate.toml."""
    yield from _project(tmp_path, sim=True)


@pytest.fixture
def fresh(tmp_path: Path) -> Iterator[Project]:
    """The built-in agent under the simulator, no baseline anywhere (the same-job A/B's)."""
    yield from ab_project(tmp_path)


@pytest.fixture
def sim_repo(tmp_path: Path) -> Iterator[Project]:
    (tmp_path / "repo").mkdir()
    yield from _project(tmp_path / "repo", sim=True)


@pytest.fixture(scope="session")
def action() -> dict[str, Any]:
    data = yaml.safe_load((ROOT / "action.yml").read_text())
    assert isinstance(data, dict)
    return data


@pytest.fixture(scope="session")
def installed(action: dict[str, Any], tmp_path_factory: pytest.TempPathFactory) -> Installed:
    tmp = tmp_path_factory.mktemp("action")
    inst = _prepare_runner(tmp)
    # the steps run in the workspace, which may hold a fork's files
    workspace = tmp / "workspace"
    marker = tmp / "imported"
    _plant_hostile_modules(workspace, marker)
    _run_setup_steps(action, inst, {}, workspace, tmp)
    assert not marker.exists(), marker.read_text()
    assert (inst.runner_temp / "agent-gate-venv" / "bin" / "gate").exists()
    return inst
