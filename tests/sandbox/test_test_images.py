"""``python3 -m pytest`` on a machine with Docker builds the test images it needs instead of
skipping the container tests: a missing base image is built by .ci/docker-engine, once (the
outcome is kept, and a lock makes other workers wait for the one build); with no engine nothing
is built and the reason is the skip's (a failure under ``GATE_REQUIRE_DOCKER=1``)."""

from __future__ import annotations

import os
import subprocess
from typing import Any

import pytest

from tests.helpers import docker as images


def _refuse(*args: Any, **kwargs: Any) -> Any:
    raise AssertionError(f"nothing may be built here: {args}")


def test_without_an_engine_nothing_is_built_and_the_reason_is_given(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/agent-gate-test/docker.sock")
    monkeypatch.setattr(images.subprocess, "run", _refuse)
    why = images.engine_problem("gate-test-base:never-built")
    assert why is not None and why.startswith("no Docker engine reachable")
    why = images.standins_problem()
    assert why is not None and why.startswith("no Docker engine reachable")


def test_the_harbor_images_are_the_standins_and_the_samples_named_images() -> None:
    named = images.harbor_images()
    assert named[:2] == images.STANDINS
    assert "alexgshaw/pypi-server:20251031" in named  # tb2-pypi-server's [environment]


@pytest.mark.slow
@pytest.mark.docker
@pytest.mark.usefixtures("engine")
def test_a_missing_base_image_is_built_once(monkeypatch: pytest.MonkeyPatch) -> None:
    tag = f"gate-test-base:rebuild-check-{os.getpid()}"  # ours alone: no other run uses it

    def have() -> bool:
        return subprocess.run(["docker", "image", "inspect", tag],
                              capture_output=True).returncode == 0

    assert not have()
    try:
        assert images.engine_problem(tag) is None
        assert have()
        # asked again (another test), it is not built again
        monkeypatch.setattr(images.subprocess, "run", _refuse)
        assert images.engine_problem(tag) is None
    finally:
        monkeypatch.undo()
        subprocess.run(["docker", "image", "rm", "-f", tag], capture_output=True, check=False)
    assert not have()
