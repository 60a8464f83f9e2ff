"""Harbor-format tasks in the docker sandbox: one container per run, with Harbor's semantics.

A Harbor task's state is the container's own filesystem (files baked into the image stay
visible), so a run gets one container of the task's image, kept alive by a small ``sh`` loop as
PID 1 (it also reaps orphans), and every command of the run is a ``docker exec`` in it:

- the agent's commands (and the oracle's ``/solution/solve.sh``) run in the image's ``WORKDIR``
  as the image's ``USER`` (or ``[agent].user``), under the agent phase's network policy;
- the verifier: ``/tests`` and ``/logs/verifier`` are wiped and ``tests/`` uploaded only now
  (never visible to the agent, and a reward the agent planted is gone), then ``bash
  /tests/test.sh`` runs as the verifier's user under the verifier phase's network policy; the
  reward it writes (``/logs/verifier/reward.txt`` or ``reward.json``) decides: the task passes
  at 1, a fractional reward is recorded as the run's score.

Network per phase: the container is created on the default bridge and detached from it for a
``no-network`` phase (then it has loopback only); ``public`` attaches it. ``allowlist`` is
refused (see :mod:`gate.harbor`). Limits: Harbor's ``cpus`` / ``memory_mb``, a pids limit,
no-new-privileges, the capabilities a verifier installing packages as root needs and no more
(``NET_RAW``, ``MKNOD``, ``SYS_CHROOT``, ``SETFCAP``, ``AUDIT_WRITE`` dropped), the gate's labels.
The root filesystem stays writable: Harbor verifiers install their tools at verify time.

The runner's ``.runner/`` files (the final message, notes, a command agent's prompt) live in
``/logs/agent/``, Harbor's agent log directory, so the task's ``WORKDIR`` holds only the task's
files. A command that times out (or a cancelled run) is killed with every process it started,
found by a per-command variable in ``/proc/*/environ``.
"""

from __future__ import annotations

import contextlib
import errno
import io
import itertools
import json
import os
import posixpath
import shlex
import shutil
import signal
import tarfile
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

import docker.errors
import requests.exceptions
from docker.types import LogConfig, Mount

from gate.harbor import (
    AGENT_LOGS,
    REWARD_JSON,
    REWARD_TXT,
    SOLUTION_DIR,
    TESTS_DIR,
    VERIFIER_LOGS,
    HarborTask,
    NetworkMode,
)
from gate.sandbox._base import (
    READ_LIMIT,
    ExecResult,
    Sandbox,
    SandboxError,
    Verification,
    clip,
)
from gate.sandbox._local import OUTPUT_LIMIT, _Capture
from gate.tasks import Task

if TYPE_CHECKING:
    from gate.sandbox._docker import DockerSandboxProvider

KEEPALIVE = "trap 'exit 0' TERM; while :; do sleep 3600 & wait; done"
DROPPED_CAPS = ["NET_RAW", "MKNOD", "SYS_CHROOT", "SETFCAP", "AUDIT_WRITE"]
PIDS = 1024
REWARD_LIMIT = 100_000  # bytes of a reward file
POLL_S = 0.25
EXEC_TAG = "GATE_EXEC"
METER_DIR = "/run/gate-meter"
RELAY_PORT = 8765
NO_PYTHON = "gate: the meter relay of a command agent needs python3 in the task's image"
# Go's os.FileMode bits, as the engine reports a path's mode
_DIR, _SYMLINK, _SPECIAL = 1 << 31, 1 << 27, (1 << 26) | (1 << 25) | (1 << 24) | (1 << 21) | (
    1 << 19)


def _first_line(exc: BaseException) -> str:
    text = str(getattr(exc, "explanation", None) or exc).strip()
    return (text.splitlines() or [type(exc).__name__])[0][:300]


def _tail(text: str) -> str:
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    return lines[-1][:200] if lines else "(no output)"


class _Chunks(io.RawIOBase):
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


class HarborSandbox(Sandbox):
    def __init__(self, provider: DockerSandboxProvider, task: Task, image: str,
                 root: Path) -> None:
        assert task.harbor is not None
        self.provider = provider
        self.task = task
        self.harbor: HarborTask = task.harbor
        self.image = image
        self.root = root
        self.workdir = "/"
        self.task_dir = TESTS_DIR
        self._seq = itertools.count()
        self._container_id: str | None = None
        self._network: NetworkMode | None = None
        self._ids: dict[str, tuple[int, int]] = {}
        # a short private directory (a socket path has at most 108 bytes), mounted read-only:
        # relay.py, and the socket to this run's meter once a command agent asks for it
        self._meter_dir = Path(tempfile.mkdtemp(prefix="gate-meter-"))
        os.chmod(self._meter_dir, 0o755)
        from gate.sandbox._docker import RELAY

        shutil.copyfile(RELAY, self._meter_dir / "relay.py")
        self._relay: Any = None

    # ----- lifecycle ----------------------------------------------------------------------

    def start(self) -> None:
        client = self.provider.client()
        env = self.harbor.config.environment
        try:
            config = client.api.inspect_image(self.image).get("Config") or {}
            ncpu = float(client.info().get("NCPU") or os.cpu_count() or 1)
        except docker.errors.DockerException as exc:
            raise SandboxError(f"cannot inspect image {self.image!r}: {_first_line(exc)}") \
                from exc
        self.workdir = config.get("WorkingDir") or "/"
        from gate.sandbox._docker import LABEL, OWNER_LABEL

        try:
            container = client.containers.create(
                self.image, entrypoint=["sh", "-c", KEEPALIVE], command=[], detach=True,
                labels={LABEL: "1", OWNER_LABEL: self.provider.owner},
                network_mode="bridge", cap_drop=DROPPED_CAPS,
                security_opt=["no-new-privileges"],
                mounts=[Mount(METER_DIR, str(self._meter_dir), type="bind", read_only=True)],
                mem_limit=f"{env.memory_mb}m", memswap_limit=f"{env.memory_mb}m",
                pids_limit=PIDS, nano_cpus=int(min(env.cpus, ncpu) * 1e9),
                log_config=LogConfig(type=LogConfig.types.JSON,
                                     config={"max-size": "1m", "max-file": "1"}),
            )
        except docker.errors.DockerException as exc:
            raise SandboxError(f"cannot create a container: {_first_line(exc)}") from exc
        self._container_id = container.id
        self._network = "public"
        self._set_network(self.harbor.agent_network)
        try:
            container.start()
        except docker.errors.DockerException as exc:
            raise SandboxError(f"cannot start the container: {_first_line(exc)}") from exc
        self._root_sh(f"mkdir -p {AGENT_LOGS} {VERIFIER_LOGS} && "
                      f"chmod 777 /logs {AGENT_LOGS} {VERIFIER_LOGS}")

    def _teardown(self) -> None:
        if self._container_id is not None:
            with contextlib.suppress(docker.errors.DockerException,
                                     requests.exceptions.RequestException):
                self.provider.client().api.remove_container(self._container_id, force=True)
        if self._relay is not None:
            self._relay.close()
        shutil.rmtree(self._meter_dir, ignore_errors=True)
        if not self.provider.keep:
            shutil.rmtree(self.root, ignore_errors=True)

    # ----- the contract -------------------------------------------------------------------

    def base_env(self) -> dict[str, str]:
        return {"WORK_DIR": self.workdir}

    def model_endpoint(self, base_url: str) -> str:
        """As in the docker sandbox: a relay on the container's loopback, through a Unix
        socket to a relay in the gate that connects to this run's meter only."""
        from gate.sandbox._docker import _HostRelay

        parts = urlsplit(base_url)
        if parts.hostname is None or parts.port is None:
            raise SandboxError(f"cannot relay to the meter at {base_url!r}")
        if self._relay is None:
            self._relay = _HostRelay((parts.hostname, parts.port), directory=self._meter_dir)
        return urlunsplit(("http", f"127.0.0.1:{RELAY_PORT}", parts.path, "", ""))

    def _exec(self, command: str, *, env: dict[str, str], timeout: float, stdin: str | None,
              task_visible: bool) -> ExecResult:
        argv = ["bash", "-c", command]
        user = self._user(self.harbor.config.agent.user)
        if stdin is not None:
            path = f"{AGENT_LOGS}/.stdin-{next(self._seq)}"
            self._put(path, stdin.encode("utf-8"), user)
            argv = ["bash", "-c", f'exec bash -c "$1" < {path}', "bash", command]
        if self._relay is not None:  # a command agent: its relay to the meter first
            argv = ["bash", "-c",
                    f'command -v python3 >/dev/null || {{ echo "{NO_PYTHON}" >&2; exit 127; }}; '
                    f"python3 -I {METER_DIR}/relay.py {RELAY_PORT} {METER_DIR}/meter.sock && "
                    'exec "$@"', "bash", *argv]
        return self._run(argv, user=user, env=env, timeout=timeout)

    def _run_script(self, rel: str, *, timeout: float) -> ExecResult:
        cfg = self.harbor.config
        if rel == "solution/solve.sh":
            self._upload_dir(self.task.path / "solution", SOLUTION_DIR)
            env = self.command_env({**self.harbor.env("solution"), "TASK_DIR": SOLUTION_DIR})
            return self._run(["bash", f"{SOLUTION_DIR}/solve.sh"],
                             user=self._user(cfg.agent.user), env=env, timeout=timeout)
        if rel == "verify.sh":
            self._set_network(self.harbor.verifier_network)
            self._root_sh(f"rm -rf {VERIFIER_LOGS} && mkdir -p {VERIFIER_LOGS} && "
                          f"chmod 777 {VERIFIER_LOGS}")
            self._upload_dir(self.task.path / "tests", TESTS_DIR)
            env = self.command_env({**self.harbor.env("verifier"), "TASK_DIR": TESTS_DIR})
            return self._run(["bash", f"{TESTS_DIR}/test.sh"],
                             user=self._user(cfg.verifier.user), env=env, timeout=timeout)
        raise SandboxError(f"a Harbor-format task has no {rel}")

    def _verify(self, *, timeout: float) -> Verification:
        res = self._run_script("verify.sh", timeout=timeout)
        reward, score, why = self._reward()
        if reward is None:
            return Verification(res, False, reason=(
                f"the verifier wrote no reward ({why}); test.sh exited {res.returncode}: "
                f"{_tail(res.output)}"))
        if reward == 1:
            return Verification(res, True, score=score)
        return Verification(res, False, reason=f"reward {reward:g} (the task passes at 1)",
                            score=score)

    def _reward(self) -> tuple[float | None, dict[str, Any] | None, str]:
        """The verifier's reward: ``reward.txt`` (a number), else ``reward.json`` (its
        ``reward``, or its only value)."""
        try:
            text = self._read_file(REWARD_TXT, max_bytes=REWARD_LIMIT, truncate=False)
        except FileNotFoundError:
            pass
        except OSError as exc:
            return None, None, f"{REWARD_TXT}: {exc.strerror or exc}"
        else:
            try:
                value = float(text.strip())
            except ValueError:
                return None, None, f"{REWARD_TXT} holds no number"
            return value, {"reward": value}, ""
        try:
            data = json.loads(self._read_file(REWARD_JSON, max_bytes=REWARD_LIMIT,
                                              truncate=False))
        except FileNotFoundError:
            return None, None, f"no {REWARD_TXT} or {REWARD_JSON}"
        except (OSError, ValueError, RecursionError) as exc:
            return None, None, f"{REWARD_JSON}: {getattr(exc, 'strerror', None) or exc}"
        if isinstance(data, dict):
            numbers = {k: v for k, v in data.items()
                       if isinstance(v, (int, float)) and not isinstance(v, bool)}
            if "reward" in numbers:
                return float(numbers["reward"]), data, ""
            if len(numbers) == 1:
                return float(next(iter(numbers.values()))), data, ""
        return None, None, f"{REWARD_JSON} has no 'reward' number"

    def _abs(self, path: str) -> str:
        """Paths as the runner and the agent name them, to absolute paths in the container
        (``.runner/x`` is Harbor's agent log directory)."""
        if path == ".runner" or path.startswith(".runner/"):
            return posixpath.normpath(AGENT_LOGS + path[len(".runner"):])
        return posixpath.normpath(posixpath.join(self.workdir, path))

    def _read_file(self, path: str, *, max_bytes: int = READ_LIMIT,
                   truncate: bool = False) -> str:
        target = self._abs(path)
        api = self.provider.client().api
        try:
            chunks, stat = api.get_archive(self._cid, target)
        except docker.errors.NotFound:
            raise FileNotFoundError(errno.ENOENT, "no such file", path) from None
        except docker.errors.DockerException as exc:
            raise OSError(errno.EIO, _first_line(exc), path) from exc
        mode, size = int(stat.get("mode", 0)), int(stat.get("size", 0))
        if mode & _DIR:
            raise IsADirectoryError(errno.EISDIR, "is a directory", path)
        if mode & (_SYMLINK | _SPECIAL):
            raise OSError(errno.EINVAL, "not a regular file", path)
        if size > max_bytes and not truncate:
            raise OSError(errno.EFBIG, f"{size} bytes, over the gate's limit of {max_bytes}",
                          path)
        with tarfile.open(fileobj=io.BufferedReader(_Chunks(iter(chunks))), mode="r|") as tf:
            member = tf.next()
            fh = tf.extractfile(member) if member is not None else None
            if fh is None:
                raise OSError(errno.EINVAL, "not a regular file", path)
            data = fh.read(max_bytes)
        return data.decode("utf-8", errors="replace")

    def _write_file(self, path: str, content: str) -> None:
        target = self._abs(path)
        user = self._user(self.harbor.config.agent.user)
        parent = posixpath.dirname(target)
        res = self._run(["mkdir", "-p", parent], user=user, env=self.command_env(), timeout=30)
        if res.returncode != 0:
            raise PermissionError(errno.EACCES, _tail(res.output), path)
        self._put(target, content.encode("utf-8"), user)

    # ----- the engine ---------------------------------------------------------------------

    @property
    def _cid(self) -> str:
        if self._container_id is None:
            raise SandboxError("the container is not running")
        return self._container_id

    def _user(self, user: str | int | None) -> str:
        return "" if user is None else str(user)

    def _uid_gid(self, user: str) -> tuple[int, int]:
        if user not in self._ids:
            res = self._run(["sh", "-c", "id -u; id -g"], user=user, env={}, timeout=30)
            try:
                uid, gid = (int(x) for x in res.stdout.split()[:2])
            except ValueError:
                raise SandboxError(f"cannot resolve the user {user or '(image default)'!r}: "
                                   f"{_tail(res.output)}") from None
            self._ids[user] = (uid, gid)
        return self._ids[user]

    def _put(self, target: str, data: bytes, user: str, mode: int = 0o644) -> None:
        uid, gid = self._uid_gid(user)
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w") as tf:
            info = tarfile.TarInfo(posixpath.basename(target))
            info.size, info.mode, info.uid, info.gid = len(data), mode, uid, gid
            info.mtime = int(time.time())
            tf.addfile(info, io.BytesIO(data))
        try:
            ok = self.provider.client().api.put_archive(self._cid, posixpath.dirname(target),
                                                        buf.getvalue())
        except docker.errors.DockerException as exc:
            raise OSError(errno.EIO, _first_line(exc), target) from exc
        if not ok:
            raise OSError(errno.EIO, "the engine refused the file", target)

    def _upload_dir(self, source: Path, target: str) -> None:
        """``target`` replaced by a copy of ``source`` (root-owned, modes kept)."""
        self._root_sh(f"rm -rf {shlex.quote(target)} && mkdir -p {shlex.quote(target)}")
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w") as tf:
            for p in sorted(source.rglob("*")):
                info = tf.gettarinfo(str(p), arcname=p.relative_to(source).as_posix())
                info.uid = info.gid = 0
                info.uname = info.gname = "root"
                if info.isreg():
                    with p.open("rb") as fh:
                        tf.addfile(info, fh)
                else:
                    tf.addfile(info)
        try:
            self.provider.client().api.put_archive(self._cid, target, buf.getvalue())
        except docker.errors.DockerException as exc:
            raise SandboxError(f"cannot upload {source.name}/: {_first_line(exc)}") from exc

    def _put_dir(self, source: Path, dest: str) -> None:
        """``dest`` (in the image's ``WORKDIR``) replaced by a copy of ``source``, owned by the
        agent's user (it may edit a skill's files as in any workspace)."""
        target = self._abs(dest)
        uid, gid = self._uid_gid(self._user(self.harbor.config.agent.user))
        owned, parent = [target], posixpath.dirname(target)
        while parent.startswith(self.workdir.rstrip("/") + "/"):  # .claude/skills, .claude
            owned.append(parent)
            parent = posixpath.dirname(parent)
        self._root_sh(f"rm -rf {shlex.quote(target)} && mkdir -p {shlex.quote(target)} && "
                      f"chown {uid}:{gid} {' '.join(map(shlex.quote, owned))}")
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w") as tf:
            for p in sorted(source.rglob("*")):
                if any(part in {"__pycache__", ".DS_Store", ".git"}
                       for part in p.relative_to(source).parts):
                    continue
                info = tf.gettarinfo(str(p), arcname=p.relative_to(source).as_posix())
                info.uid, info.gid = uid, gid
                info.uname = info.gname = ""
                if info.isreg():
                    with p.open("rb") as fh:
                        tf.addfile(info, fh)
                elif info.isdir():
                    tf.addfile(info)
        try:
            ok = self.provider.client().api.put_archive(self._cid, target, buf.getvalue())
        except docker.errors.DockerException as exc:
            raise SandboxError(f"cannot put {source.name}/ in the container: "
                               f"{_first_line(exc)}") from exc
        if not ok:
            raise SandboxError(f"the engine refused {source.name}/")

    def _root_sh(self, script: str) -> None:
        res = self._run(["sh", "-c", script], user="0", env={}, timeout=60)
        if res.returncode != 0:
            raise SandboxError(f"container step failed: {_tail(res.output)}")

    def _set_network(self, mode: NetworkMode) -> None:
        want: NetworkMode = "public" if mode == "public" else "no-network"
        if self._network == want:
            return
        try:
            bridge = self.provider.client().networks.get("bridge")
            if want == "public":
                bridge.connect(self._cid)
            else:
                bridge.disconnect(self._cid, force=True)
        except docker.errors.DockerException as exc:
            raise SandboxError(f"cannot set the network to {want}: {_first_line(exc)}") \
                from exc
        self._network = want

    def _run(self, argv: list[str], *, user: str, env: dict[str, str],
             timeout: float) -> ExecResult:
        """One ``docker exec``: bounded output; on timeout or cancel, it and everything it
        started (every process carrying its tag) is killed."""
        tag = f"{os.getpid()}-{next(self._seq)}"
        api = self.provider.client().api
        start = time.monotonic()
        try:
            exec_id = api.exec_create(self._cid, argv, user=user,
                                      environment={**env, EXEC_TAG: tag},
                                      workdir=self.workdir)["Id"]
        except docker.errors.DockerException as exc:
            raise SandboxError(f"cannot run in the container: {_first_line(exc)}") from exc
        out, err = _Capture(OUTPUT_LIMIT), _Capture(OUTPUT_LIMIT)
        done = threading.Event()

        def pump() -> None:
            try:
                for o, e in api.exec_start(exec_id, stream=True, demux=True):
                    if o:
                        out.feed(o)
                    if e:
                        err.feed(e)
            except (docker.errors.DockerException, requests.exceptions.RequestException,
                    OSError):
                pass
            finally:
                done.set()

        threading.Thread(target=pump, name="gate-exec", daemon=True).start()
        deadline = start + timeout
        timed_out = cancelled = False
        while not done.wait(POLL_S):
            if self.cancel is not None and self.cancel.is_set():
                cancelled = True
                break
            if time.monotonic() >= deadline:
                timed_out = True
                break
        if timed_out or cancelled:
            self._kill(tag, user)
            done.wait(5)
        if cancelled:
            raise SandboxError("cancelled")
        try:
            code = api.exec_inspect(exec_id).get("ExitCode")
        except docker.errors.DockerException:
            code = None
        return ExecResult(
            returncode=-signal.SIGKILL if timed_out else (code if code is not None else -1),
            stdout=clip(out.text(), OUTPUT_LIMIT), stderr=clip(err.text(), OUTPUT_LIMIT),
            timed_out=timed_out, duration_s=time.monotonic() - start)

    def _kill(self, tag: str, user: str) -> None:
        """Kill every process carrying ``tag`` (as the command's own user: no ptrace
        capability is needed to read the environment of one's own processes)."""
        script = ("for _ in 1 2 3; do for p in /proc/[0-9]*; do "
                  f"tr '\\000' '\\n' < \"$p/environ\" 2>/dev/null | grep -qx '{EXEC_TAG}={tag}'"
                  ' && kill -9 "${p#/proc/}" 2>/dev/null; done; done; true')
        with contextlib.suppress(docker.errors.DockerException,
                                 requests.exceptions.RequestException):
            self.provider.client().api.exec_start(
                self.provider.client().api.exec_create(self._cid, ["sh", "-c", script],
                                                       user=user)["Id"])
