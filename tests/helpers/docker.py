"""The Docker engine the container tests need, and the containers a test's gates made.

Docker tests skip, with the reason, when no engine is reachable or the offline base image is
missing; under ``GATE_REQUIRE_DOCKER=1`` (set by ``.ci/run``) they fail instead (the ``engine``
fixture in tests/conftest.py). Nothing here pulls an image."""

from __future__ import annotations

import os
import socket
import subprocess
from typing import Any

IMAGE = os.environ.get("GATE_TEST_IMAGE", "gate-test-base:bookworm")


def engine_problem() -> str | None:
    """Why the docker tests cannot run here (no engine, no base image), or None."""
    try:
        import docker

        client = docker.from_env()
        client.ping()
    except Exception as exc:
        return f"no Docker engine reachable: {exc}"
    try:
        client.images.get(IMAGE)
    except Exception:
        return f"base image {IMAGE} missing (build it with .ci/docker-engine)"
    finally:
        client.close()
    return None


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
