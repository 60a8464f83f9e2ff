"""The docker sandbox: every command of a run in a fresh, locked-down container (``docker`` SDK).

The workspace (``starting/`` copied in, as for the local backend) lives on the host and is
bind-mounted at ``/workspace``; a private ``HOME`` at ``/home/gate``. Each command (``setup.sh``,
an agent's tool call, the oracle, ``verify.sh``) runs in its own container of the task's image,
which is removed when the command ends, so nothing a command starts (a ``setsid`` daemon, a
fork bomb) outlives it. The task directory is mounted read-only at ``/task`` for the task's own
scripts only, never for the agent's commands. With the agent's install (``[agent] install``),
only the agent's commands run from the installed image: the task's own scripts (``setup.sh``,
``verify.sh``, the oracle's solution) always run from the task's image, so nothing the install
put there (a wrapped ``bash`` that exits 0 for ``verify.sh``) ever judges the agent.

Every container: no network (unless the task opts in), a non-root user, all capabilities
dropped, no-new-privileges, a read-only root with a tmpfs ``/tmp``, memory / pids / CPU limits,
an init process, and the gate's labels (so a crashed gate's leftovers are removed by the next
start). Its environment is built from nothing: no variable of the gate's reaches it. A task
whose Dockerfile sets up a setuid program or sudo, which these containers would silently
break, is refused by name (:func:`privileged_need`). A task format whose tasks live in their
image (Harbor's) gets the long-lived container instead (``_harbor``: the engine's default
security settings, as Harbor's own docker environment).

Images: a task's ``[environment] image``, else one built from its Dockerfile (tagged by a
digest of the build context, so it is built once and reused across runs and jobs), else the
suite's ``[suite].image``. A missing image is pulled only when pulling is on (``[suite].pull``;
by default only on GitHub's runners); otherwise it is a clear error, before any run starts.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import shutil
import signal
import socket
import threading
import time
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import docker
import docker.errors
import requests.exceptions
from docker.types import LogConfig, Mount

from gate._files import clip, printable, strip_ansi
from gate.core.tasks import Task, digest_dir, task_format
from gate.sandbox._base import (
    READ_LIMIT,
    AgentInstall,
    ExecResult,
    Sandbox,
    SandboxError,
    SandboxOptions,
    SandboxProvider,
)
from gate.sandbox._engine import (
    LABEL,
    METER_DIR,
    NO_PYTHON,
    OWNER_LABEL,
    RELAY,
    RELAY_PORT,
    HostRelay,
    first_line,
    owner_gone,
)
from gate.sandbox._harbor import DockerRunContainer
from gate.sandbox._install import installed_image, installs_left_behind, remove_installed
from gate.sandbox._local import (
    OUTPUT_LIMIT,
    copy_inside,
    make_workspace,
    read_inside,
    write_inside,
)
from gate.sandbox._netguard import NetGuard
from gate.sandbox._quota import tree_bytes

WORKDIR = "/workspace"
HOME = "/home/gate"
VERIFY_HOME = "/home/gate-verify"  # the verifier's own HOME (fresh_home)
TASK_DIR = "/task"
IO_DIR = "/run/gate-io"  # read-only: the command's stdin
UNPRIVILEGED = 1000  # the uid/gid commands run as when the gate itself runs as root
DEFAULT_CPUS = 2.0
DEFAULT_MEMORY_MB = 2048
DEFAULT_PIDS = 512
TMPFS = "rw,nosuid,nodev,size=512m"
POLL_S = 0.5  # how often a running command checks for a cancel
BUILD_LINES = 15  # lines of a failed build's output in its error
BUILD_CHARS = 2000
BUILD_KEEP = 65536  # characters of a build's output kept while it runs (its end)
# a Dockerfile line that relies on privileges a container here cannot gain: a setuid/setgid
# bit (chmod u+s, g+s, 4755 ...) or sudo
_PRIVILEGED = re.compile(r"\bchmod\s+(?:-\S+\s+)*(?:[ugoa]*\+[rwxXt]*s|0?[2-7][0-7]{3})\b|"
                         r"\bsudo\b")
_FROM = re.compile(r"^\s*FROM\s+(?:--\S+\s+)*(\S+)(?:\s+AS\s+(\S+))?", re.IGNORECASE)


def _user() -> tuple[int, int]:
    """The uid/gid commands run as: the gate's own, or an unprivileged one for a root gate."""
    uid, gid = os.getuid(), os.getgid()
    return (UNPRIVILEGED, UNPRIVILEGED) if uid == 0 else (uid, gid)


class DockerSandbox(Sandbox):
    """``image``: the task's, which its own scripts run from; ``agent_image``: the one the
    agent's commands run from (the task's with the agent's install in it), else ``image``."""

    def __init__(self, provider: DockerSandboxProvider, task: Task, image: str,
                 root: Path, agent_image: str | None = None) -> None:
        self.provider = provider
        self.task = task
        self.image = image
        self.agent_image = agent_image or image
        self.root = root
        self.host_workdir = root / "work"
        self.workdir = WORKDIR
        self.task_dir = TASK_DIR
        self._io = root / "io"
        self._io.mkdir(mode=0o755, exist_ok=True)
        self._live: set[str] = set()
        self._lock = threading.Lock()
        self._relay: HostRelay | None = None

    def model_endpoint(self, base_url: str) -> str:
        """The run's meter, as a command in the container reaches it: a relay on the
        container's loopback, through a Unix socket bind-mounted read-only, to a relay in the
        gate that connects to this meter only. The container still has no network."""
        parts = urlsplit(base_url)
        if parts.hostname is None or parts.port is None:
            raise SandboxError(f"cannot relay to the meter at {base_url!r}")
        if self._relay is None:
            self._relay = HostRelay((parts.hostname, parts.port))
            shutil.copyfile(RELAY, self._io / "relay.py")
        return urlunsplit(("http", f"127.0.0.1:{RELAY_PORT}", parts.path, "", ""))

    def base_env(self) -> dict[str, str]:
        return {"WORK_DIR": WORKDIR, "HOME": HOME, "TMPDIR": "/tmp",
                "PYTHONDONTWRITEBYTECODE": "1"}

    def disk_used(self) -> int:
        """The host folders mounted into its commands (their root is read-only, their
        ``/tmp`` a tmpfs counted in their memory)."""
        return tree_bytes(self.root)

    def _mounts(self, task_visible: bool) -> list[Mount]:
        mounts = [
            Mount(WORKDIR, str(self.host_workdir), type="bind"),
            Mount(HOME, str(self.root / "home"), type="bind"),
            Mount(IO_DIR, str(self._io), type="bind", read_only=True),
        ]
        if task_visible:
            mounts.append(Mount(TASK_DIR, str(self.task.path), type="bind", read_only=True))
            if (self.root / "verify-home").is_dir():
                mounts.append(Mount(VERIFY_HOME, str(self.root / "verify-home"), type="bind"))
        if self._relay is not None:
            mounts.append(Mount(METER_DIR, str(self._relay.dir), type="bind", read_only=True))
        return mounts

    def fresh_home(self) -> str:
        """Mounted at ``VERIFY_HOME`` for the task's own scripts, emptied on each call and
        owned by the command user (never the agent's ``HOME``)."""
        home = self.root / "verify-home"
        shutil.rmtree(home, ignore_errors=True)
        home.mkdir(mode=0o700)
        if os.getuid() == 0:
            os.lchown(home, *_user())
        return VERIFY_HOME

    def _exec(self, command: str, *, env: dict[str, str], timeout: float, stdin: str | None,
              task_visible: bool) -> ExecResult:
        argv = ["bash", "-c", command]
        if stdin is not None:
            (self._io / "stdin").write_text(stdin, encoding="utf-8")
            argv = ["bash", "-c", f'exec bash -c "$1" < {IO_DIR}/stdin', "bash", command]
        if self._relay is not None and not task_visible:  # the agent's process: its relay
            argv = ["bash", "-c",
                    f'command -v python3 >/dev/null || {{ echo "{NO_PYTHON}" >&2; exit 127; }}; '
                    f"python3 -I {IO_DIR}/relay.py {RELAY_PORT} {METER_DIR}/meter.sock && "
                    'exec "$@"', "bash", *argv]
        start = time.monotonic()
        client = self.provider.client()
        limits = self.task.meta.environment
        guard = (NetGuard(self._io, IO_DIR, self.provider.options.allow_private)  # _netguard
                 if limits and limits.network else None)
        argv = guard.hold(argv) if guard else argv
        uid, gid = _user()
        try:
            container = client.containers.create(
                self.image if task_visible else self.agent_image, argv, detach=True, init=True,
                labels={LABEL: "1", OWNER_LABEL: self.provider.owner},
                user=f"{uid}:{gid}", working_dir=WORKDIR, environment=env,
                network_mode="bridge" if limits and limits.network else "none",
                cap_drop=["ALL"], security_opt=["no-new-privileges"],
                read_only=True, tmpfs={"/tmp": TMPFS}, mounts=self._mounts(task_visible),
                mem_limit=f"{(limits and limits.memory_mb) or DEFAULT_MEMORY_MB}m",
                memswap_limit=f"{(limits and limits.memory_mb) or DEFAULT_MEMORY_MB}m",
                pids_limit=(limits and limits.pids) or DEFAULT_PIDS,
                nano_cpus=int(((limits and limits.cpus) or DEFAULT_CPUS) * 1e9),
                log_config=LogConfig(type=LogConfig.types.JSON,
                                     config={"max-size": "2m", "max-file": "1"}),
            )
        except docker.errors.DockerException as exc:
            raise SandboxError(f"cannot create a container: {first_line(exc)}") from exc
        with self._lock:
            self._live.add(container.id)
        timed_out = cancelled = False
        code = -signal.SIGKILL
        try:
            if guard:  # started on no network; guarded, attached, then the command goes
                guard.detach(container)
            container.start()
            if guard:
                guard.apply(container)
            deadline = start + timeout
            while True:
                if self.cancel is not None and self.cancel.is_set():
                    cancelled = True
                    break
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    timed_out = True
                    break
                try:
                    code = int(container.wait(timeout=min(POLL_S, remaining))["StatusCode"])
                    break
                except (requests.exceptions.ConnectionError, requests.exceptions.ReadTimeout):
                    continue  # the SDK's wait timeout (a ConnectionError, not a ReadTimeout)
            if timed_out or cancelled:
                with contextlib.suppress(docker.errors.DockerException):
                    container.kill()
            stdout = container.logs(stdout=True, stderr=False).decode("utf-8", "replace")
            stderr = container.logs(stdout=False, stderr=True).decode("utf-8", "replace")
        except docker.errors.DockerException as exc:
            raise SandboxError(f"container failed: {first_line(exc)}") from exc
        finally:
            self._remove(container.id)
        if cancelled:
            raise SandboxError("cancelled")
        return ExecResult(
            returncode=-signal.SIGKILL if timed_out else code,
            stdout=clip(stdout, OUTPUT_LIMIT), stderr=clip(stderr, OUTPUT_LIMIT),
            timed_out=timed_out, duration_s=time.monotonic() - start,
        )

    def _remove(self, container_id: str) -> None:
        with contextlib.suppress(docker.errors.DockerException,
                                 requests.exceptions.RequestException):
            self.provider.client().api.remove_container(container_id, force=True)
        with self._lock:
            self._live.discard(container_id)

    def _relative(self, path: str) -> str:
        """Paths as commands see them (``/workspace/x``) to paths in the host's workspace."""
        if path == WORKDIR:
            return "."
        if path.startswith(WORKDIR + "/"):
            return path[len(WORKDIR) + 1:]
        return path

    def _read_file(self, path: str, *, max_bytes: int = READ_LIMIT,
                   truncate: bool = False) -> str:
        return read_inside(self.host_workdir, self._relative(path), max_bytes=max_bytes,
                           truncate=truncate)

    def _write_file(self, path: str, content: str) -> None:
        target = write_inside(self.host_workdir, self._relative(path), content)
        uid, gid = _user()
        if os.getuid() == 0:  # the command user must own what the gate writes for it
            for p in [target, *target.parents]:
                if p == self.host_workdir or not p.is_relative_to(self.host_workdir):
                    break
                with contextlib.suppress(OSError):
                    os.lchown(p, uid, gid)

    def _put_dir(self, source: Path, dest: str) -> None:
        """Into the host's workspace: only ``/workspace`` is mounted into the containers, so
        the repository's skills folder itself is never visible to a command."""
        target = copy_inside(self.host_workdir, source, self._relative(dest))
        if os.getuid() == 0:  # the command user must own what the gate puts there for it
            uid, gid = _user()
            for p in target.parents:
                if p == self.host_workdir or not p.is_relative_to(self.host_workdir):
                    break
                os.lchown(p, uid, gid)
            for dirpath, _dirs, filenames in os.walk(target):
                os.lchown(dirpath, uid, gid)
                for name in filenames:
                    os.lchown(os.path.join(dirpath, name), uid, gid)

    def _teardown(self) -> None:
        with self._lock:
            live = list(self._live)
        for cid in live:
            self._remove(cid)
        if self._relay is not None:
            self._relay.close()
        if not self.provider.keep:
            shutil.rmtree(self.root, ignore_errors=True)


def privileged_need(dockerfile: Path) -> str | None:
    """Why a task's commands would need privileges the per-command containers never grant
    (no-new-privileges, a non-root user, no capabilities): a setuid/setgid program or sudo
    would silently behave otherwise than under a plain ``docker run``, so the task is refused
    by name instead (the long-lived container, Harbor's, keeps the engine's defaults)."""
    try:
        lines = dockerfile.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return None
    for n, line in enumerate(lines, 1):
        if _PRIVILEGED.search(line):
            return (f"{dockerfile.parent.name}/{dockerfile.name} line {n} sets up a setuid "
                    f"program or sudo ({printable(line.strip()[:80])!r}), which the docker "
                    "sandbox's unprivileged commands (no-new-privileges, no capabilities, a "
                    "non-root user) would silently break")
    return None


class DockerSandboxProvider(SandboxProvider):
    name = "docker"
    runs_containers = True

    def __init__(self, options: SandboxOptions | None = None) -> None:
        super().__init__(options)
        self.owner = f"{socket.gethostname()}:{os.getpid()}"
        self._client: docker.DockerClient | None = None
        self._lock = threading.Lock()
        self._image_locks: dict[str, threading.Lock] = {}
        self.installed: list[str] = []  # the agent's installs this gate committed (_install)
        self.failed_installs: dict[str, str] = {}  # tag → why its install failed
        self.tampered_installs: dict[str, tuple[str, ...]] = {}  # tag → its tampering
        self.install_skill_files: dict[str, frozenset[str]] = {}  # tag → its SKILL.md files

    @property
    def pull(self) -> bool:
        return bool(self.options.pull)  # None: no registry known to be reachable

    def client(self) -> docker.DockerClient:
        with self._lock:
            if self._client is None:
                try:
                    client = docker.from_env(max_pool_size=32)
                    client.ping()
                except (docker.errors.DockerException,
                        requests.exceptions.RequestException) as exc:
                    raise SandboxError(f"no Docker engine reachable ({first_line(exc)})") \
                        from exc
                self._client = client
                self._cleanup(client)
            return self._client

    def _cleanup(self, client: docker.DockerClient) -> None:
        """Remove the containers a gate on this host left behind when it died (even by
        SIGKILL): those whose owner process is gone. Other live gates' are left alone."""
        try:
            found = client.api.containers(all=True, filters={"label": LABEL})
        except docker.errors.DockerException:
            return
        for c in found:
            if owner_gone(c.get("Labels")):
                with contextlib.suppress(docker.errors.DockerException):
                    client.api.remove_container(c["Id"], force=True)
        for image_id in installs_left_behind(client):
            with contextlib.suppress(docker.errors.DockerException):
                client.api.remove_image(image_id, force=True)

    def unavailable(self) -> str | None:
        try:
            self.client()
        except SandboxError as exc:
            return str(exc)
        return None

    def disk_paths(self) -> list[Path]:
        """The workspaces' folder, and the engine's (its containers' layers) when it is on
        this host."""
        paths = super().disk_paths()
        with contextlib.suppress(SandboxError, docker.errors.DockerException,
                                 requests.exceptions.RequestException):
            root = self.client().info().get("DockerRootDir")
            if root and os.path.isdir(root):
                paths.append(Path(root))
        return paths

    def refusal(self, task: Task) -> str | None:
        if why := task_format(task).refusal(task):
            return why
        if task.dockerfile is not None and task_format(task).lifecycle == "per_command" and (
                why := privileged_need(task.dockerfile)):
            return why
        try:
            if task.dockerfile is not None and task.image is None:
                for base in self._bases(task.dockerfile):
                    if not self._present(base) and not self.pull:
                        return (f"{task.dockerfile.relative_to(task.path)}: base image "
                                f"{base!r} is not present and pulling is off ([suite].pull)")
                return None
            image = task.image or self.options.image
            if image is None:
                return ("needs an image: [environment] image in task.toml, an "
                        "environment/Dockerfile, or [suite].image in gate.toml")
            if not self._present(image) and not self.pull:
                return (f"image {image!r} is not present and pulling is off ([suite].pull = "
                        "true pulls it)")
        except SandboxError as exc:
            return str(exc)
        return None

    def present(self, image: str) -> bool:
        return self._present(image)

    def _present(self, image: str) -> bool:
        try:
            self.client().images.get(image)
        except docker.errors.ImageNotFound:
            return False
        except docker.errors.DockerException as exc:
            raise SandboxError(f"cannot inspect image {image!r}: {first_line(exc)}") from exc
        return True

    @staticmethod
    def _bases(dockerfile: Path) -> list[str]:
        """The external images a Dockerfile builds FROM (not its own stages, not scratch)."""
        stages: set[str] = set()
        bases: list[str] = []
        for line in dockerfile.read_text(encoding="utf-8", errors="replace").splitlines():
            m = _FROM.match(line)
            if not m:
                continue
            ref, alias = m.group(1), m.group(2)
            if ref.lower() != "scratch" and ref not in stages and "$" not in ref:
                bases.append(ref)
            if alias:
                stages.add(alias)
        return bases

    def image_for(self, task: Task) -> str:
        """The task's image, built or pulled if need be (once per image, whatever the jobs)."""
        if task.dockerfile is not None and task.image is None:
            context = task.dockerfile.parent
            tag = f"agent-gate-task:{self._build_key(task.dockerfile, context)}"
            with self._image_lock(tag):
                if not self._present(tag):
                    self._build(task, context, tag)
            return tag
        image = task.image or self.options.image
        if image is None:
            raise SandboxError(self.refusal(task) or "no image")
        with self._image_lock(image):
            if not self._present(image):
                if not self.pull:
                    raise SandboxError(f"image {image!r} is not present and pulling is off")
                try:
                    self.client().images.pull(image)
                except docker.errors.DockerException as exc:
                    raise SandboxError(f"cannot pull {image!r}: {first_line(exc)}") from exc
        return image

    def _build_key(self, dockerfile: Path, context: Path) -> str:
        """The task image's tag: a digest of its build context and of the images it builds
        FROM as the engine has them now, so a rebuilt base image rebuilds the task's."""
        h = hashlib.sha256(digest_dir(context).encode())
        for base in self._bases(dockerfile):
            try:
                h.update(f"\0{base}\0{self.client().images.get(base).id}".encode())
            except docker.errors.DockerException:
                h.update(f"\0{base}\0?".encode())  # to be pulled: its name is all there is
        return h.hexdigest()[:20]

    def image_lock(self, key: str) -> threading.Lock:
        return self._image_lock(key)

    def _image_lock(self, key: str) -> threading.Lock:
        with self._lock:
            return self._image_locks.setdefault(key, threading.Lock())

    def _build(self, task: Task, context: Path, tag: str) -> None:
        """Build the task's image, within its ``build_timeout_sec`` (Harbor's: the whole
        environment start, ``trial.py:_start_agent_environment``): past it the build's
        connection is cut, which cancels the build in the engine. A failed build is reported
        with the build's own error and the end of its output, not its last line alone."""
        assert task.dockerfile is not None
        api = self.client().api
        log = _BuildLog()
        error: list[str] = []
        try:
            stream = api.build(path=str(context), dockerfile=task.dockerfile.name, tag=tag,
                               rm=True, forcerm=True, pull=self.pull, labels={LABEL: "1"},
                               decode=True)
        except (docker.errors.DockerException, OSError) as exc:
            raise SandboxError(f"cannot build the image of {task.id}: {first_line(exc)}") \
                from exc
        # the SDK's streaming response (an argument of its generator): cut on a timeout
        frame = getattr(stream, "gi_frame", None)
        response = frame.f_locals.get("response") if frame is not None else None
        done = threading.Event()
        broken: list[BaseException] = []

        def pump() -> None:
            try:
                for item in stream:
                    if isinstance(item, dict):
                        if item.get("error"):
                            error.append(strip_ansi(str(item["error"])).strip())
                        elif item.get("stream"):
                            log.add(str(item["stream"]))
            except Exception as exc:  # the cut connection of a build past its timeout
                broken.append(exc)
            finally:
                done.set()

        threading.Thread(target=pump, name="gate-build", daemon=True).start()
        deadline = time.monotonic() + (task.build_timeout or float("inf"))
        while not done.wait(POLL_S):
            if time.monotonic() < deadline and not (self.cancel and self.cancel.is_set()):
                continue
            if response is not None:
                with contextlib.suppress(Exception):
                    sock = api._get_raw_response_socket(response)
                    getattr(sock, "_sock", sock).shutdown(socket.SHUT_RDWR)
            done.wait(10)
            if self.cancel and self.cancel.is_set():
                raise SandboxError("cancelled")
            raise SandboxError(f"the image build of {task.id} took longer than its "
                               f"build_timeout_sec ({task.build_timeout:g} s): stopped")
        if error or broken:
            tail = log.lines()[-BUILD_LINES:]
            why = error[-1] if error else first_line(broken[0])
            said = clip("\n".join([*tail, why] if tail else [why]), BUILD_CHARS)
            raise SandboxError(f"cannot build the image of {task.id}: {why[:300]}\n"
                               f"the build's output ends:\n{said}")

    def _create(self, task: Task, run_name: str) -> Sandbox:
        return self._make(task, run_name, self.image_for(task))

    def _create_installed(self, task: Task, run_name: str, install: AgentInstall) -> Sandbox:
        """From the task's image with the agent's install committed in it (:mod:`._install`:
        once per image and script; the seconds this run waited for it are its
        ``install_s``)."""
        image = self.image_for(task)
        installed, waited = installed_image(self, task, image, install)
        sandbox = self._make(task, run_name, image, installed)
        sandbox.install_s = waited
        return sandbox

    def _make(self, task: Task, run_name: str, image: str,
              installed: str | None = None) -> Sandbox:
        """``installed``: the image with the agent's install, which a long-lived container
        starts from, and the per-command sandbox runs the agent's commands (only) from."""
        root = make_workspace(task, run_name, self.options.base_dir, keep=self.keep)
        fmt = task_format(task)
        if fmt.lifecycle == "per_run":  # one long-lived container for the whole run
            box = DockerRunContainer(self, task, installed or image, root,
                                     fmt.container_spec(task))
            box.cancel = self.cancel
            try:
                box.start()
            except BaseException:
                box.close()
                raise
            return box
        sandbox = DockerSandbox(self, task, image, root, agent_image=installed)
        if os.getuid() == 0:
            uid, gid = _user()
            try:
                for top in (root / "work", root / "home"):
                    os.lchown(top, uid, gid)
                    for dirpath, dirnames, filenames in os.walk(top):
                        for name in (*dirnames, *filenames):
                            os.lchown(os.path.join(dirpath, name), uid, gid)
            except OSError as exc:
                sandbox.close()
                raise SandboxError(f"cannot prepare workspace: {exc}") from exc
        return sandbox

    def close(self) -> None:
        if self.installed:
            with contextlib.suppress(SandboxError):
                remove_installed(self, self.installed)
            self.installed = []
        with self._lock:
            client, self._client = self._client, None
        if client is not None:
            with contextlib.suppress(Exception):
                client.close()


class _BuildLog:
    """The end of a build's output. The engine streams it in chunks as the build's commands
    write them, not a line each (apt writes "W" and ": Failed to fetch ..." apart, a
    character-at-a-time writer one character a chunk): the chunks are joined before they are
    cut into lines, a terminal's carriage return keeps what was written last on its line,
    and only the last :data:`BUILD_KEEP` characters are kept."""

    def __init__(self) -> None:
        self._text = ""
        self._cut = False  # the start was dropped: the first line kept may be partial

    def add(self, chunk: str) -> None:
        self._text += chunk
        if len(self._text) > 2 * BUILD_KEEP:
            self._text, self._cut = self._text[-BUILD_KEEP:], True

    def lines(self) -> list[str]:
        """The output's non-blank lines, colour codes stripped."""
        text = strip_ansi(self._text.replace("\r\n", "\n"))
        lines = text.split("\n")[1:] if self._cut else text.split("\n")
        out = []
        for line in lines:
            shown = next((part for part in reversed(line.split("\r")) if part.strip()), "")
            if shown.strip():
                out.append(shown.strip())
        return out
