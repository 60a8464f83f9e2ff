"""The gate's own layouts: SWE-lite (``setup.sh`` + ``task.md`` + ``verify.sh``) and the
effectiveness benchmark (``starting/`` + ``task.md`` + ``verify.sh`` + ``metadata.json``).

Both may add ``task.toml`` (ours, :class:`~gate.formats.TaskMeta`: an unknown key is an error
naming it) and ``solution/solve.sh``. Scripts run as ``bash <task dir>/<script>`` with
``TASK_DIR`` set, cwd = workspace; ``verify.sh`` decides by its exit status (0 = pass). It runs
in any sandbox (a fresh container per command where the task names an image or Dockerfile).
This is the fallback format: a directory no other format recognises is reported by it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import ValidationError

from gate._files import (
    PROMPT_LIMIT,
    TASK_META_LIMIT,
    describe_validation_error,
    digest_dir,
    printable,
    read_json,
    read_text,
    read_toml,
)
from gate.errors import BadInput
from gate.formats import (
    NEEDS_CONTAINER,
    ExecResult,
    Task,
    TaskFormat,
    TaskMeta,
    Verification,
    Workspace,
    reading,
)


def task_meta(name: str, path: Path) -> TaskMeta:
    """Our ``task.toml``: an unknown key is an error naming it (a misspelt key would
    silently change nothing)."""
    data = reading(name, path, lambda: read_toml(path, TASK_META_LIMIT, "task.toml"))
    unknown = sorted(set(data) - set(TaskMeta.model_fields))
    if unknown:
        raise BadInput(f"{name}: task.toml: unknown key {printable(unknown[0])!r} (known: "
                       f"{', '.join(TaskMeta.model_fields)})")
    try:
        return TaskMeta.model_validate(data)
    except ValidationError as exc:
        raise BadInput(f"{name}: task.toml: {describe_validation_error(exc)}") from None


def _file(path: Path) -> Path | None:
    return path if path.is_file() else None


def container_need(meta: TaskMeta, path: Path) -> str | None:
    """Why a task of ours needs a container: it names an image or a Dockerfile
    (``[environment]``), or ships ``environment/``. ``None``: the host runs it too."""
    if meta.environment is not None:
        return f"task.toml: [environment] {NEEDS_CONTAINER}"
    if (path / "environment").exists():
        return f"environment/ {NEEDS_CONTAINER}"
    return None


class GateFormat(TaskFormat):
    name = "gate"
    lifecycle = "per_command"

    def detect(self, path: Path) -> bool:
        return (path / "task.md").is_file()

    def load(self, path: Path, name: str) -> Task:
        if not (path / "task.md").is_file():
            raise BadInput(f"{name}: missing task.md")
        if not (path / "verify.sh").is_file():
            raise BadInput(f"{name}: missing verify.sh")
        prompt_path = path / "task.md"
        prompt: str = reading(name, prompt_path,
                              lambda: read_text(prompt_path, PROMPT_LIMIT, "task.md"))
        toml_path = path / "task.toml"
        meta = task_meta(name, toml_path) if toml_path.exists() else TaskMeta()
        if meta.environment and meta.environment.dockerfile and not (
                path / meta.environment.dockerfile).is_file():
            raise BadInput(f"{name}: task.toml: [environment] dockerfile: "
                           f"{printable(meta.environment.dockerfile)} not found")
        metadata: dict[str, Any] = {}
        meta_json = path / "metadata.json"
        if meta_json.exists():
            loaded = reading(name, meta_json,
                             lambda: read_json(meta_json, TASK_META_LIMIT, "metadata.json"))
            if not isinstance(loaded, dict):
                raise BadInput(f"{name}: metadata.json must be a JSON object")
            metadata = loaded
        root = path.resolve()
        return Task(id=path.name, path=root, prompt=prompt, digest=digest_dir(path),
                    meta=meta, metadata=metadata, format_name=self.name,
                    setup_script=_file(root / "setup.sh"), verify_script=root / "verify.sh",
                    starting_dir=root / "starting" if (root / "starting").is_dir() else None,
                    container_need=container_need(meta, root))

    def run_script(self, sandbox: Workspace, rel: str, *, timeout: float) -> ExecResult:
        return sandbox.run_task_script(rel, timeout=timeout)

    def verify(self, sandbox: Workspace, *, timeout: float,
               step: int | None = None) -> Verification:
        res = sandbox.run_task_script("verify.sh", timeout=timeout, own_home=True)
        return Verification(res, passed=res.returncode == 0 and not res.timed_out)


FORMAT = GateFormat()
