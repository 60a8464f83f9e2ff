"""What the Docker-backed parts of the sandbox share, below all of them: the gate's labels
and who owns a container, the meter relay (the script a container runs, the host's end of it),
how an engine error is said, and :class:`Engine`, what a container needs of its provider.

The per-command sandbox and its provider (``_docker``), the long-lived container (``_harbor``)
and the agent's install (``_install``) each import this module and none imports back: the
provider uses the other two, the install the long-lived container, and a container knows its
provider only as an :class:`Engine`.
"""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import socket
import tempfile
import threading
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, Protocol

import docker
import docker.errors
import requests.exceptions

from gate.sandbox._base import SandboxOptions
from gate.sandbox._relay import serve

LABEL = "agent-gate"  # every container and image of ours carries it
OWNER_LABEL = "agent-gate.owner"  # "<host>:<pid>" of the gate that made the container
METER_DIR = "/run/gate-meter"  # read-only: the Unix socket that leads to this run's meter
RELAY_PORT = 8765  # where a command agent reaches its meter, on the container's loopback
RELAY = Path(__file__).with_name("_relay.py")
NO_PYTHON = "gate: the meter relay of a command agent needs python3 in the task's image"


class Engine(Protocol):
    """What a container or an install asks of the provider that made it
    (:class:`gate.sandbox._docker.DockerSandboxProvider`)."""

    options: SandboxOptions
    owner: str  # OWNER_LABEL's value for what this gate makes
    installed: list[str]  # the agent's installs this gate committed
    failed_installs: dict[str, str]  # tag → why its install failed
    tampered_installs: dict[str, tuple[str, ...]]  # tag → what its install tampered with
    #: tag → the ``SKILL.md`` files its install put in the image (the agent's own: no stray)
    install_skill_files: dict[str, frozenset[str]]

    @property
    def keep(self) -> bool: ...

    @property
    def cancel(self) -> threading.Event | None: ...

    def client(self) -> docker.DockerClient: ...

    def present(self, image: str) -> bool: ...

    def image_lock(self, key: str) -> threading.Lock: ...


def first_line(exc: BaseException) -> str:
    """An engine error in one line (its explanation where it has one)."""
    text = str(getattr(exc, "explanation", None) or exc).strip()
    return (text.splitlines() or [type(exc).__name__])[0][:300]


def stopped(client: docker.DockerClient, container_id: str) -> str | None:
    """How a container ended, when the engine says it is not running (its exit code, an
    out-of-memory kill); None while it runs or when the engine cannot say."""
    try:
        state = client.api.inspect_container(container_id).get("State") or {}
    except (docker.errors.DockerException, requests.exceptions.RequestException):
        return None
    if state.get("Running", True):
        return None
    return f"exit {state.get('ExitCode')}" + (
        ", killed out of memory" if state.get("OOMKilled") else "")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def owner_gone(labels: Mapping[str, str] | None) -> bool:
    """Whether what carries ``labels`` was made by a gate on this host that is gone (even by
    SIGKILL): the next gate's start removes it. Other live gates' are left alone."""
    h, _, pid = (labels or {}).get(OWNER_LABEL, "").rpartition(":")
    return h == socket.gethostname() and pid.isdigit() and not _alive(int(pid))


class HostRelay:
    """A Unix socket in a private directory; every connection to it is piped to ``target``
    (the run's meter on the gate's loopback) and nowhere else."""

    def __init__(self, target: tuple[str, int], directory: Path | None = None) -> None:
        self.target = target
        self._own_dir = directory is None
        # short: sun_path is 108 bytes
        self.dir = directory or Path(tempfile.mkdtemp(prefix="gate-meter-"))
        os.chmod(self.dir, 0o755)
        path = self.dir / "meter.sock"
        self._listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._listener.bind(str(path))
        os.chmod(path, 0o666)  # the container's unprivileged user connects to it
        self._listener.listen(64)
        threading.Thread(target=serve, args=(self._listener, self._connect), daemon=True,
                         name="gate-meter-relay").start()

    def _connect(self) -> socket.socket:
        return socket.create_connection(self.target, timeout=10)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._listener.shutdown(socket.SHUT_RDWR)
        with contextlib.suppress(OSError):
            self._listener.close()
        if self._own_dir:
            shutil.rmtree(self.dir, ignore_errors=True)

# Go's os.FileMode bits, as the engine reports a path's mode (its archive API's stat)
DIR, SYMLINK, SPECIAL = 1 << 31, 1 << 27, (1 << 26) | (1 << 25) | (1 << 24) | (1 << 21) | (
    1 << 19)


class Chunks(io.RawIOBase):
    """A file over an iterator of byte chunks (the engine's archive stream)."""

    def __init__(self, chunks: Iterator[bytes]) -> None:
        self._chunks = chunks
        self._buf = b""

    def readable(self) -> bool:
        return True

    def readinto(self, b: Any) -> int:
        while not self._buf:
            try:
                self._buf = next(self._chunks)
            except StopIteration:
                return 0
        n = min(len(b), len(self._buf))
        b[:n] = self._buf[:n]
        self._buf = self._buf[n:]
        return n
