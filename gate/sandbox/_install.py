"""The agent's install (``[agent] install``), once per image and script within a job.

Harbor installs its agents into the task's container in a setup phase before the agent runs,
outside the agent's timeout (``agents/installed/*``: an install script run as root). The gate
does it once per (image, script) instead of once per run: the script runs as root in a
container of its own, started from the task's image as a run's long-lived container is
(:class:`~gate.sandbox._harbor.DockerRunContainer`: started on no network, guarded by
:mod:`._netguard` before it is attached to the default bridge, ``NET_RAW`` dropped, the pids
and memory limits), under ``install_timeout_sec``; the container is then committed into an
image tagged by a digest of the image's id and the script (labelled ``agent-gate``, owned by
this gate), and removed with every process the script left. Every run of that image, every
replication and task, starts from the committed image: the install's leftovers never meet the
agent, and its time is never the run's. A lock per tag keeps two runs from installing at once;
a failed install (the registry unreachable included) is remembered and every run of that image
is an infra error naming the end of its output. The images go when the provider closes (the
end of the job), or with the next gate's start when the one that made them died.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import tempfile
import time
from pathlib import Path

import docker
import docker.errors
import requests.exceptions

from gate._files import clip, strip_ansi
from gate.core.tasks import Task, task_format
from gate.sandbox._base import AgentInstall, ContainerSpec, ExecResult, SandboxError
from gate.sandbox._engine import LABEL, OWNER_LABEL, Engine, owner_gone
from gate.sandbox._harbor import DockerRunContainer
from gate.sandbox._watch import look, world_of
from gate.secrets import mask_credentials

REPOSITORY = "agent-gate-install"
INSTALL_LABEL = "agent-gate.install"  # on a committed image: the digest of (image, script)
TAIL_LINES = 15  # lines of a failed install's output in its error
TAIL_CHARS = 2000
SCRIPT_PATH = "/tmp/.gate-agent-install"


class _InstallContainer(DockerRunContainer):
    def _cap_drop(self) -> list[str]:
        """``NET_RAW`` always: ``[suite].net_raw`` grants a task's own phases raw sockets,
        never the agent's install (PR code, shared by every task of the image)."""
        return ["NET_RAW"]


def install_tag(image_id: str, script: str, owner: str) -> str:
    """``agent-gate-install:<digest>-<pid>``: the image's id and the script's text, and the
    gate that made it (each gate removes its own at its end)."""
    digest = hashlib.sha256(f"{image_id}\0{script}".encode()).hexdigest()[:20]
    return f"{REPOSITORY}:{digest}-{owner.rpartition(':')[2]}"


def installed_image(provider: Engine, task: Task, image: str,
                    install: AgentInstall) -> tuple[str, float]:
    """The image ``image`` with ``install`` done in it, and the seconds this call waited
    (for the install, or for another run's)."""
    start = time.monotonic()
    try:
        image_id = provider.client().images.get(image).id
    except docker.errors.DockerException as exc:
        raise SandboxError(f"cannot inspect image {image!r}: {exc}") from exc
    tag = install_tag(image_id, install.script, provider.owner)
    with provider.image_lock(tag):
        failed = provider.failed_installs.get(tag)
        if failed is not None:
            raise SandboxError(failed)
        if not provider.present(tag):
            try:
                _install(provider, task, image, install, tag)
            except SandboxError as exc:
                if str(exc) != "cancelled":
                    provider.failed_installs[tag] = str(exc)
                raise
            provider.installed.append(tag)
    return tag, time.monotonic() - start


def _install(provider: Engine, task: Task, image: str, install: AgentInstall,
             tag: str) -> None:
    fmt = task_format(task)
    base = fmt.container_spec(task) if fmt.lifecycle == "per_run" else ContainerSpec()
    # the task's limits, none of its run's settings: the image's user and workdir, no
    # variables of the task's baked into the layer, no runner directory
    spec = dataclasses.replace(base, workdir=None, user=None, network="no-network",
                               runner_dir=None, baked_skills=(), env={})
    root = Path(tempfile.mkdtemp(prefix="gate-install-"))
    box = _InstallContainer(provider, task, image, root, spec)
    box.cancel = provider.cancel
    try:
        box.start()
        box.watch_disk(provider.options.disk_limit("the agent's install ([agent] install)"))
        box.set_network("public")  # refused where the guard could not be set
        try:
            res = _run_script(box, install)
        except SandboxError:  # stopped: by its disk watch, or the job's cancel
            _within_disk(box)
            raise
        _within_disk(box)
        if res.timed_out:
            raise SandboxError(f"the agent's install ([agent] install) took longer than "
                               f"install_timeout_sec ({install.timeout:g} s): stopped"
                               f"{_said(res.output)}")
        if res.returncode != 0:
            raise SandboxError(f"the agent's install ([agent] install) failed (exit "
                               f"{res.returncode}){_said(res.output)}")
        box.run_as(["rm", "-f", SCRIPT_PATH], user="0", env={}, timeout=30)
        tampered = _tampering(provider, box, image)
        skill_files = _skill_files(provider, box)
        _commit(provider, box, image, tag)
        provider.install_skill_files[tag] = skill_files
        if tampered:  # every run of the image fails on it, as the agent's doing
            provider.tampered_installs[tag] = tampered
    finally:
        box.close()


def _within_disk(box: DockerRunContainer) -> None:
    """An install whose layer went past ``[suite] disk_mb`` fails with that reason."""
    if (over := box.disk_over()) is not None:
        raise SandboxError(over) from None


def _run_script(box: DockerRunContainer, install: AgentInstall) -> ExecResult:
    box.put_script(SCRIPT_PATH, install.script)
    # a script with a #! line runs with its interpreter, any other with sh
    argv = ["sh", "-c", 'case "$(head -c2 "$1")" in "#!") exec "$1";; esac; exec sh "$1"',
            "sh", SCRIPT_PATH]
    return box.run_as(argv, user="0", env={"HOME": "/root", "DEBIAN_FRONTEND": "noninteractive"},
                      timeout=install.timeout)


def _tampering(provider: Engine, box: DockerRunContainer, image: str) -> tuple[str, ...]:
    """What the install changed of a Harbor verifier's world (:mod:`._tamper`)."""
    client = provider.client()
    flags = look(client, box.container_id, world_of(client, image))
    return tuple(map(str, flags))


def _skill_files(provider: Engine, box: DockerRunContainer) -> frozenset[str]:
    """The ``SKILL.md`` files the install added or changed (the engine's diff of its
    container): the agent's own install (a package's bundled skills, e.g. under
    ``site-packages``), which a run never names as a stray skill of the task's image."""
    try:
        changes = provider.client().api.diff(box.container_id) or []
    except (docker.errors.DockerException, requests.exceptions.RequestException) as exc:
        raise SandboxError(f"cannot list what the agent's install changed: {exc}") from exc
    return frozenset(str(c.get("Path")) for c in changes if isinstance(c, dict)
                     and c.get("Kind") in (0, 1) and str(c.get("Path", "")).endswith("/SKILL.md"))


def _said(output: str) -> str:
    """The end of a failed install's output, for its reason: credentials masked while the
    whole output is there (a key whose first lines the tail would cut), then capped."""
    lines = [ln.rstrip() for ln in mask_credentials(strip_ansi(output)).splitlines()
             if ln.strip()][-TAIL_LINES:]
    if not lines:
        return "; it printed nothing"
    return "; its output ends:\n" + clip("\n".join(lines), TAIL_CHARS)


def _commit(provider: Engine, box: DockerRunContainer, image: str,
            tag: str) -> None:
    """The container's filesystem as ``tag``: the image's own configuration (its command
    too, not the keep-alive loop), the gate's labels."""
    api = provider.client().api
    repo, _, name = tag.partition(":")
    try:
        config = api.inspect_image(image).get("Config") or {}
        conf: dict[str, object] = {"Labels": {**(config.get("Labels") or {}), LABEL: "1",
                                              OWNER_LABEL: provider.owner,
                                              INSTALL_LABEL: name.rpartition("-")[0]}}
        if config.get("Cmd"):
            conf["Cmd"] = config["Cmd"]
        api.commit(box.container_id, repository=repo, tag=name, conf=conf,
                   message="agent-gate: [agent] install")
    except (docker.errors.DockerException, requests.exceptions.RequestException) as exc:
        raise SandboxError(f"cannot keep the agent's install as an image: {exc}") from exc


def remove_installed(provider: Engine, tags: list[str]) -> None:
    """Remove the images this gate committed (the end of its job)."""
    for tag in tags:
        with contextlib.suppress(docker.errors.DockerException,
                                 requests.exceptions.RequestException):
            provider.client().api.remove_image(tag, force=True)


def installs_left_behind(client: docker.DockerClient) -> list[str]:
    """The ids of committed installs whose gate (on this host) is gone."""
    try:
        found = client.api.images(filters={"label": INSTALL_LABEL})
    except docker.errors.DockerException:
        return []
    return [img["Id"] for img in found if owner_gone(img.get("Labels"))]
