"""Reading and writing the files the gate owns: atomic writes, bounded typed loads, clear errors.

Every file the gate reads goes through :func:`read_bytes` (or a loader built on it): a size
limit per kind of file, regular files only (``/dev/zero`` or a FIFO named as a system prompt is
refused, not read forever), and any problem is one ``BadInput`` line naming the file. Also the
gate's foundation helpers every unit may use: :func:`clip` (a text within a limit) and
:func:`digest_dir` (a task directory's digest).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import stat
import tempfile
import tomllib
from collections.abc import Iterable
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from gate.errors import BadInput

M = TypeVar("M", bound=BaseModel)

KiB = 1024
MiB = 1024 * KiB

# ---- size limits, per kind of file -------------------------------------------------------------
#: gate.toml: a few dozen settings; a megabyte is already absurd.
CONFIG_LIMIT = 1 * MiB
#: a system prompt, task.md: text sent to the model. A 200k-token context window is ~800 KB of
#: text, so more than 1 MiB can never be a working prompt.
PROMPT_LIMIT = 1 * MiB
#: task.toml, metadata.json: a handful of keys per task.
TASK_META_LIMIT = 256 * KiB
#: results files and baseline.json. Sized for real growth:
#:   runs: 1,000 tasks × 20 pooled runs × 4 conditions             =  80,000 runs
#:   bytes per run (indent 2): the fixed fields measured at ~800 B in the bundled baseline
#:   (usage, provenance, digest), + ~150 B for the trace (transcript) path, + ~1 KiB on average
#:   for reasons (≤ 200 chars), notes (≤ 4,000 chars, most runs have none) and score
#:                                                                ≈   2 KiB per run
#:   80,000 runs × 2 KiB = 160 MiB, + the suite (1,000 digests ≈ 150 KiB) → limit 256 MiB (1.6×).
RESULTS_LIMIT = 256 * MiB
#: ... and its JSON values (commas + objects + arrays, counted in C before parsing): ~30 per
#: run in practice (the fields, usage), 100 allowed on average → 80,000 × 100 = 8 M. This is
#: what keeps a hostile file under the byte limit from costing gigabytes: parsed, each value
#: costs 50-70 bytes of memory, so 8 M values stay well under 1 GB whatever the bytes say.
RESULTS_MAX_VALUES = 8_000_000
#: gate-history.jsonl: ~500 B per main-branch refresh, [ci].history_size (200) kept.
HISTORY_LIMIT = 16 * MiB
#: how deep a JSON file we read may nest (results: top → runs → run → score → ...).
JSON_MAX_DEPTH = 64
#: the largest integer magnitude any JSON value the gate reads may hold (IEEE doubles hold every
#: integer up to 2^53 exactly; past it readers disagree, and no count the gate writes gets near)
JSON_MAX_INT = 2**53


#: a terminal's escape sequences: CSI (colours, cursor moves: ``\x1b[91m``) and OSC (titles,
#: links), as builders and package managers write them
_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")


def strip_ansi(text: str) -> str:
    """``text`` without terminal escape sequences (a build's or an install's coloured output
    read into a reason, the comment or the report)."""
    return _ANSI.sub("", text) if "\x1b" in text else text


def printable(text: str) -> str:
    """``text`` with control and other non-printable characters escaped (``\\n``, ``\\x1b``):
    safe for one log line whatever a file or directory name holds."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii")
                   for c in text)


def _size(n: int) -> str:
    return f"{n / MiB:g} MiB" if n >= MiB else f"{n / KiB:g} KiB"


def read_bytes(path: str | os.PathLike[str], limit: int, what: str, *,
               nofollow: bool = False) -> bytes:
    """The bytes of a regular file of at most ``limit`` bytes, or ``BadInput`` naming it.
    ``nofollow``: a symlink in the last component is refused, never followed."""
    p = Path(path)
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0)
    if nofollow:
        flags |= getattr(os, "O_NOFOLLOW", 0)
    try:
        # O_NONBLOCK: opening a FIFO must not wait for a writer (it is refused just below)
        fd = os.open(p, flags)
    except FileNotFoundError:
        raise BadInput(f"{p}: {what} not found") from None
    except OSError as exc:
        raise BadInput(f"{p}: cannot read {what}: {exc.strerror}") from None
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        kind = "a directory" if stat.S_ISDIR(st.st_mode) else "not a regular file"
        raise BadInput(f"{p}: {what} is {kind}")
    with os.fdopen(fd, "rb") as fh:
        if st.st_size > limit:
            raise BadInput(f"{p}: {what} is too large ({_size(st.st_size)}; the limit is "
                           f"{_size(limit)})")
        try:
            data = fh.read(limit + 1)  # st_size can lie (/proc) or grow while we read
        except OSError as exc:
            raise BadInput(f"{p}: cannot read {what}: {exc.strerror}") from None
    if len(data) > limit:
        raise BadInput(f"{p}: {what} is too large (over the limit of {_size(limit)})")
    return data


def read_head(path: str | os.PathLike[str], limit: int) -> bytes | None:
    """At most the first ``limit`` bytes of a regular file, never through a symlink in the last
    component, never blocking on a FIFO; ``None`` when there is no such file (absent, a link,
    a directory, a device). For files the gate shows if it can (transcripts), where a missing
    or odd one is a note, not an error."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return None
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
            return None
        try:
            return fh.read(limit)
        except OSError:
            return None


def read_text(path: str | os.PathLike[str], limit: int, what: str) -> str:
    """A bounded regular file as UTF-8 text; anything else is ``BadInput`` naming the file."""
    data = read_bytes(path, limit, what)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BadInput(f"{path}: {what} is not UTF-8 text (byte 0x{data[exc.start]:02x} at "
                       f"offset {exc.start})") from None


def read_toml(path: str | os.PathLike[str], limit: int, what: str) -> dict[str, Any]:
    return parse_toml(read_text(path, limit, what), path, what)


def parse_toml(text: str, where: str | os.PathLike[str], what: str) -> dict[str, Any]:
    """TOML text already read (a file, or a file at a git ref named by ``where``)."""
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise BadInput(f"{where}: {what} is not valid TOML: {exc}") from None
    except RecursionError:
        raise BadInput(f"{where}: {what} is nested too deeply") from None


def read_json(path: str | os.PathLike[str], limit: int, what: str, *,
              max_values: int | None = None) -> Any:
    """A bounded JSON file, parsed; non-finite numbers and deep nesting are ``BadInput``
    naming the file and the field."""
    return parse_json(read_bytes(path, limit, what), path, what, max_values=max_values)


def parse_json(data: bytes, path: str | os.PathLike[str], what: str, *,
               max_values: int | None = None) -> Any:
    """JSON bytes already read (a file, or a file at a git ref named by ``path``)."""
    if max_values is not None:
        values = data.count(b",") + data.count(b"{") + data.count(b"[")
        if values > max_values:
            raise BadInput(f"{path}: {what} holds too many JSON values (over {values:,}; the "
                           f"limit is {max_values:,})")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BadInput(f"{path}: {what} is not UTF-8 text (byte 0x{data[exc.start]:02x} at "
                       f"offset {exc.start})") from None
    try:
        parsed = json.loads(text)
    except json.JSONDecodeError as exc:
        raise BadInput(f"{path}: not valid JSON ({exc.msg} at line {exc.lineno})") from None
    except RecursionError:
        raise BadInput(f"{path}: {what} is nested deeper than {JSON_MAX_DEPTH} levels") from None
    except ValueError as exc:  # e.g. an integer of more than 4,300 digits
        raise BadInput(f"{path}: not valid JSON ({exc})") from None
    problem = json_problem(parsed)
    if problem:
        raise BadInput(f"{path}: {problem}")
    return parsed


def _number_problem(value: object) -> str | None:
    """Why a JSON number is not a value the gate takes, or None (for anything else too)."""
    if isinstance(value, float) and not math.isfinite(value):
        return f"{value} is not a finite number (NaN and infinities are not valid values)"
    if isinstance(value, int) and abs(value) > JSON_MAX_INT:
        digits = str(abs(value))
        shown = digits if len(digits) <= 20 else f"{digits[:6]}…({len(digits)} digits)"
        return (f"{'-' if value < 0 else ''}{shown} is out of range (integers beyond ±2^53 are "
                "not held exactly by JSON readers)")
    return None


def json_problem(data: Any, max_depth: int = JSON_MAX_DEPTH) -> str | None:
    """``field.path: problem`` for the first number out of range (NaN, Infinity, 1e400, an
    integer beyond ±2^53: ``10**30`` written out passes as an int where ``1e30`` would not)
    or level of nesting beyond ``max_depth`` in parsed JSON; None when there is none.
    Iterative: a hostile file cannot exhaust the stack. Per-field bounds (a count, a cost) are
    the file's model's."""
    if (top := _number_problem(data)) is not None:
        return f"(top level): {top}"
    stack: list[tuple[Any, int, str]] = [(data, 1, "")] if isinstance(data, dict | list) else []
    while stack:
        node, depth, where = stack.pop()
        if depth > max_depth:
            return f"{where or '(top level)'}: nested deeper than {max_depth} levels"
        items = node.items() if isinstance(node, dict) else enumerate(node)
        for key, value in items:
            if isinstance(value, int | float) and (bad := _number_problem(value)):
                return f"{_join(where, key)}: {bad}"
            if isinstance(value, dict | list):
                stack.append((value, depth + 1, _join(where, key)))
    return None


def _join(where: str, key: object) -> str:
    part = printable(str(key))
    return f"{where}.{part}" if where else part


def atomic_write_text(path: str | os.PathLike[str], text: str) -> None:
    """Write ``text`` so that readers see the old file or the new one, never half of either."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        # mkstemp makes 0600; the file should have the mode a plain write would give it
        os.chmod(tmp, _mode_for(target))
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _mode_for(target: Path) -> int:
    try:
        return target.stat().st_mode & 0o777
    except FileNotFoundError:
        return 0o666 & ~_umask()


def _umask() -> int:
    """The process umask, read without changing it (os.umask would, for every thread)."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    return 0o022


def atomic_write_json(path: str | os.PathLike[str], data: Any) -> None:
    atomic_write_text(path, json.dumps(data, indent=2, sort_keys=False) + "\n")


def describe_validation_error(exc: ValidationError) -> str:
    """The first problem of a pydantic error as ``field.path: message`` (escaped: a field path
    can hold a key from the file)."""
    err = exc.errors()[0]
    loc = ".".join(printable(str(p)) for p in err.get("loc", ())) or "(top level)"
    return f"{loc}: {printable(err.get('msg', 'invalid'))}"


def load_json_model(path: str | os.PathLike[str], model: type[M], what: str, *,
                    limit: int, max_values: int | None = None) -> M:
    """Load and validate a bounded JSON file; any problem is one ``BadInput`` line naming the
    file and the field."""
    data = read_json(path, limit, what, max_values=max_values)
    if not isinstance(data, dict):
        raise BadInput(f"{path}: {what} must be a JSON object")
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise BadInput(f"{path}: invalid {what}: {describe_validation_error(exc)}") from None


def clip(text: str, limit: int, hint: str = "") -> str:
    """``text`` within about ``limit`` characters: the head, the tail, and a note of the cut."""
    if len(text) <= limit:
        return text
    head, tail = text[: limit * 2 // 3], text[len(text) - limit // 3:]
    cut = len(text) - len(head) - len(tail)
    return f"{head}\n[... {cut} characters cut by the gate{hint} ...]\n{tail}"


#: names a task directory's digest and a suite's listing skip
IGNORED_NAMES = frozenset({"__pycache__", ".DS_Store", ".git"})


def _iter_files(root: Path) -> Iterable[Path]:
    for p in sorted(root.rglob("*")):
        if any(part in IGNORED_NAMES for part in p.relative_to(root).parts):
            continue
        if p.is_file() or p.is_symlink():
            yield p


def digest_dir(root: Path) -> str:
    """sha256 over relative paths, executable bits and contents: renames and edits both show.
    Files are streamed: a large file in ``starting/`` costs time, not memory."""
    h = hashlib.sha256()
    for p in _iter_files(root):
        rel = p.relative_to(root).as_posix()
        if p.is_symlink():
            body = b"link:" + str(p.readlink()).encode()
            h.update(f"{rel}\0-\0{len(body)}\0".encode())
            h.update(body)
            continue
        with p.open("rb") as fh:
            st = os.fstat(fh.fileno())
            mode = "x" if st.st_mode & 0o111 else "-"
            h.update(f"{rel}\0{mode}\0{st.st_size}\0".encode())
            while chunk := fh.read(1 << 20):
                h.update(chunk)
    return "sha256:" + h.hexdigest()
