"""``[suite] disk_mb``: what one run may write, through ``gate run`` on the local sandbox, the
docker sandbox (a bind-mounted workspace), a Harbor task's long-lived container (its writable
layer) and the agent's install. Past the limit the run is stopped and fails as the agent's
doing, and what it wrote is gone; under it the run passes; too little free disk for the limit
is infra, said once for the job."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers.docker import IMAGE, LAUNCHED, ours
from tests.helpers.harbor import DOCKERFILE, harbor_task
from tests.helpers.process import gate as run_gate
from tests.helpers.suites import write_task

LIMIT = 20  # MB
# the command agent: writes `size` MB into its working directory, then holds (a run that
# would go on writing: only the watch can stop it before its timeout) or leaves at once
AGENT = ('n=$(cat size); i=0; while [ "$i" -lt "$n" ]; do i=$((i+1)); '
         'head -c 1048576 /dev/zero > blob$i; done; '
         '[ "$(cat mode)" = hold ] && sleep 120; echo hi > hello.txt')
REASON = re.compile(rf"the run wrote (\d+) MB, past \[suite\] disk_mb = {LIMIT}")
HARBOR_TEST = """#!/bin/bash
if [ -f /app/hello.txt ]; then echo 1; else echo 0; fi > /logs/verifier/reward.txt
"""


def gate(*args: str | Path, cwd: Path | None = None, env: dict[str, str] | None = None,
         timeout: float = 600) -> subprocess.CompletedProcess[str]:
    """``python -m gate ARGS``, started so that its containers are known as ours."""
    return run_gate(*args, cwd=cwd, env=env, timeout=timeout)


def _installs_left() -> list[str]:
    """Committed installs a gate of these tests made and left."""
    ids = subprocess.run(["docker", "images", "-q", "--no-trunc", "--filter",
                          "label=agent-gate.install"], capture_output=True, text=True,
                         check=True).stdout.split()
    out = subprocess.run(["docker", "image", "inspect", "--format",
                          '{{.Id}} {{index .Config.Labels "agent-gate.owner"}}', *ids],
                         capture_output=True, text=True).stdout if ids else ""
    owners = {f"{socket.gethostname()}:{pid}" for pid in LAUNCHED}
    return [i for i, _, o in (ln.partition(" ") for ln in out.splitlines()) if o in owners]


def _tasks(suite: Path, *, harbor: bool = False, toml: str | None = None) -> None:
    """``over``: 40 MB and hold; ``burst``: 40 MB and leave; ``under``: 5 MB."""
    for name, size, mode in (("over", 40, "hold"), ("burst", 40, "go"), ("under", 5, "go")):
        if harbor:
            harbor_task(suite, name, test=HARBOR_TEST, dockerfile=DOCKERFILE + (
                f"RUN echo {size} > /app/size && echo {mode} > /app/mode\n"))
        else:
            write_task(suite, name, starting={"size": f"{size}\n", "mode": f"{mode}\n"},
                       toml=toml)


def _config(tmp: Path, suite: Path, extra: str = "", limit: int = LIMIT) -> Path:
    cfg = tmp / "gate.toml"
    cfg.write_text(f'[agent]\nkind = "command"\ncommand = {json.dumps(AGENT)}\n'
                   f'[suite]\ntasks = "{suite}"\ndisk_mb = {limit}\ntask_timeout = 300\n'
                   f'{extra}')
    return cfg


def _run(tmp: Path, cfg: Path, workspaces: Path) -> dict[str, dict]:
    out = tmp / "r.json"
    p = gate("run", "--config", cfg, "--sim", "-k", "1", "-j", "3", "-o", out,
             env={"TMPDIR": str(workspaces)}, timeout=600, cwd=tmp)
    assert p.returncode == 0, p.stderr
    return {r["task"]: r for r in json.loads(out.read_text())["runs"]}


def _judged(runs: dict[str, dict], workspaces: Path) -> None:
    for name in ("over", "burst"):
        run = runs[name]
        assert run["status"] == "failed", run
        found = REASON.fullmatch(run["reason"] or "")
        assert found and int(found.group(1)) > LIMIT, run["reason"]
    # the holding agent was stopped by the watch, not by its 120 s or the task's 300 s
    assert runs["over"]["duration_s"] < 60, runs["over"]
    assert runs["under"]["status"] == "passed", runs["under"]
    # what the runs wrote went with them
    left = [p for p in workspaces.rglob("*") if p.is_file() and not p.is_symlink()]
    assert sum(p.stat().st_size for p in left) < (1 << 20), left


@pytest.mark.slow
def test_local_runs_past_the_limit_fail_and_leave_nothing(tmp_path: Path) -> None:
    suite, workspaces = tmp_path / "suite", tmp_path / "ws"
    workspaces.mkdir()
    _tasks(suite)
    _judged(_run(tmp_path, _config(tmp_path, suite), workspaces), workspaces)


@pytest.mark.docker
@pytest.mark.slow
@pytest.mark.usefixtures("engine")
def test_docker_runs_past_the_limit_fail_and_leave_nothing(tmp_path: Path) -> None:
    suite, workspaces = tmp_path / "suite", tmp_path / "ws"
    workspaces.mkdir()
    _tasks(suite)
    cfg = _config(tmp_path, suite, f'sandbox = "docker"\nimage = "{IMAGE}"\n')
    _judged(_run(tmp_path, cfg, workspaces), workspaces)
    assert ours() == []


@pytest.mark.docker
@pytest.mark.slow
@pytest.mark.usefixtures("engine")
def test_a_harbor_container_past_the_limit_fails_and_goes(tmp_path: Path) -> None:
    """The long-lived container's writable layer (the engine's SizeRw), not a host folder."""
    suite, workspaces = tmp_path / "suite", tmp_path / "ws"
    workspaces.mkdir()
    _tasks(suite, harbor=True)
    _judged(_run(tmp_path, _config(tmp_path, suite), workspaces), workspaces)
    assert ours() == []


INSTALL = """#!/bin/sh
mkdir -p /opt/agent
head -c 41943040 /dev/zero > /opt/agent/blob
sleep 120
"""


@pytest.mark.docker
@pytest.mark.slow
@pytest.mark.usefixtures("engine")
def test_an_install_past_the_limit_fails_the_install(tmp_path: Path) -> None:
    suite = tmp_path / "suite"
    harbor_task(suite, "count")
    (tmp_path / "install.sh").write_text(INSTALL)
    cfg = _config(tmp_path, suite, limit=LIMIT)
    cfg.write_text(cfg.read_text().replace("[suite]", 'install = "install.sh"\n[suite]'))
    out = tmp_path / "r.json"
    p = gate("run", "--config", cfg, "--sim", "-k", "2", "-j", "2", "-o", out,
             timeout=600, cwd=tmp_path)
    assert p.returncode == 3, p.stderr
    runs = json.loads(out.read_text())["runs"]
    for run in runs:
        assert run["status"] == "error", run
        found = re.fullmatch(r"infra: the agent's install \(\[agent\] install\) wrote (\d+) "
                             rf"MB, past \[suite\] disk_mb = {LIMIT}", run["reason"])
        assert found and int(found.group(1)) > LIMIT, run["reason"]
        assert run["install_s"] is None or run["install_s"] < 60, run  # stopped, not waited
    assert ours() == [] and _installs_left() == []  # nothing committed, nothing left


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 16 MB tmpfs (the tests run as root, as the project's CI does)."""
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    where = tmp_path / "small"
    where.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", str(where)],
                   check=True)
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


@pytest.mark.slow
def test_too_little_free_disk_is_infra_said_once(tmp_path: Path, small_disk: Path) -> None:
    suite = tmp_path / "suite"
    _tasks(suite)
    out = tmp_path / "r.json"
    p = gate("run", "--config", _config(tmp_path, suite), "--sim", "-k", "2", "-o", out,
             env={"TMPDIR": str(small_disk)}, timeout=300, cwd=tmp_path)
    assert p.returncode == 3, p.stderr
    said = [ln for ln in p.stderr.splitlines() if "too little free disk space" in ln]
    assert len(said) == 1, p.stderr
    assert (f"infra: too little free disk space for the runs: {small_disk} has 16 MB free, "
            f"and a run may write [suite] disk_mb = {LIMIT} MB") in said[0], said
    assert "Traceback" not in p.stderr and not out.exists()
    assert list(small_disk.iterdir()) == []  # no run started


@pytest.mark.slow
@pytest.mark.parametrize("value", ["0", "-5", "1.5", '"big"', "true", "2000000"])
def test_a_bad_disk_mb_is_exit_2_naming_the_file_and_key(tmp_path: Path, value: str) -> None:
    suite = tmp_path / "suite"
    write_task(suite, "hello")
    cfg = _config(tmp_path, suite).read_text().replace(f"disk_mb = {LIMIT}",
                                                       f"disk_mb = {value}")
    (tmp_path / "gate.toml").write_text(cfg)
    p = gate("run", "--config", tmp_path / "gate.toml", "--sim", "-k", "1", cwd=tmp_path)
    assert p.returncode == 2, p.stderr
    lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "gate.toml" in lines[0] and "disk_mb" in lines[0], p.stderr
