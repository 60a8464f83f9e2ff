"""Tampering: a change to what a Harbor verifier executes or is configured by, made before its
checks by the agent's install (``[agent] install``, PR code run as root) or by a root agent.

Harbor's verifier runs in the agent's own container, so whoever is root before it can make a
collapsed agent pass (``/usr/bin/bash`` wrapped to exit 0 on ``test.sh``; a ``.pth`` hook that
patches pytest; ``/etc/hosts`` sending the verifier's downloads elsewhere). This module is the
rule, pure: which changed paths count (:func:`candidates`), what the container must be asked
about them (:func:`questions`), dpkg's record of them (:func:`record_of`), and which are
tampering (:func:`verdict`). The docker-facing part, :mod:`gate.sandbox._watch`, reads the
container's filesystem through the engine (``docker diff``, its archive API), never with a
command in the container: a root agent may have replaced ``sh``, ``md5sum`` or ``grep``.

**What counts** (a path added, changed or deleted):

- *commands*: every file of a ``PATH`` directory (the image's ``PATH`` and the standard ones)
  and of root's own (``~/.local/bin``, ``~/.cargo/bin``, ``~/bin``: an installer the verifier
  runs puts them first; ``~/.local/bin/env`` and ``~/.cargo/env`` are sourced);
- *libraries*: every file under ``/lib*``, ``/usr/lib*``, ``/usr/local/lib*``,
  ``/usr/libexec``, interpreters' standard libraries included;
- *start-up hooks and configuration*: the loader's (``/etc/ld.so.preload``,
  ``/etc/ld.so.conf*``, ``/etc/ld.so.cache``), Python's (``/etc/python3*``, any ``.pth``,
  ``sitecustomize``, ``usercustomize``), the package managers' (``/etc/apt``, ``/etc/dpkg``,
  ``/usr/share/keyrings``, ``pip.conf``, ``uv.toml``, ``.npmrc``, ``.curlrc``, ``wgetrc``),
  ``/etc/alternatives``, the shells' start-up files, the CA store (``/etc/ssl``,
  ``/usr/share/ca-certificates``, ``/usr/local/share/ca-certificates``,
  ``/etc/ca-certificates*``), name resolution (``/etc/hosts``, ``resolv.conf``,
  ``nsswitch.conf``, ``gai.conf``, ``host.conf``; Docker's bind-mounted ``/etc/hosts`` and
  ``resolv.conf`` are compared by content, ``docker diff`` does not see them).

**What does not**: a *new* file in a ``PATH`` directory that shadows no command of a later one
(``npm install -g`` adding ``/usr/local/bin/claude``: the verifier names no such command), a
new library that no earlier loader directory puts before an existing one, and what ``pip``
does in ``site-packages`` / ``dist-packages`` and ``npm`` in ``node_modules`` (new, upgraded or
removed packages: a real solution's ``pip install``, Claude Code's own update) but for a
start-up hook, and but for a file ``dpkg`` owns.

**The package manager's record exempts**: a file ``dpkg`` lists (``/var/lib/dpkg/info/
<pkg>.list``, under either name of the merged ``/usr``) whose md5 is the one ``dpkg`` recorded
(``<pkg>.md5sums``, or a conffile's in ``/var/lib/dpkg/status``); a symlink ``dpkg`` lists, or
one in ``/etc/alternatives``, whose target is a file ``dpkg`` lists. What package installs
derive from checked inputs is theirs too: ``/etc/ld.so.cache`` (``ldconfig``, from the
libraries and ``ld.so.conf*``, each checked), ``/etc/ssl/certs``'s links into the CA folders,
``/etc/ca-certificates.conf`` (it only selects packaged certificates) and the bundle
``ca-certificates.crt`` when every certificate in it is one of the CA folders' (as
``update-ca-certificates`` writes it). *Not checked*: whether a package came from the image's
configured repositories, nor dpkg's database itself: a root agent that installs a crafted
package (``dpkg -i``) or rewrites ``/var/lib/dpkg/info/<pkg>.md5sums`` with its file's md5
passes the record check. A change to ``/etc/apt`` flags, unless a package's conffile.

**When**: the agent's install, its layer before it is committed (every run of the image fails
on it); a run's container before each verify, once the agent phase's processes are stopped,
against a mark taken after the task's own steps (its healthcheck, a step's ``setup.sh``) and
after each step's verifier (what a verifier installs, uv in ``~/.local/bin``, is its own).
"""

from __future__ import annotations

import dataclasses
import posixpath
import re
from collections.abc import Iterable, Mapping, Sequence

STANDARD_PATH = ("/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin")
ROOT_BINS = ("/root/.local/bin", "/root/.cargo/bin", "/root/bin")
#: the loader's search order for a plain name (``ld.so.conf``'s ``/usr/local/lib`` first)
LOADER_DIRS = ("/usr/local/lib", "/usr/local/lib/x86_64-linux-gnu",
               "/usr/local/lib/aarch64-linux-gnu", "/lib/x86_64-linux-gnu",
               "/usr/lib/x86_64-linux-gnu", "/lib/aarch64-linux-gnu",
               "/usr/lib/aarch64-linux-gnu", "/lib64", "/usr/lib64", "/lib", "/usr/lib")
LIB_TOPS = ("/lib", "/lib32", "/lib64", "/libx32", "/usr/lib", "/usr/lib32", "/usr/lib64",
            "/usr/libx32", "/usr/local/lib", "/usr/local/lib64", "/usr/libexec",
            "/usr/local/libexec")
CONFIG = (
    "/etc/ld.so.preload", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/ld.so.cache",
    "/etc/apt", "/etc/dpkg", "/usr/share/keyrings", "/etc/alternatives",
    "/etc/pip.conf", "/etc/xdg/pip", "/root/.pip", "/root/.config/pip",
    "/etc/uv", "/etc/xdg/uv", "/root/.config/uv", "/root/.npmrc", "/etc/npmrc",
    "/usr/local/etc/npmrc", "/root/.curlrc", "/etc/wgetrc", "/root/.wgetrc",
    "/root/.local/bin/env", "/root/.cargo/env",
    "/etc/profile", "/etc/profile.d", "/etc/bash.bashrc", "/etc/environment",
    "/root/.bashrc", "/root/.profile", "/root/.bash_profile",
    "/etc/ssl", "/usr/share/ca-certificates", "/usr/local/share/ca-certificates",
    "/etc/ca-certificates", "/etc/ca-certificates.conf", "/etc/pki",
    "/etc/hosts", "/etc/resolv.conf", "/etc/nsswitch.conf", "/etc/gai.conf", "/etc/host.conf",
)
CONFIG_GLOBS = (re.compile(r"^/etc/python[0-9.]*(/|$)"),)
#: bind-mounted by Docker: ``docker diff`` never lists them, their content is compared
MOUNTED = ("/etc/hosts", "/etc/resolv.conf", "/etc/hostname")
_SITE = re.compile(r"/(site-packages|dist-packages|node_modules)(/|$)")  # pip's and npm's
_MERGED = ("bin", "sbin", "lib", "lib32", "lib64", "libx32")
CA_DIRS = ("/usr/share/ca-certificates/", "/usr/local/share/ca-certificates/")
CA_BUNDLE = "/etc/ssl/certs/ca-certificates.crt"
DERIVED = ("/etc/ld.so.cache", "/etc/ca-certificates.conf")
MAX_ASKED = 2000  # paths read from the container at most: past that, the rest flag unread

@dataclasses.dataclass(frozen=True)
class Change:
    """A path ``docker diff`` lists: ``A`` added, ``C`` changed, ``D`` deleted."""

    kind: str
    path: str


@dataclasses.dataclass(frozen=True)
class Found:
    """What the container says of a path now."""

    kind: str  # f, l, d, o or - (none)
    md5: str | None
    real: str | None  # where it resolves to


@dataclasses.dataclass(frozen=True)
class Record:
    """The package manager's record of the paths asked: which ``dpkg`` lists, and the md5 it
    recorded for each (md5sums, conffiles)."""

    listed: frozenset[str]
    md5: Mapping[str, str]

    def lists(self, path: str) -> bool:
        return any(p in self.listed for p in aliases(path))

    def recorded(self, path: str) -> str | None:
        return next((self.md5[p] for p in aliases(path) if p in self.md5), None)


@dataclasses.dataclass(frozen=True)
class Answers:
    """What the engine read of the container's filesystem: each asked path, and dpkg's record
    of them (:func:`record_of`)."""

    found: Mapping[str, Found]
    record: Record


@dataclasses.dataclass(frozen=True)
class World:
    """Where the verifier looks: its command directories in ``PATH`` order, each with the
    real directory it resolves to (a merged ``/usr``'s ``/bin`` is ``/usr/bin``)."""

    path_dirs: tuple[str, ...] = STANDARD_PATH

    @staticmethod
    def of(path_env: str | None) -> World:
        dirs = [d for d in (path_env or "").split(":") if d.startswith("/")]
        return World(tuple(dict.fromkeys([*dirs, *STANDARD_PATH])))


def aliases(path: str) -> tuple[str, ...]:
    """``path`` and its other name under a merged ``/usr`` (``/bin/x`` ↔ ``/usr/bin/x``)."""
    parts = path.split("/")
    if len(parts) >= 3 and parts[1] in _MERGED:
        return path, "/usr" + path
    if len(parts) >= 4 and parts[1] == "usr" and parts[2] in _MERGED:
        return path, path[len("/usr"):]
    return (path,)


def _under(path: str, tops: Iterable[str]) -> bool:
    return any(path == t or path.startswith(t.rstrip("/") + "/") for t in tops)


def is_hook(path: str) -> bool:
    """An interpreter's start-up hook: a ``.pth`` file, ``sitecustomize``, ``usercustomize``
    (a module or a package; not the bytecode Python itself caches of one)."""
    parts = path.split("/")
    if parts[-2:-1] == ["__pycache__"]:
        return False
    return parts[-1].endswith(".pth") or any(
        p.split(".")[0] in ("sitecustomize", "usercustomize") for p in parts)


def _config(path: str) -> bool:
    return _under(path, CONFIG) or any(g.match(path) for g in CONFIG_GLOBS)


def _command_dir(path: str, world: World) -> bool:
    return posixpath.dirname(path) in (*world.path_dirs, *ROOT_BINS) or _under(path, ROOT_BINS)


def _lib(path: str) -> bool:
    return _under(path, LIB_TOPS) or bool(_SITE.search(path))


def candidates(changes: Sequence[Change], world: World) -> list[Change]:
    """The changes that may be tampering (the rest cannot change what the verifier runs)."""
    return [c for c in leaves(changes) if _config(c.path) or _command_dir(c.path, world)
            or (_lib(c.path) and (c.kind != "A" or is_hook(c.path) or _loader_top(c.path)))]


def _loader_top(path: str) -> bool:
    return posixpath.dirname(path) in LOADER_DIRS


def shadowed(path: str, world: World) -> tuple[str, ...]:
    """The paths a new file at ``path`` may shadow: the same name in every later command
    directory (or loader directory) than its own."""
    folder, name = posixpath.split(path)
    for order in (world.path_dirs, LOADER_DIRS):
        if folder in order:
            return tuple(f"{d}/{name}" for d in order[order.index(folder) + 1:])
    return ()


def questions(cands: Sequence[Change], world: World) -> list[str]:
    """Every path the engine is asked about: the candidates, and what they may shadow."""
    asked = dict.fromkeys(c.path for c in cands)
    for c in cands:
        if c.kind == "A":
            asked.update(dict.fromkeys(shadowed(c.path, world)))
    return list(asked)[:MAX_ASKED]


def record_of(info: Mapping[str, str], status: str, wanted: Iterable[str]) -> Record:
    """dpkg's record of the ``wanted`` paths (and their merged-``/usr`` aliases): ``info`` is
    ``/var/lib/dpkg/info``'s ``<pkg>.list`` and ``<pkg>.md5sums`` texts by file name,
    ``status`` the status file (its conffiles' md5s; an obsolete one's record exempts
    nothing)."""
    want = {a for p in wanted for a in aliases(p)}
    listed: set[str] = set()
    md5: dict[str, str] = {}
    for name, text in info.items():
        if name.endswith(".list"):
            listed.update(line for line in text.splitlines() if line in want)
        elif name.endswith(".md5sums"):
            for line in text.splitlines():
                digest, _, rel = line.partition("  ")
                if "/" + rel in want:
                    md5["/" + rel] = digest
    for line in status.splitlines():
        words = line.split()
        if line.startswith(" /") and len(words) >= 2 and words[0] in want and \
                "obsolete" not in words[2:]:
            md5[words[0]] = words[1]
    return Record(frozenset(listed), md5)


def leaves(changes: Sequence[Change]) -> list[Change]:
    """The changes that are not a folder holding another change (``docker diff`` lists each
    changed file's folders too): what is left to ask about."""
    parents = {posixpath.dirname(c.path) for c in changes}
    return [c for c in changes if c.path not in parents]


def _packaged(path: str, found: Found, answers: Answers) -> bool:
    """The package manager's: dpkg's file with dpkg's md5, or a link dpkg (or
    ``update-alternatives``) made to a file dpkg lists."""
    rec = answers.record
    if found.kind == "f":
        recorded = rec.recorded(path)
        return recorded is not None and recorded == found.md5
    if found.kind == "l":
        made = rec.lists(path) or path.startswith("/etc/alternatives/")
        target = found.real or ""
        return made and rec.lists(target) and _target_ok(target, answers)
    return found.kind == "d" and rec.lists(path)


def _target_ok(target: str, answers: Answers) -> bool:
    """A link's target, when it was asked about too, is the package manager's own file."""
    seen = answers.found.get(target)
    return seen is None or seen.kind != "f" or seen.md5 is None or answers.record.recorded(
        target) in (None, seen.md5)


def _derived(path: str, found: Found, bundle_ok: bool) -> bool:
    """What a package install derives from checked inputs (the module's docstring)."""
    if path in DERIVED:
        return True
    if path == CA_BUNDLE:
        return bundle_ok
    if path.startswith("/etc/ssl/certs/") and found.kind == "l":
        return (found.real or "").startswith(CA_DIRS)
    return False


@dataclasses.dataclass(frozen=True)
class Flag:
    """One path that is tampering: how (added, changed, deleted, shadowing), and its content
    then (so a later mark knows it)."""

    path: str
    how: str
    digest: str | None = None

    def __str__(self) -> str:
        return f"{self.path} {self.how}"


def verdict(cands: Sequence[Change], answers: Answers, world: World, *,
            bundle_ok: bool = False) -> list[Flag]:
    """Each candidate that is tampering; sorted by path, one per path."""
    out: dict[str, Flag] = {}
    for c in cands:
        why = _why(c, answers, world, bundle_ok)
        if why is not None:
            found = answers.found.get(c.path)
            out[c.path] = Flag(c.path, why, f"{found.kind}:{found.md5}:{found.real}"
                               if found else None)
    return [out[p] for p in sorted(out)]


def digests_needed(cands: Sequence[Change], answers: Answers, world: World) -> set[str]:
    """The regular files whose md5 the verdict reads (``answers`` as far as known without
    them): reading a file is most of the check's time, and most new files need none."""
    need = set()
    for c in cands:
        found = answers.found.get(c.path)
        if found is None or found.kind != "f":
            continue
        if _new_command(c):
            if any(_shadows(c.path, p, answers) for p in shadowed(c.path, world)):
                need.add(c.path)
        elif not _pips(c.path, answers):
            need.add(c.path)
    return need


def _new_command(c: Change) -> bool:
    """A new file judged by what it shadows (a command, a library)."""
    return c.kind == "A" and not _config(c.path) and not is_hook(c.path) and not _under(
        c.path, ROOT_BINS)


def _pips(path: str, answers: Answers) -> bool:
    """pip's or npm's file: in a package folder, no hook, not dpkg's."""
    return bool(_SITE.search(path)) and not is_hook(path) and not answers.record.lists(path)


def _why(c: Change, answers: Answers, world: World, bundle_ok: bool) -> str | None:
    found = answers.found.get(c.path)
    if found is None:
        return "changed (one change too many to read)"
    if found.kind == "d" and not is_hook(c.path):
        return None  # a folder's own entry: what changed in it is listed on its own
    if found.kind == "-":
        return None if _pips(c.path, answers) else "deleted"
    if _new_command(c):
        hidden = [p for p in shadowed(c.path, world) if _shadows(c.path, p, answers)]
        if not hidden or _packaged(c.path, found, answers):
            return None  # shadows nothing, or a package put it there
        return f"added, shadowing {hidden[0]}"
    if _pips(c.path, answers):
        return None
    if _packaged(c.path, found, answers) or _derived(c.path, found, bundle_ok):
        return None
    return "added" if c.kind == "A" else "changed"


def _shadows(new: str, later: str, answers: Answers) -> bool:
    seen, mine = answers.found.get(later), answers.found.get(new)
    if seen is None or seen.kind in ("-", "d"):
        return False
    return seen.real is None or mine is None or seen.real != mine.real


_PEM = re.compile(r"-----BEGIN CERTIFICATE-----[A-Za-z0-9+/=\s]+?-----END CERTIFICATE-----")


def pem_blocks(text: str) -> set[str]:
    """The certificates of a PEM text, whitespace left out."""
    return {"".join(m.group(0).split()) for m in _PEM.finditer(text)}


def bundle_derived(bundle: str, certs: Iterable[str]) -> bool:
    """Whether every certificate of the CA bundle is one of the CA folders' (``certs``: their
    files' texts), as ``update-ca-certificates`` writes it."""
    have = set().union(*(pem_blocks(c) for c in certs))
    return pem_blocks(bundle) <= have


def mounted_changes(before: Mapping[str, str], now: Mapping[str, str]) -> list[Flag]:
    """The bind-mounted files (:data:`MOUNTED`) whose content changed since the mark."""
    return [Flag(p, "changed", now.get(p)) for p in MOUNTED if before.get(p) != now.get(p)]


def since(flags: Sequence[Flag], marked: Iterable[Flag]) -> list[Flag]:
    """``flags`` less those already so at the mark (the task's own steps, an earlier
    verifier's installs): a path changed again since then flags."""
    seen = {(f.path, f.digest) for f in marked}
    return [f for f in flags if (f.path, f.digest) not in seen]
