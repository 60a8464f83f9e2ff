"""The tamper check's docker-facing part: what a container's filesystem changed against its
image (``docker diff``), read through the engine's archive API and judged by
:mod:`gate.sandbox._tamper`, the rule. Nothing here runs a command in the container: a root
agent may have replaced the ``sh``, ``md5sum`` or ``grep`` such a probe would run."""

from __future__ import annotations

import dataclasses
import hashlib
import io
import posixpath
import tarfile
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import docker
import docker.errors
import requests.exceptions
from docker.utils import decode_json_header

from gate.sandbox._base import SandboxError
from gate.sandbox._engine import DIR as _DIR
from gate.sandbox._engine import SPECIAL as _SPECIAL
from gate.sandbox._engine import SYMLINK as _SYMLINK
from gate.sandbox._engine import Chunks, Engine, first_line
from gate.sandbox._tamper import (
    CA_BUNDLE,
    CA_DIRS,
    MOUNTED,
    Answers,
    Change,
    Flag,
    Found,
    World,
    bundle_derived,
    candidates,
    digests_needed,
    mounted_changes,
    questions,
    record_of,
    since,
    verdict,
)

_KINDS = {0: "C", 1: "A", 2: "D"}  # the engine's change kinds
_ERRORS = (docker.errors.DockerException, requests.exceptions.RequestException)
_POOL = ThreadPoolExecutor(max_workers=8, thread_name_prefix="gate-tamper")  # under the
# SDK's 10 connections
HOPS = 40  # symbolic links followed at most, as the kernel's limit
CHUNK = 1 << 20


EXEMPT_NOTE = ("gate: the tamper check is off for this task ([suite].tamper_exempt): what the "
               "agent's install or the agent changed of the verifier's world is not judged")


class Watch:
    """A run's tamper check: the mark of the verifier's world (after the task's own steps,
    after each verifier) and what changed since, with what the run's image's install changed
    (:mod:`gate.sandbox._install` records it on the provider)."""

    def __init__(self, provider: Engine, task_id: str, image: str) -> None:
        self.provider = provider
        self.image = image
        self.exempt = task_id in provider.options.tamper_exempt
        self.notes: tuple[str, ...] = (EXEMPT_NOTE,) if self.exempt else ()
        self._marked: tuple[list[Flag], dict[str, str]] = ([], {})

    def mark(self, cid: str) -> None:
        if not self.exempt:
            self._marked = (self._look(cid), mounted(self.provider.client(), cid))

    def tampering(self, cid: str) -> list[str]:
        """Each change that is tampering, ``"<path> <how>"``; the install's first."""
        if self.exempt:
            return []
        flags, mounts = self._marked
        found = since(self._look(cid), flags) + mounted_changes(
            mounts, mounted(self.provider.client(), cid))
        install = self.provider.tampered_installs.get(self.image, ())
        return [*(f"the agent's install: {f}" for f in install), *map(str, found)]

    def _look(self, cid: str) -> list[Flag]:
        client = self.provider.client()
        return look(client, cid, world_of(client, self.image))


def world_of(client: docker.DockerClient, image: str) -> World:
    """Where the verifier looks, as ``image`` says (its ``PATH``)."""
    try:
        env = (client.api.inspect_image(image).get("Config") or {}).get("Env") or []
    except _ERRORS as exc:
        raise SandboxError(f"cannot inspect image {image!r}: {first_line(exc)}") from exc
    path = next((e[len("PATH="):] for e in env if e.startswith("PATH=")), None)
    return World.of(path)


def look(client: docker.DockerClient, cid: str, world: World) -> list[Flag]:
    """What, of the container's changes against its image, is tampering."""
    try:
        diff = client.api.diff(cid) or []
    except _ERRORS as exc:
        raise SandboxError(f"cannot list the container's changes: {first_line(exc)}") from exc
    cands = candidates([Change(_KINDS.get(d.get("Kind"), "C"), d.get("Path", ""))
                        for d in diff], world)
    if not cands:
        return []
    files = _Files(client, cid)
    asked = questions(cands, world)
    files.prefetch(asked)
    found = {p: files.found(p, digest=False) for p in asked}
    wanted = {*found, *(f.real for f in found.values() if f.real)}
    info = files.texts("/var/lib/dpkg/info", (".list", ".md5sums"))
    status = files.texts("/var/lib/dpkg/status", ("status",))
    answers = Answers(found, record_of(info, "".join(status.values()), wanted))
    need = digests_needed(cands, answers, world)
    digests = dict(zip(need, files.pool.map(files.digest_of, need), strict=True))
    answers = Answers({p: dataclasses.replace(f, md5=digests[p]) if p in need else f
                       for p, f in found.items()}, answers.record)
    bundle_ok = any(c.path == CA_BUNDLE for c in cands) and _bundle_derived(files)
    return verdict(cands, answers, world, bundle_ok=bundle_ok)


def mounted(client: docker.DockerClient, cid: str) -> dict[str, str]:
    """The checksums of the files Docker bind-mounts (``docker diff`` never lists them)."""
    files = _Files(client, cid)
    return {p: str(files.found(p).md5) for p in MOUNTED}


def _bundle_derived(files: _Files) -> bool:
    bundle = list(files.texts(CA_BUNDLE, ("",)).values())
    certs = [t for d in CA_DIRS for t in files.texts(d.rstrip("/"), ("",)).values()]
    return bool(bundle) and bundle_derived(bundle[0], certs)


class _Files:
    """The container's filesystem as the engine reads it (``GET /containers/{id}/archive``),
    each path read once."""

    def __init__(self, client: docker.DockerClient, cid: str) -> None:
        self.api = client.api
        self.cid = cid
        self._stats: dict[str, tuple[str, str | None, str | None]] = {}
        self.pool = _POOL

    def found(self, path: str, *, digest: bool = True) -> Found:
        """What ``path`` is; a regular file's md5 read when ``digest``."""
        kind, _, _ = self._stat(path)
        md5 = self.digest_of(path) if digest and kind == "f" else None
        return Found(kind, md5, self._real(path) if kind != "-" else None)

    def prefetch(self, paths: list[str]) -> None:
        """Every path's stat at once (the engine answers each in tens of milliseconds)."""
        list(self.pool.map(self._stat, paths))

    def _stat(self, path: str) -> tuple[str, str | None, str | None]:
        """(kind, None, a link's target) of ``path``, not followed."""
        if path not in self._stats:
            self._stats[path] = self._read_stat(path)
        return self._stats[path]

    def digest_of(self, path: str) -> str | None:
        try:
            chunks, _ = self.api.get_archive(self.cid, path, chunk_size=CHUNK)
            return self._digest(chunks)[1]
        except (*_ERRORS, tarfile.TarError) as exc:
            raise SandboxError(f"cannot read {path} in the container: {first_line(exc)}") \
                from exc

    def _read_stat(self, path: str) -> tuple[str, str | None, str | None]:
        try:  # HEAD: the path's stat alone (a GET of a folder would archive all of it)
            res = self.api.head(self.api._url("/containers/{0}/archive", self.cid),
                                params={"path": path})
            if res.status_code == 404:
                return "-", None, None
            res.raise_for_status()
            stat = decode_json_header(res.headers["X-Docker-Container-Path-Stat"])
            mode = int(stat.get("mode", 0))
            if mode & _SYMLINK:
                return "l", None, str(stat.get("linkTarget") or "")
            if mode & _DIR:
                return "d", None, None
            return ("f" if mode & _SPECIAL == 0 else "o"), None, None
        except (*_ERRORS, KeyError, ValueError) as exc:
            raise SandboxError(f"cannot read {path} in the container: {first_line(exc)}") \
                from exc

    @staticmethod
    def _digest(chunks: Any) -> tuple[str, str | None, str | None]:
        """The md5 of the archive's one member, read as it streams."""
        with tarfile.open(fileobj=io.BufferedReader(Chunks(chunks)), mode="r|") as tf:
            member = tf.next()
            fh = tf.extractfile(member) if member is not None and member.isreg() else None
            if fh is None:
                return "o", None, None
            md5 = hashlib.md5(usedforsecurity=False)
            while block := fh.read(CHUNK):
                md5.update(block)
        return "f", md5.hexdigest(), None

    def _real(self, path: str) -> str | None:
        """Where ``path`` resolves to, every link of it followed (None: a loop)."""
        done, todo, hops = "/", [p for p in path.split("/") if p], 0
        while todo:
            part = todo.pop(0)
            if part in (".", ""):
                continue
            here = posixpath.dirname(done) if part == ".." else posixpath.join(done, part)
            kind, _, target = self._stat(here) if part != ".." else ("d", None, None)
            if kind != "l":
                done = here
                continue
            hops += 1
            if hops > HOPS or target is None:
                return None
            todo = [p for p in target.split("/") if p] + todo
            done = "/" if target.startswith("/") else done
        return done

    def texts(self, path: str, ends: tuple[str, ...]) -> dict[str, str]:
        """The texts of the regular files at ``path`` (a file or a folder) whose names end
        with one of ``ends``, by name."""
        try:
            chunks, _ = self.api.get_archive(self.cid, path, chunk_size=CHUNK)
            data = b"".join(chunks)
        except _ERRORS:
            return {}
        out = {}
        with tarfile.open(fileobj=io.BytesIO(data)) as tf:
            for member in tf.getmembers():
                fh = tf.extractfile(member) if member.isreg() and member.name.endswith(
                    ends) else None
                if fh is not None:
                    out[posixpath.basename(member.name)] = fh.read().decode(
                        "utf-8", errors="replace")
        return out
