"""The long-lived container life cycle on Docker: one container per run (a :class:`RunContainer`).

A task whose state is its image's filesystem (Harbor's) gets one container of its image, its
``ENTRYPOINT`` kept and its command a keep-alive (Harbor's compose file replaces the command
only, with ``sleep infinity``): the image's ``sh`` blocked on its own ``read`` of the
container's stdin, kept open by the engine and written by no one (:data:`KEEPALIVE`). It
starts no process, ever, so nothing of the agent's is ever started in its place, nor needs
sparing by its name (:mod:`._procs`); every command of the run is a
``docker exec`` in it, in the format's working directory (else the image's ``WORKDIR``) as the
format's user (else the image's ``USER``). The format (:mod:`gate.formats`) drives the phases
through the :class:`RunContainer` steps: :meth:`end_phase` kills every process the agent phase
started (:mod:`._procs`; a task in ``[suite].reward_unprotected`` keeps its services),
:meth:`set_network` attaches it to the default bridge
(``public``) or detaches it (``no-network``: loopback only), :meth:`upload_dir`,
:meth:`reset_dir` and :meth:`run_as`.

Security settings are Harbor's own: its docker environment (``environments/docker/
docker-compose-*.yaml`` in harbor-framework/harbor) starts the container with the engine's
defaults, so here too the default capability set but ``NET_RAW`` (not Harbor's: root's packet
socket would hand-build frames to a host service past the network guard; ``[suite].net_raw``
gives it back per task), no ``no-new-privileges`` (a setuid helper, ``sudo``, works as under a
plain ``docker run`` of the image), a writable root (verifiers install their tools at verify
time). The container starts on no network, and is attached only once :mod:`._netguard` has set
its rules (nothing of the image, its ``ENTRYPOINT`` first, runs unguarded). Limits: the task's
``cpus`` / ``memory_mb`` (as Harbor's resources file), and the gate's own pids limit
(:data:`PIDS`, not Harbor's: a fork bomb must not take down a shared CI runner), the gate's
labels, bounded logs.

The runner's ``.runner/`` files (the final message, notes, a command agent's prompt) live in
the format's ``runner_dir`` (Harbor's ``/logs/agent``), so the working directory holds only
the task's files. A command that times out (or a cancelled run) is killed with every process
it started, found by a per-command variable in ``/proc/*/environ``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import io
import itertools
import os
import posixpath
import shlex
import shutil
import tarfile
import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import urlsplit, urlunsplit

import docker.errors
import requests.exceptions
from docker.types import LogConfig, Mount

from gate.core.tasks import Task
from gate.errors import ContainerStepError
from gate.sandbox._base import (
    READ_LIMIT,
    ContainerSpec,
    ExecResult,
    RunContainer,
    SandboxError,
)
from gate.sandbox._dexec import EXEC_TAG, Tagged, follow
from gate.sandbox._engine import DIR as _DIR
from gate.sandbox._engine import (
    LABEL,
    METER_DIR,
    NO_PYTHON,
    OWNER_LABEL,
    RELAY,
    RELAY_PORT,
    Chunks,
    Engine,
    HostRelay,
    first_line,
    stopped,
)
from gate.sandbox._engine import SPECIAL as _SPECIAL
from gate.sandbox._engine import SYMLINK as _SYMLINK
from gate.sandbox._procs import SCRIPT as PROC_SCRIPT
from gate.sandbox._procs import Ident, Listing, Proc, leftovers
from gate.sandbox._procs import parse as parse_procs
from gate.sandbox._procs import whole as whole_listing
from gate.sandbox._quota import CONTAINER_POLL_S
from gate.sandbox._watch import Watch

if TYPE_CHECKING:
    from gate.core.skills import Skill

_T = TypeVar("_T")
#: the container's command: ``sh`` reading its stdin (``stdin_open``: a pipe the engine holds
#: open, so ``read`` blocks, using no CPU; a line written to it is read and the loop goes on).
#: It forks nothing: no renewed ``sleep`` that a root agent's trojan ``/usr/bin/sleep`` would
#: replace. An ``ENTRYPOINT`` that closed stdin: the same process execs the image's ``sleep``
#: at once, before the agent phase (the same pid and start time: still the container's own)
KEEPALIVE = "trap 'exit 0' TERM; while read _; do :; done; exec sleep infinity"
PIDS = 4096
PHASE_ROUNDS = 5  # rounds of killing what the agent phase left running
PHASE_STEP = "phase-boundary"  # the gate's step that ends the agent phase (its name in a reason)
_IGNORED = {"__pycache__", ".DS_Store", ".git"}
SKILL_FINDS = 1000  # SKILL.md files listed at most
SKILL_FIND_S = 60  # seconds the search for them may take
SKILL_NAMED = 10  # named in the run's notes at most
#: times a short probe whose answer is its output is asked: under load the engine (Docker
#: 20.10) now and then hands an exec's output back empty or cut short (seen: only ``id -u``'s
#: line of ``id -u; id -g``, nothing of ``printf "$HOME"``), which is no answer
ASKS = 3
PROBE_S = 30  # a probe of the gate's own (a read): its timeout


def _no_exit_code(res: ExecResult) -> bool:
    """The engine gave no exit code (not a timeout): it lost the exec's end."""
    return res.returncode < 0 and not res.timed_out


def _tail(text: str) -> str:
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    return lines[-1][:200] if lines else "(no output)"


class DockerRunContainer(RunContainer):
    """One long-lived container of ``image`` for a run of ``task``, as ``spec`` says."""

    def __init__(self, provider: Engine, task: Task, image: str, root: Path,
                 spec: ContainerSpec) -> None:
        self.provider = provider
        self.task = task
        self.image = image
        self.root = root
        self.spec = spec
        self.workdir = spec.workdir or "/"
        self.task_dir = "/"
        self.step_rewards = []
        self._seq = itertools.count()
        self._container_id: str | None = None
        self._network: str | None = None
        self._ids: dict[str, tuple[int, int]] = {}
        self._at_start: set[Ident] = set()  # the processes running once it started
        self._own: set[Ident] = set()  # the gate's own processes in it (its meter relays)
        # a short private directory (a socket path has at most 108 bytes), mounted read-only:
        # relay.py, and the socket to this run's meter once a command agent asks for it
        self._meter_dir = Path(tempfile.mkdtemp(prefix="gate-meter-"))
        os.chmod(self._meter_dir, 0o755)
        shutil.copyfile(RELAY, self._meter_dir / "relay.py")
        self._relay: Any = None
        self._unguarded: str | None = None  # why the network guard could not be set
        self._watch = Watch(provider, task.id, image)  # the tamper check

    # ----- lifecycle ----------------------------------------------------------------------

    def start(self) -> None:
        client = self.provider.client()
        spec = self.spec
        try:
            config = client.api.inspect_image(self.image).get("Config") or {}
            ncpu = float(client.info().get("NCPU") or os.cpu_count() or 1)
        except docker.errors.DockerException as exc:
            raise SandboxError(f"cannot inspect image {self.image!r}: {first_line(exc)}") \
                from exc
        self.workdir = spec.workdir or config.get("WorkingDir") or "/"
        try:
            container = client.containers.create(
                self.image, command=["sh", "-c", KEEPALIVE], detach=True, stdin_open=True,
                labels={LABEL: "1", OWNER_LABEL: self.provider.owner},
                environment=spec.env, network_mode="bridge", cap_drop=self._cap_drop(),
                mounts=[Mount(METER_DIR, str(self._meter_dir), type="bind", read_only=True)],
                mem_limit=f"{spec.memory_mb}m", memswap_limit=f"{spec.memory_mb}m",
                pids_limit=PIDS, nano_cpus=int(min(spec.cpus, ncpu) * 1e9),
                log_config=LogConfig(type=LogConfig.types.JSON,
                                     config={"max-size": "1m", "max-file": "1"}),
            )
        except docker.errors.DockerException as exc:
            raise SandboxError(f"cannot create a container: {first_line(exc)}") from exc
        self._container_id = container.id
        self._network = "public"
        self.set_network("no-network")  # nothing in it runs before its guard (_netguard)
        try:
            container.start()
        except docker.errors.DockerException as exc:
            raise SandboxError(f"cannot start the container: {first_line(exc)}") from exc
        self._guard(container)
        self.set_network(spec.network)
        self._root_sh(f"mkdir -p {shlex.quote(self.workdir)}", step="workdir")
        if spec.runner_dir:
            self.reset_dir(spec.runner_dir)
        self._at_start = {p.ident for p in self._listing("process-listing").procs.values()}

    def _cap_drop(self) -> list[str]:
        """``NET_RAW`` (Harbor keeps it): root's packet socket would hand-build frames to a
        host service past the guard's rules. ``[suite].net_raw``, the base branch's, gives it
        back to the tasks it names."""
        return [] if self.task.id in self.provider.options.net_raw else ["NET_RAW"]

    def _guard(self, container: Any) -> None:
        """Keep a phase with network off this host's services (:mod:`._netguard`): the rules
        go into the container's own namespace once it started on no network, before it is
        ever attached, and hold across the phases' detach and attach. Where they cannot be
        set, a public phase is refused with the reason (:meth:`set_network`), never run
        exposed; a task without network runs."""
        from gate.sandbox._netguard import guard_container

        try:
            guard_container(container, allow=self.provider.options.allow_private)
        except SandboxError as exc:
            self._unguarded = str(exc)

    def _refuse_unguarded(self) -> None:
        if self._unguarded is not None:
            raise SandboxError(f"a phase with network: {self._unguarded}")

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

    disk_poll_s = CONTAINER_POLL_S

    def disk_used(self) -> int:
        """Its writable layer (the engine's ``SizeRw``: what it wrote over its image)."""
        found = self.provider.client().api.containers(all=True, size=True,
                                                      filters={"id": self._cid})
        return int((found[0].get("SizeRw") or 0) if found else 0)

    # ----- the RunContainer steps ---------------------------------------------------------

    def end_phase(self) -> tuple[list[str], list[str]]:
        """Kill every process the agent phase started (:mod:`._procs`); a task the suite lists
        in ``reward_unprotected`` keeps its services. Each round first stops every process
        but pid 1 (``kill -STOP -1``: at once, so nothing forks or changes its pid while it
        is listed), kills what is the agent phase's, and resumes the rest; it ends when a
        round finds nothing. The gate's own relay is killed too, and not named."""
        self.check_open()
        services = self.task.id in self.provider.options.reward_unprotected
        stopped: set[str] = set()
        for _ in range(PHASE_ROUNDS):
            agents, gates, kept = self._phase_round(services)
            if not agents and not gates:
                return sorted(stopped), sorted({p.cmd[:200] for p in kept})
            stopped |= {p.cmd[:200] for p in agents}
        raise ContainerStepError(PHASE_STEP, "the agent phase's processes could not be "
                                 "stopped: the verifier does not start")

    def _phase_round(self, services: bool) -> tuple[list[Proc], list[Proc], list[Proc]]:
        """Stop all but pid 1, list, kill the agent phase's (and the gate's own), resume.
        Each is a step of the gate's own: one that cannot run (no ``sh``, no ``awk``, the
        container stopped) fails the round, never leaves the agent's processes running."""
        self._root_sh("kill -STOP -1 || true", step=PHASE_STEP, timeout=30)  # sh's builtin
        resume = "kill -CONT -1"
        try:
            agents, gates, kept = leftovers(self._listing(PHASE_STEP), self._at_start,
                                            own=self._own, services=services)
            if agents or gates:
                resume = f"kill -9 {' '.join(str(p.pid) for p in agents + gates)}; {resume}"
        finally:
            self._root_sh(f"{resume} || true", step=PHASE_STEP, timeout=30)
        return agents, gates, kept

    def _listing(self, step: str) -> Listing:
        return parse_procs(self.probe(PROC_SCRIPT, step=step, complete=whole_listing))

    def mark_verifier_world(self) -> None:
        """What the verifier's world is now is the task's own (:mod:`._watch`)."""
        self._watch.mark(self._cid)

    def tampering(self) -> list[str]:
        """What the install and, since the mark, anything else changed in the verifier's world
        (:mod:`._watch`); none for a task in ``[suite].tamper_exempt``, and its notes say so."""
        self.check_open()
        found = self._watch.tampering(self._cid)
        self.skill_notes = tuple(dict.fromkeys((*self.skill_notes, *self._watch.notes)))
        return found

    def set_network(self, mode: str) -> None:
        want = "public" if mode == "public" else "no-network"
        if self._network == want:
            return
        if want == "public":
            self._refuse_unguarded()
        try:
            bridge = self.provider.client().networks.get("bridge")
            if want == "public":
                bridge.connect(self._cid)
            else:
                bridge.disconnect(self._cid, force=True)
        except docker.errors.DockerException as exc:
            raise SandboxError(f"cannot set the network to {want}: {first_line(exc)}") \
                from exc
        self._network = want

    def reset_dir(self, target: str) -> None:
        q = shlex.quote(target)
        self._root_sh(f"rm -rf {q} && mkdir -p {q} && chmod 777 {q}", step="folder-reset")

    def upload_dir(self, source: Path, target: str, *, clear: bool = True) -> None:
        q = shlex.quote(target)
        self._root_sh(f"{f'rm -rf {q} && ' if clear else ''}mkdir -p {q}", step="upload")
        try:
            self.provider.client().api.put_archive(self._cid, target,
                                                   _tar_of(source, 0, 0, "root"))
        except docker.errors.DockerException as exc:
            raise SandboxError(f"cannot upload {source.name}/: {first_line(exc)}") from exc

    def run_as(self, argv: list[str], *, user: str | None, env: dict[str, str],
               timeout: float) -> ExecResult:
        self.check_open()
        return self._run(argv, user=(self.spec.user or "") if user is None else user, env=env,
                         timeout=timeout)

    # ----- the contract -------------------------------------------------------------------

    def base_env(self) -> dict[str, str]:
        return {"WORK_DIR": self.workdir}

    def path_of(self, rel: str) -> str:
        return self._abs(rel)

    def model_endpoint(self, base_url: str) -> str:
        """As in the docker sandbox: a relay on the container's loopback, through a Unix
        socket to a relay in the gate that connects to this run's meter only."""
        parts = urlsplit(base_url)
        if parts.hostname is None or parts.port is None:
            raise SandboxError(f"cannot relay to the meter at {base_url!r}")
        if self._relay is None:
            self._relay = HostRelay((parts.hostname, parts.port), directory=self._meter_dir)
        return urlunsplit(("http", f"127.0.0.1:{RELAY_PORT}", parts.path, "", ""))

    def _exec(self, command: str, *, env: dict[str, str], timeout: float, stdin: str | None,
              task_visible: bool) -> ExecResult:
        argv = ["bash", "-c", command]
        user = self.spec.user or ""
        if stdin is not None:
            path = f"{self.spec.runner_dir or '/tmp'}/.stdin-{next(self._seq)}"
            self._put(path, stdin.encode("utf-8"), user)
            argv = ["bash", "-c", f'exec bash -c "$1" < {path}', "bash", command]
        if self._relay is not None:  # a command agent: its relay to the meter first
            started = self._start_relay(user, env, timeout)
            if started is not None:
                return started
        return self._run(argv, user=user, env=env, timeout=timeout)

    def _start_relay(self, user: str, env: dict[str, str], timeout: float) -> ExecResult | None:
        """Start the meter relay as the agent's user, in an exec of its own, and remember
        which process it is (its pid and start time, as it prints them): the phase boundary
        kills it without naming it as the agent's. The exec's result when it failed; an
        answer the engine lost (no exit code, or no announcement from a relay that exited 0)
        is not the relay's failure: the agent runs, and a relay that did not start leaves it
        no model to reach, while one that did is stopped with the agent phase's processes."""
        res = self._run(["bash", "-c",
                         f'command -v python3 >/dev/null || {{ echo "{NO_PYTHON}" >&2; '
                         f"exit 127; }}; exec python3 -I {METER_DIR}/relay.py {RELAY_PORT} "
                         f"{METER_DIR}/meter.sock --announce"],
                        user=user, env=env, timeout=min(timeout, 60))
        if res.returncode != 0 and not _no_exit_code(res):
            return res
        pid, _, start = res.stdout.strip().partition(" ")
        if pid.isdigit() and start.isdigit():
            self._own.add((int(pid), start))
        return None

    def install_skills(self, skills: Sequence[Skill], *, only: bool = False) -> list[Skill]:
        """The run's skills where a skill-loading agent finds them: each agent user's own
        ``~/.claude/skills/<folder>/`` (:attr:`ContainerSpec.skill_users`), as Harbor puts
        them (``src/harbor/agents/installed/claude_code.py`` in harbor-framework/harbor: at
        the agent's start it copies ``~/.claude/skills`` and the task's ``skills_dir`` into
        Claude Code's config directory), never into the task's working directory, which is
        the task's. The task's own skills the run does not get are removed from every folder
        an agent reads (:meth:`_skill_dirs`); under a condition (``only``) every other skill
        there too. Each ``SKILL.md`` elsewhere in the task's image (never one the agent's own
        ``[agent] install`` put there), and each skill of the task the gate could not honour,
        is named in the run's notes (:attr:`skill_notes`)."""
        from gate.core.skills import shipped_skills

        self.check_open()
        if not self.spec.skill_users:
            return super().install_skills(skills, only=only)
        homes = {u: self._home(u) for u in self.spec.skill_users}
        own, notes = shipped_skills(self.task)
        dirs = self._skill_dirs(homes.values())
        found, searched = self._skill_files()
        keep, shipped = {s.folder for s in skills}, {s.folder for s in own}
        in_dirs, elsewhere = _skill_folders(found, dirs)
        # the agent's own install (a pip package's bundled skills) is no skill of the task's
        own_install = self.provider.install_skill_files.get(self.image, frozenset())
        elsewhere = [p for p in elsewhere if p not in own_install]
        drop = [p for p in in_dirs if posixpath.basename(p) not in keep
                and (only or posixpath.basename(p) in shipped)]
        if drop:
            self._root_sh(f"rm -rf {' '.join(map(shlex.quote, drop))}", step="skills")
        for user, home in homes.items():
            for skill in skills:
                self._put_tree(skill.path, f"{home.rstrip('/')}/.claude/skills/{skill.folder}",
                               user, home)
        self.skill_notes = (*notes, *_elsewhere_notes(elsewhere, searched))
        home = homes.get(self.spec.user or "", next(iter(homes.values())))
        return [dataclasses.replace(s, location=f"{home.rstrip('/')}/.claude/skills/"
                                    f"{s.folder}/SKILL.md") for s in skills]

    def _home(self, user: str) -> str:
        """``user``'s home directory in the container (``$HOME`` as ``docker exec`` sets it
        from the image's ``/etc/passwd``)."""
        home, res = self._ask(["sh", "-c", 'printf %s "$HOME"'], user, _absolute)
        if home is None:
            raise SandboxError(f"cannot find the home directory of the user "
                               f"{user or '(image default)'!r}: {_tail(res.output)}")
        return home

    def _ask(self, argv: list[str], user: str, parse: Callable[[str], _T | None],
             ) -> tuple[_T | None, ExecResult]:
        """A short probe's answer (``parse`` of its output, None: no answer), asked up to
        :data:`ASKS` times; with the last exec's result."""
        for _ in range(ASKS):
            res = self._run(argv, user=user, env={}, timeout=30)
            found = parse(res.stdout) if res.returncode == 0 else None
            if found is not None:
                break
        return found, res

    def _skill_dirs(self, homes: Iterable[str]) -> list[str]:
        """Every folder a skill-loading agent reads skills from: each agent user's
        ``~/.claude/skills``, the working directory's ``.claude/skills``, the task's
        ``skills_dir`` and every place its Dockerfile copies its skills to."""
        dirs = {posixpath.join(h, ".claude/skills") for h in homes}
        dirs.add(posixpath.join(self.workdir, ".claude/skills"))
        dirs.update(self.spec.baked_skills)
        return sorted({posixpath.normpath(d) for d in dirs} - {"/"})

    def _skill_files(self) -> tuple[list[str], bool]:
        """Every ``SKILL.md`` in the container's own filesystem (at most :data:`SKILL_FINDS`),
        and whether the search finished."""
        res = self._run(["sh", "-c", "find / -xdev -type f -name SKILL.md 2>/dev/null | "
                         f"head -n {SKILL_FINDS}"], user="0", env={}, timeout=SKILL_FIND_S)
        return [ln for ln in res.stdout.splitlines() if ln.startswith("/")], not res.timed_out

    def _abs(self, path: str) -> str:
        """Paths as the runner and the agent name them, to absolute paths in the container
        (``.runner/x`` is in the format's runner directory)."""
        runner = self.spec.runner_dir
        if runner and (path == ".runner" or path.startswith(".runner/")):
            return posixpath.normpath(runner + path[len(".runner"):])
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
            raise OSError(errno.EIO, first_line(exc), path) from exc
        mode, size = int(stat.get("mode", 0)), int(stat.get("size", 0))
        if mode & _DIR:
            raise IsADirectoryError(errno.EISDIR, "is a directory", path)
        if mode & (_SYMLINK | _SPECIAL):
            raise OSError(errno.EINVAL, "not a regular file", path)
        if size > max_bytes and not truncate:
            raise OSError(errno.EFBIG, f"{size} bytes, over the gate's limit of {max_bytes}",
                          path)
        with tarfile.open(fileobj=io.BufferedReader(Chunks(iter(chunks))), mode="r|") as tf:
            member = tf.next()
            fh = tf.extractfile(member) if member is not None else None
            if fh is None:
                raise OSError(errno.EINVAL, "not a regular file", path)
            data = fh.read(max_bytes)
        return data.decode("utf-8", errors="replace")

    def _write_file(self, path: str, content: str) -> None:
        target = self._abs(path)
        user = self.spec.user or ""
        parent = posixpath.dirname(target)
        res = self._run(["mkdir", "-p", parent], user=user, env=self.command_env(), timeout=30,
                        step="file-write")
        if res.returncode != 0:
            self._check_running("file-write")
            raise PermissionError(errno.EACCES, _tail(res.output), path)
        self._put(target, content.encode("utf-8"), user)

    # ----- the engine ---------------------------------------------------------------------

    @property
    def container_id(self) -> str:
        return self._cid

    def put_script(self, target: str, text: str) -> None:
        """``text`` at ``target``, root's, executable (the agent's install script)."""
        self._put(target, text.encode("utf-8"), "0", mode=0o755)

    @property
    def _cid(self) -> str:
        if self._container_id is None:
            raise SandboxError("the container is not running")
        return self._container_id

    def _uid_gid(self, user: str) -> tuple[int, int]:
        """The user's uid and gid, asked once (:meth:`_ask`)."""
        if user not in self._ids:
            ids, res = self._ask(["sh", "-c", "id -u; id -g"], user, _two_ids)
            if ids is None:
                why = (f"cannot resolve the user {user or '(image default)'!r} "
                       f"(exit {res.returncode}): {_tail(res.output)}")
                # its probe could not run (no sh): the container's; an empty answer: the engine's
                raise (ContainerStepError("user-lookup", why) if res.returncode > 0
                       else SandboxError(why))
            self._ids[user] = ids
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
            raise OSError(errno.EIO, first_line(exc), target) from exc
        if not ok:
            raise OSError(errno.EIO, "the engine refused the file", target)

    def _put_dir(self, source: Path, dest: str) -> None:
        """``dest`` (in the image's ``WORKDIR``) replaced by a copy of ``source``, owned by the
        agent's user (it may edit a skill's files as in any workspace)."""
        self._put_tree(source, self._abs(dest), self.spec.user or "", self.workdir)

    def _put_tree(self, source: Path, target: str, user: str, top: str) -> None:
        """``target`` replaced by a copy of ``source``, owned by ``user``, as are the folders
        made for it below ``top`` (``.claude/skills``, ``.claude``)."""
        uid, gid = self._uid_gid(user)
        owned, parent = [target], posixpath.dirname(target)
        while parent.startswith(top.rstrip("/") + "/") and parent != top:  # .claude/skills
            owned.append(parent)
            parent = posixpath.dirname(parent)
        self._root_sh(f"rm -rf {shlex.quote(target)} && mkdir -p {shlex.quote(target)} && "
                      f"chown {uid}:{gid} {' '.join(map(shlex.quote, owned))}", step="copy")
        try:
            ok = self.provider.client().api.put_archive(self._cid, target,
                                                        _tar_of(source, uid, gid, ""))
        except docker.errors.DockerException as exc:
            raise SandboxError(f"cannot put {source.name}/ in the container: "
                               f"{first_line(exc)}") from exc
        if not ok:
            raise SandboxError(f"the engine refused {source.name}/")

    def _root_sh(self, script: str, *, step: str, timeout: float = 60) -> ExecResult:
        """A step of the gate's own: ``script`` as root with ``sh``. Its command failing (a
        non-zero exit, a timeout) is the container's failure (:class:`ContainerStepError`),
        never the engine's."""
        res = self._run(["sh", "-c", script], user="0", env={}, timeout=timeout, step=step)
        if _no_exit_code(res):  # the engine lost it
            self._check_running(step)
            raise SandboxError(f"the gate's {step} step: the engine gave no exit code")
        return self._succeeded(res, step, timeout)

    def probe(self, script: str, *, step: str, complete: Callable[[str], bool]) -> str:
        lost = 0  # answers with no exit code: the engine's
        for _ in range(ASKS):
            res = self._run(["sh", "-c", script], user="0", env={}, timeout=PROBE_S, step=step)
            if _no_exit_code(res):
                lost += 1
                continue
            if complete(self._succeeded(res, step, PROBE_S).stdout):
                return res.stdout
        self._check_running(step)
        if lost:
            raise SandboxError(f"the gate's {step} step: the engine lost its answer {ASKS} "
                               "times")
        # it ran and exited 0 each time, never saying all of it: a `sh` that runs nothing
        # does that, not an engine that lost one answer now and then
        raise ContainerStepError(step, f"exit 0 {ASKS} times without its whole answer: "
                                       f"{_tail(res.output) or '(nothing)'}")

    def _succeeded(self, res: ExecResult, step: str, timeout: float) -> ExecResult:
        """``res``, unless its command failed: the container's failure then."""
        if res.returncode != 0 or res.timed_out:
            self._check_running(step)
            why = f"timed out after {timeout:g} s" if res.timed_out else f"exit {res.returncode}"
            raise ContainerStepError(step, f"{why}: {_tail(res.output)}")
        return res

    def _check_running(self, step: str) -> None:
        """Where a step failed, whose failure it is: the container's own
        (:class:`ContainerStepError`) when it is no longer running (its pid 1 ended: something
        in it stopped it), else the caller says (the engine's, or the command's)."""
        if (ended := stopped(self.provider.client(), self._cid)) is not None:
            raise ContainerStepError(step, f"the container stopped ({ended})")

    def _run(self, argv: list[str], *, user: str, env: dict[str, str], timeout: float,
             step: str = "command") -> ExecResult:
        """One ``docker exec``: bounded output; on timeout or cancel, it and everything it
        started (every process carrying its tag) is killed. One the engine refuses is the
        engine's failure, or ``step``'s when the container stopped (:meth:`_check_running`)."""
        tag = f"{os.getpid()}-{next(self._seq)}"  # every process it starts carries it
        api = self.provider.client().api
        start = time.monotonic()
        try:
            exec_id = api.exec_create(self._cid, argv, user=user,
                                      environment={**env, EXEC_TAG: tag},
                                      workdir=self.workdir)["Id"]
        except (docker.errors.DockerException, requests.exceptions.RequestException) as exc:
            self._check_running(step)  # it stopped: the container's failure, not the engine's
            raise SandboxError(f"cannot run in the container: {first_line(exc)}") from exc
        return follow(api, self._cid, exec_id, Tagged(tag, user), timeout=timeout,
                      cancel=self.cancel, start=start)


HarborSandbox = DockerRunContainer  # the name it had while only Harbor's format used it


def _absolute(text: str) -> str | None:
    """A probe's answer that is an absolute path."""
    return text.strip() if text.strip().startswith("/") else None


def _two_ids(text: str) -> tuple[int, int] | None:
    """A probe's answer of two numbers (``id -u; id -g``)."""
    found = text.split()[:2]
    return (int(found[0]), int(found[1])) if len(found) == 2 and all(
        x.isdigit() for x in found) else None


def _skill_folders(found: list[str], dirs: list[str]) -> tuple[list[str], list[str]]:
    """Of the ``SKILL.md`` paths ``found``: the skill folders in ``dirs`` (``<dir>/<folder>/``
    holding one), and the paths outside every such folder."""
    folders = sorted({posixpath.dirname(p) for p in found
                      if posixpath.dirname(posixpath.dirname(p)) in dirs})
    elsewhere = [p for p in found if not any(p.startswith(f + "/") for f in folders)]
    return folders, elsewhere


def _elsewhere_notes(paths: list[str], searched: bool) -> list[str]:
    """The run's notes on ``SKILL.md`` files outside every skill folder: left as the image has
    them (a skill-loading agent may still be pointed at one), named so a condition's numbers
    are never silently wrong."""
    notes = []
    if paths:
        shown = ", ".join(sorted(paths)[:SKILL_NAMED])
        more = f" and {len(paths) - SKILL_NAMED} more" if len(paths) > SKILL_NAMED else ""
        notes.append(f"gate: SKILL.md outside the skill folders, left as the image has it "
                     f"(no condition switches it): {shown}{more}")
    if not searched:
        notes.append(f"gate: the image's search for SKILL.md files took longer than "
                     f"{SKILL_FIND_S} s and was stopped: a skill elsewhere may be unnamed")
    return notes


def _tar_of(source: Path, uid: int, gid: int, owner: str) -> bytes:
    """``source``'s files (what ``_IGNORED`` names left out) as a tar archive, every entry
    owned by ``uid``:``gid`` (named ``owner``; "" for ids only)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tf:
        for p in sorted(source.rglob("*")):
            if any(part in _IGNORED for part in p.relative_to(source).parts):
                continue
            info = tf.gettarinfo(str(p), arcname=p.relative_to(source).as_posix())
            info.uid, info.gid = uid, gid
            info.uname = info.gname = owner
            if info.isreg():
                with p.open("rb") as fh:
                    tf.addfile(info, fh)
            elif info.isdir():
                tf.addfile(info)
    return buf.getvalue()
