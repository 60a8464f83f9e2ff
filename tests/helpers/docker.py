"""The Docker engine the container tests need, the images they run, and the containers a
test's gates made.

With an engine reachable, a test image that is missing is built, once, by the script CI uses:
the offline base image by ``.ci/docker-engine``, the Harbor sample's stand-ins by
``.ci/harbor-images`` (a file lock makes the xdist workers wait for one build, and the message
says so). Docker tests skip, with the reason, when no engine is reachable or a build fails;
under ``GATE_REQUIRE_DOCKER=1`` (set by ``.ci/run``) they fail instead (the ``engine`` fixture in
tests/conftest.py). Nothing here pulls an image."""

from __future__ import annotations

import fcntl
import os
import socket
import subprocess
import sys
import tempfile
import tomllib
import warnings
from pathlib import Path
from typing import Any

IMAGE = os.environ.get("GATE_TEST_IMAGE", "gate-test-base:bookworm")
REPO = Path(__file__).resolve().parents[2]
#: the Harbor sample's base images (.ci/harbor-images), and the prebuilt images its tasks name
STANDINS = ("gate-harbor-standin/ubuntu:24.04", "gate-harbor-standin/python:3.13-slim-bookworm")
#: one lock for every test process of the machine (the machine's temp, read before the session
#: moves TMPDIR into pytest's basetemp)
LOCK = Path(tempfile.gettempdir()) / "agent-gate-test-images.lock"
#: a build's outcome, per process: a failed build is not retried by every test
_BUILT: dict[tuple[str, ...], str | None] = {}


def _client() -> Any:
    import docker

    client = docker.from_env()
    client.ping()
    return client


def _missing(client: Any, images: tuple[str, ...]) -> list[str]:
    import docker

    missing = []
    for image in images:
        try:
            client.images.get(image)
        except docker.errors.ImageNotFound:
            missing.append(image)
    return missing


def harbor_images() -> tuple[str, ...]:
    """The stand-ins and every ``docker_image`` the Harbor sample's tasks name."""
    named = []
    for toml in sorted((REPO / "tests" / "fixtures" / "harbor_real").glob("*/task.toml")):
        image = tomllib.loads(toml.read_text()).get("environment", {}).get("docker_image")
        if image:
            named.append(str(image))
    return (*STANDINS, *named)


def build_missing(script: str, images: tuple[str, ...], **env: str) -> str | None:
    """Build ``images`` that are missing with ``.ci/<script>`` (``env`` added to its
    environment), once: None when they are all there after, else why not. The engine must be
    reachable (``engine_problem``); nothing here starts one."""
    key = (script, *images)
    if key in _BUILT:
        return _BUILT[key]
    try:
        client = _client()
    except Exception as exc:
        return f"no Docker engine reachable: {exc}"
    try:
        with LOCK.open("a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # another worker's build of the same: wait for it
            missing = _missing(client, images)
            if missing:
                note = (f"building the missing test image{'s' if len(missing) > 1 else ''} "
                        f"{', '.join(missing)} with .ci/{script} (once; a few minutes)")
                print(f"tests: {note}", file=sys.__stderr__, flush=True)
                warnings.warn(note, stacklevel=2)
                p = subprocess.run(["bash", str(REPO / ".ci" / script)], cwd=REPO,
                                   env={**os.environ, **env}, capture_output=True, text=True,
                                   timeout=1800, check=False)
                missing = _missing(client, images)
                if missing:
                    tail = (p.stderr.strip() or p.stdout.strip() or "no output").splitlines()
                    _BUILT[key] = (f"test image {', '.join(missing)} missing and .ci/{script} "
                                   f"could not build it (exit {p.returncode}): {tail[-1]}")
                    return _BUILT[key]
    finally:
        client.close()
    _BUILT[key] = None
    return None


def engine_problem(image: str = IMAGE) -> str | None:
    """Why the docker tests cannot run here (no engine; a missing base image that
    .ci/docker-engine could not build), or None; a missing base image is built first."""
    try:
        _client().close()
    except Exception as exc:
        return f"no Docker engine reachable: {exc}"
    return build_missing("docker-engine", (image,), GATE_TEST_IMAGE=image)


def standins_problem() -> str | None:
    """``engine_problem``, then the Harbor sample's images, built when missing."""
    return engine_problem() or build_missing("harbor-images", harbor_images())


# the pids of the gates these tests started (through launch): a container is ours when one of
# them made it (its owner label), so another suite sharing the engine cannot fail these tests
LAUNCHED: set[int] = set()


def launch(cmd: list[str], **kwargs: Any) -> subprocess.Popen[str]:
    proc: subprocess.Popen[str] = subprocess.Popen(cmd, text=True, **kwargs)
    LAUNCHED.add(proc.pid)
    return proc


def ours(all_: bool = True) -> list[str]:
    """Ids of the containers a gate of these tests made (the gate's label, owned by one of
    their pids; a gate keeps the pid we started, a re-exec too)."""
    out = subprocess.run(["docker", "ps", *(["-a"] if all_ else []), "--filter",
                          "label=agent-gate", "--format",
                          '{{.ID}} {{.Label "agent-gate.owner"}}'],
                         capture_output=True, text=True, check=True)
    owners = {f"{socket.gethostname()}:{pid}" for pid in LAUNCHED}
    return [cid for cid, _, owner in (ln.partition(" ") for ln in out.stdout.splitlines())
            if owner in owners]
