"""The tamper check's docker-facing part: what a container's filesystem changed against its
image (``docker diff``), asked of the container (:data:`gate.sandbox._tamper.PROBE`) and
judged by :mod:`gate.sandbox._tamper`, the rule."""

from __future__ import annotations

import io
import tarfile
from collections.abc import Callable
from typing import TypeVar

import docker
import docker.errors
import requests.exceptions

from gate.sandbox._base import ExecResult, SandboxError
from gate.sandbox._engine import first_line
from gate.sandbox._tamper import (
    CA_BUNDLE,
    CA_DIRS,
    MOUNTED,
    PROBE,
    Change,
    Flag,
    World,
    bundle_derived,
    candidates,
    parse,
    questions,
    verdict,
)

Run = Callable[[list[str]], ExecResult]  # one command as root in the container
_T = TypeVar("_T")
ASKS = 3  # as gate.sandbox._harbor.ASKS
_KINDS = {0: "C", 1: "A", 2: "D"}  # the engine's change kinds
_ERRORS = (docker.errors.DockerException, requests.exceptions.RequestException)


def world_of(client: docker.DockerClient, image: str) -> World:
    """Where the verifier looks, as ``image`` says (its ``PATH``)."""
    try:
        env = (client.api.inspect_image(image).get("Config") or {}).get("Env") or []
    except _ERRORS as exc:
        raise SandboxError(f"cannot inspect image {image!r}: {first_line(exc)}") from exc
    path = next((e[len("PATH="):] for e in env if e.startswith("PATH=")), None)
    return World.of(path)


def look(client: docker.DockerClient, cid: str, run: Run, world: World) -> list[Flag]:
    """What, of the container's changes against its image, is tampering."""
    try:
        diff = client.api.diff(cid) or []
    except _ERRORS as exc:
        raise SandboxError(f"cannot list the container's changes: {first_line(exc)}") from exc
    cands = candidates([Change(_KINDS.get(d.get("Kind"), "C"), d.get("Path", ""))
                        for d in diff], world)
    if not cands:
        return []
    asked = questions(cands, world)
    answers = _ask(run, ["sh", "-c", PROBE, "sh", *asked], parse,
                   lambda a: a.complete(asked), "examine the container's changes")
    bundle_ok = any(c.path == CA_BUNDLE for c in cands) and _bundle_derived(client, cid)
    return verdict(cands, answers, world, bundle_ok=bundle_ok)


def mounted(run: Run) -> dict[str, str]:
    """The checksums of the files Docker bind-mounts (``docker diff`` never lists them)."""
    script = "for f in " + " ".join(MOUNTED) + '; do echo "$f $(cksum < "$f" 2>&1)"; done'
    return _ask(run, ["sh", "-c", script], _sums, lambda s: set(s) >= set(MOUNTED),
                "read the files Docker mounts")


def _sums(text: str) -> dict[str, str]:
    return {p: s for p, _, s in (ln.partition(" ") for ln in text.splitlines())}


def _ask(run: Run, argv: list[str], parse_: Callable[[str], _T], whole: Callable[[_T], bool],
         what: str) -> _T:
    """A probe's answer, asked up to :data:`ASKS` times: under load the engine now and then
    hands an exec's output back empty or cut short, which is no answer (never a flag)."""
    for _ in range(ASKS):
        res = run(argv)
        answer = parse_(res.stdout)
        if res.returncode == 0 and not res.timed_out and whole(answer):
            return answer
    raise SandboxError(f"cannot {what} (exit {res.returncode}): no whole answer in {ASKS} asks")


def _bundle_derived(client: docker.DockerClient, cid: str) -> bool:
    bundle = _texts(client, cid, CA_BUNDLE)
    certs = [t for d in CA_DIRS for t in _texts(client, cid, d.rstrip("/"))]
    return bool(bundle) and bundle_derived(bundle[0], certs)


def _texts(client: docker.DockerClient, cid: str, path: str) -> list[str]:
    """The regular files' texts at ``path`` (a file or a folder) in the container."""
    try:
        chunks, _ = client.api.get_archive(cid, path)
        data = b"".join(chunks)
    except _ERRORS:
        return []
    out = []
    with tarfile.open(fileobj=io.BytesIO(data)) as tf:
        for member in tf.getmembers():
            fh = tf.extractfile(member) if member.isreg() else None
            if fh is not None:
                out.append(fh.read().decode("ascii", errors="replace"))
    return out
