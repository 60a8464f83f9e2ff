"""Reading and writing the files the gate owns: atomic writes, typed loads, clear errors."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from gate.errors import BadInput

M = TypeVar("M", bound=BaseModel)


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
    """The first problem of a pydantic error as ``field.path: message``."""
    err = exc.errors()[0]
    loc = ".".join(str(p) for p in err.get("loc", ())) or "(top level)"
    return f"{loc}: {err.get('msg', 'invalid')}"


def load_json_model(path: str | os.PathLike[str], model: type[M], what: str) -> M:
    """Load and validate a JSON file; any problem is one ``BadInput`` line naming file and field."""
    p = Path(path)
    try:
        raw = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise BadInput(f"{p}: {what} not found") from None
    except OSError as exc:
        raise BadInput(f"{p}: cannot read {what}: {exc.strerror}") from None
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise BadInput(f"{p}: not valid JSON ({exc.msg} at line {exc.lineno})") from None
    if not isinstance(data, dict):
        raise BadInput(f"{p}: {what} must be a JSON object")
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise BadInput(f"{p}: invalid {what}: {describe_validation_error(exc)}") from None
