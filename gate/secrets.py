"""Keeping credentials away from everything the gate starts or writes.

Two tools: ``scrubbed_env`` builds the environment for task scripts and agent processes
(no credential of any kind), and ``Redactor`` masks known secret values in text that is
about to be stored (transcripts, logs, comments).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import sys
from collections.abc import Callable, Iterable, Mapping

# Names that carry credentials, or that point a process at one.
_SECRET_NAME = re.compile(
    r"(KEY|TOKEN|SECRET|PASSW|CREDENTIAL|AUTH|COOKIE|SESSION|PRIVATE)", re.IGNORECASE
)
_SECRET_PREFIXES = (
    "ANTHROPIC_", "GITHUB_", "GH_", "ACTIONS_", "AWS_", "AZURE_", "GOOGLE_", "GCP_",
    "OPENAI_", "INPUT_", "GATE_",
)


def is_secret_name(name: str) -> bool:
    return name.upper().startswith(_SECRET_PREFIXES) or bool(_SECRET_NAME.search(name))


def secret_values(environ: Mapping[str, str] | None = None) -> list[str]:
    """Values of the secret-looking variables of ``environ`` (long enough to be worth masking)."""
    env = os.environ if environ is None else environ
    return [v for k, v in env.items() if is_secret_name(k) and len(v) >= 8]


def scrubbed_env(
    extra: Mapping[str, str] | None = None, environ: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The gate's environment minus every credential-looking variable, plus ``extra``.

    A variable is dropped when its name looks secret, or when its value equals a secret's
    value (a copy of the key under an innocent name).
    """
    env = dict(os.environ if environ is None else environ)
    secrets = set(secret_values(env))
    clean = {k: v for k, v in env.items() if not is_secret_name(k) and v not in secrets}
    clean.update(extra or {})
    return clean


class Redactor:
    """Replaces known secret values with ``[REDACTED]``."""

    def __init__(self, values: Iterable[str] = ()) -> None:
        vals = sorted({v for v in values if v and len(v) >= 8}, key=len, reverse=True)
        self._pattern = re.compile("|".join(re.escape(v) for v in vals)) if vals else None

    @classmethod
    def from_environ(cls, extra: Iterable[str] = ()) -> Redactor:
        return cls([*secret_values(), *extra])

    def __call__(self, text: str) -> str:
        return self._pattern.sub("[REDACTED]", text) if self._pattern else text

    def __repr__(self) -> str:  # never show the values
        return "Redactor(<hidden>)"


_FD_VAR = "_GATE_SECRETS_FD"
_handled = False  # this process already went through hide_secrets_from_environ
_PIPE_LIMIT = 60_000  # a pipe holds 64 KiB without a reader


def hide_secrets_from_environ(argv: list[str]) -> None:
    """Keep credentials out of ``/proc/<gate>/environ``.

    Scrubbing a child's environment is not enough: any process the gate starts can read its
    parent's *initial* environment from ``/proc/$PPID/environ``, and unsetting a variable does
    not erase that block. On Linux the gate overwrites the credentials' values in that block
    in place (``/proc/self/mem``), reads the block back to check, and drops them from the C
    environment; they then live only in this process's memory (``os.environ``), and the
    process is marked non-dumpable so other users' processes cannot read its memory. One
    interpreter start, not two.

    Where that is not possible (no ``/proc``, a kernel that refuses the write, macOS, whose
    ``ps -E`` reads a process's initial environment too), the gate re-executes itself once
    with the credentials removed from its environment and hands them over through an
    inherited pipe. Whoever starts the gate must not keep the secrets either: the action's
    step ``exec``s it, so no shell above it holds them.
    """
    global _handled
    if os.name != "posix" or _handled:  # `python -m gate` calls it before the CLI loads
        return
    _handled = True
    fd = os.environ.pop(_FD_VAR, None)
    if fd is not None:
        with contextlib.suppress(OSError, ValueError), os.fdopen(int(fd), "rb") as fh:
            handed = json.loads(fh.read() or b"{}")
            os.environ.update(handed)
            _out_of_c_environ(handed)
        _not_dumpable()
        return
    secrets = {k: v for k, v in os.environ.items() if is_secret_name(k)}
    if secrets and _scrub_in_place(set(secrets)):
        _out_of_c_environ(secrets)
        secrets = {}
    payload = json.dumps(secrets).encode() if secrets else b""
    if not secrets or len(payload) > _PIPE_LIMIT:
        _not_dumpable()
        return
    r, w = os.pipe()
    os.write(w, payload)
    os.close(w)
    os.set_inheritable(r, True)
    env = {k: v for k, v in os.environ.items() if k not in secrets}
    env[_FD_VAR] = str(r)
    sys.stdout.flush()
    sys.stderr.flush()
    # -P: `python -m` would otherwise put the working directory first on the import path, and
    # the working directory is the checkout under test (or a downloaded artifact): a `gate/`
    # folder there would run instead of the gate, holding the secrets.
    os.execve(sys.executable, [sys.executable, "-P", "-m", "gate", *argv], env)


def _out_of_c_environ(names: Iterable[str]) -> None:
    """``os.environ`` keeps them; a child started without an explicit environment (it inherits
    the C library's ``environ``, not ``os.environ``) gets none of them, not even empty."""
    for name in names:
        os.unsetenv(name)


def _scrub_in_place(names: set[str]) -> bool:
    """Overwrite the values of ``names`` with NULs in this process's initial environment block
    (the memory ``/proc/<pid>/environ`` shows: ``env_start..env_end`` of ``/proc/self/stat``),
    then read the block back: True only when none of them has a value there any more."""
    if not sys.platform.startswith("linux"):
        return False
    wanted = {os.fsencode(n) for n in names}
    try:
        with open("/proc/self/stat", "rb") as fh:
            stat = fh.read()
        fields = stat[stat.rindex(b")") + 2:].split()  # fields[0] is field 3 of proc(5)
        start, end = int(fields[47]), int(fields[48])  # env_start (50), env_end (51)
        if not 0 < start < end or end - start > 16 << 20:
            return False
        with open("/proc/self/mem", "r+b", buffering=0) as mem:
            mem.seek(start)
            block = bytearray(mem.read(end - start))
            if len(block) != end - start:
                return False
            pos = 0
            for entry in bytes(block).split(b"\0"):
                name, eq, value = entry.partition(b"=")
                if eq and name in wanted:
                    at = pos + len(name) + 1
                    block[at:at + len(value)] = bytes(len(value))
                pos += len(entry) + 1
            mem.seek(start)
            if mem.write(block) != len(block):
                return False
        with open("/proc/self/environ", "rb") as fh:
            after = fh.read()
    except (OSError, ValueError, IndexError):
        return False
    left = (entry.partition(b"=") for entry in after.split(b"\0"))
    return not any(name in wanted and value for name, _, value in left)


def become_subreaper() -> bool:
    """Make the gate a child subreaper (Linux ``PR_SET_CHILD_SUBREAPER``): a process of a run
    that kills its launcher, ``setsid``s, leaves its cgroup and clears its environment is
    still re-parented to the gate, never to init, and ``gate.sandbox`` kills it when a command
    ends and before anything a task must not see (the refresh's push with the token). True
    when the kernel agreed."""
    if not sys.platform.startswith("linux"):
        return False
    import ctypes

    pr_set_child_subreaper = 36
    try:
        return ctypes.CDLL(None, use_errno=True).prctl(pr_set_child_subreaper, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def _not_dumpable() -> None:
    import ctypes  # here: a process that re-executes itself never needs it

    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE = 4


# what names a credential in an ancestor's environment (narrower than ``is_secret_name``, which
# also drops every GITHUB_* from a child's: an ancestor's GITHUB_SHA is no secret)
_CREDENTIAL_NAME = re.compile(r"(KEY|TOKEN|SECRET|PASSW|CREDENTIAL|PRIVATE)", re.IGNORECASE)


def exposed_ancestors(environ: Mapping[str, str] | None = None, *,
                      pid: int | None = None) -> list[tuple[int, str, list[str]]]:
    """``(pid, command, names)`` for each ancestor of this process whose environment holds a
    credential this process can read — and so can every task the gate runs as the same user
    (``/proc/<pid>/environ`` is readable by its user). A credential: a value of 8+ characters
    under a name with KEY, TOKEN, SECRET, PASSW, CREDENTIAL or PRIVATE in it, or a copy of one
    of ``environ``'s under any name. Linux only (elsewhere: ``[]``); the walk stops at init."""
    env = os.environ if environ is None else environ
    ours = {v for k, v in env.items() if len(v) >= 8 and _CREDENTIAL_NAME.search(k)}
    found: list[tuple[int, str, list[str]]] = []
    current = os.getpid() if pid is None else pid
    for _ in range(64):  # a bound, whatever /proc says
        try:
            with open(f"/proc/{current}/stat", "rb") as fh:
                stat = fh.read()
            current = int(stat[stat.rindex(b")") + 2:].split()[1])
        except (OSError, ValueError, IndexError):
            break
        if current <= 1:
            break
        try:
            with open(f"/proc/{current}/environ", "rb") as fh:
                block = fh.read()
            with open(f"/proc/{current}/comm", "rb") as fh:
                comm = fh.read().decode(errors="replace").strip()
        except OSError:
            continue  # not readable by us: nor by a task running as us
        names = sorted({
            name for name, eq, value in (e.decode(errors="replace").partition("=")
                                         for e in block.split(b"\0"))
            if eq and (value in ours or (len(value) >= 8 and _CREDENTIAL_NAME.search(name)))})
        if names:
            found.append((current, comm, names))
    return found


def warn_exposed_ancestors(log: Callable[[str], None] | None = None) -> None:
    """Warn (one line on stderr, or ``log``) when a process above the gate holds a credential
    a task could read: the gate was started as a child of a shell that has it, not ``exec``'d
    (the README's "Calling gate from your own steps")."""
    for pid, comm, names in exposed_ancestors():
        line = (f"gate: warning: {', '.join(names[:5])} {'is' if len(names) == 1 else 'are'} "
                f"in the environment of process {pid} ({_printable(comm)}) above the gate, "
                f"readable by every task at /proc/{pid}/environ: exec the gate from "
                "your step (`exec gate ci ...`) or keep credentials out of the calling shell "
                "(README: Calling gate from your own steps)")
        if log is None:
            print(line, file=sys.stderr)
        else:
            log(line)


def _printable(text: str) -> str:
    """A process name as it may be shown on one line (no control characters)."""
    return "".join(c if c.isprintable() else "?" for c in text)[:32]
