"""The builtin agent's tools, executed in the task's sandbox. Output is bounded.

Whatever the model sends (wrong types, absurd numbers, a path that loops, a directory, a
binary file, a FIFO), a tool answers with a tool error the model can read; only the sandbox
itself failing (``SandboxError``: the run was cancelled) is the harness's problem.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from errno import EFBIG
from typing import Any

from gate.sandbox import Sandbox, SandboxError, clip

OUTPUT_LIMIT = 16_000  # characters of tool output the model sees
MAX_LINES = 100_000  # the largest `limit` read_file honours


def bound(text: str, limit: int = OUTPUT_LIMIT) -> str:
    """Keep the head and the tail of long output, with a note of what was cut."""
    return clip(text, limit, "; narrow the command")


@dataclass(frozen=True)
class Tool:
    name: str
    description: str
    input_schema: dict[str, Any]
    run: Callable[[Sandbox, dict[str, Any], float], str]

    def schema(self) -> dict[str, Any]:
        return {"name": self.name, "description": self.description,
                "input_schema": self.input_schema}


class ToolError(Exception):
    """A tool call the model got wrong: reported back to it as ``is_error``."""


def _str(args: dict[str, Any], key: str) -> str:
    value = args.get(key)
    if not isinstance(value, str):
        raise ToolError(f"`{key}` must be a string")
    return value


def _int(args: dict[str, Any], key: str, default: int, lo: int, hi: int) -> int:
    """An integer argument in [lo, hi] (a whole float such as 10.0 is accepted)."""
    value = args.get(key)
    if value is None:
        return default
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
        raise ToolError(f"`{key}` must be an integer from {lo} to {hi}")
    return value


def _flag(args: dict[str, Any], key: str) -> bool:
    value = args.get(key, False)
    if not isinstance(value, bool):
        raise ToolError(f"`{key}` must be true or false")
    return value


def _bash(sb: Sandbox, args: dict[str, Any], timeout: float) -> str:
    res = sb.exec(_str(args, "command"), timeout=max(1.0, min(timeout, 120.0)))
    out = res.output
    if res.timed_out:
        out += "\n[command timed out and was killed]"
    elif res.returncode != 0:
        out += f"\n[exit code {res.returncode}]"
    return out or "(no output)"


def _read(sb: Sandbox, args: dict[str, Any], timeout: float) -> str:
    path = _str(args, "path")
    offset = _int(args, "offset", 0, 0, 2**63)
    limit = _int(args, "limit", 2000, 1, MAX_LINES)
    try:
        text = sb.read_file(path)
    except OSError as exc:
        hint = "; read it in parts with bash (sed -n, grep, head)" if exc.errno == EFBIG else ""
        raise ToolError(f"cannot read {path}: {exc.strerror or exc}{hint}") from None
    if "\x00" in text[:8192]:
        raise ToolError(f"{path} is a binary file; inspect it with bash (file, xxd, od)")
    lines = text.splitlines()
    shown = lines[offset: offset + limit]
    body = "\n".join(f"{i + offset + 1:6}\t{ln}" for i, ln in enumerate(shown))
    if offset + limit < len(lines):
        body += f"\n[... {len(lines) - offset - limit} more lines; use offset/limit ...]"
    return body or "(empty file)"


def _write(sb: Sandbox, args: dict[str, Any], timeout: float) -> str:
    path, content = _str(args, "path"), _str(args, "content")
    try:
        sb.write_file(path, content)
    except OSError as exc:
        raise ToolError(f"cannot write {path}: {exc.strerror or exc}") from None
    return f"wrote {len(content)} characters to {path}"


def _edit(sb: Sandbox, args: dict[str, Any], timeout: float) -> str:
    path, old, new = _str(args, "path"), _str(args, "old_string"), _str(args, "new_string")
    replace_all = _flag(args, "replace_all")
    try:
        text = sb.read_file(path)
    except OSError as exc:
        raise ToolError(f"cannot edit {path}: {exc.strerror or exc}") from None
    if "\x00" in text[:8192]:
        raise ToolError(f"{path} is a binary file; edit_file edits text")
    count = text.count(old) if old else 0
    if count == 0:
        raise ToolError(f"old_string not found in {path}")
    if count > 1 and not replace_all:
        raise ToolError(f"old_string occurs {count} times in {path}; make it unique "
                        "or set replace_all")
    try:
        sb.write_file(path, text.replace(old, new) if replace_all else text.replace(old, new, 1))
    except OSError as exc:
        raise ToolError(f"cannot edit {path}: {exc.strerror or exc}") from None
    return f"edited {path} ({count if replace_all else 1} replacement)"


TOOLS: dict[str, Tool] = {
    t.name: t
    for t in (
        Tool("bash", "Run a bash command in the task's workspace (cwd = workspace). "
             "Returns stdout and stderr, truncated if long. Non-interactive; 120 s limit.",
             {"type": "object", "properties": {
                 "command": {"type": "string", "description": "The command to run."}},
              "required": ["command"]}, _bash),
        Tool("read_file", "Read a text file with line numbers. Paths are relative to the "
             "workspace. Use offset/limit for long files.",
             {"type": "object", "properties": {
                 "path": {"type": "string"},
                 "offset": {"type": "integer", "description": "First line (0-based)."},
                 "limit": {"type": "integer", "description": "Number of lines."}},
              "required": ["path"]}, _read),
        Tool("write_file", "Create or overwrite a file with the given content.",
             {"type": "object", "properties": {
                 "path": {"type": "string"}, "content": {"type": "string"}},
              "required": ["path", "content"]}, _write),
        Tool("edit_file", "Replace an exact string in a file. old_string must match exactly "
             "once unless replace_all is true.",
             {"type": "object", "properties": {
                 "path": {"type": "string"}, "old_string": {"type": "string"},
                 "new_string": {"type": "string"},
                 "replace_all": {"type": "boolean"}},
              "required": ["path", "old_string", "new_string"]}, _edit),
    )
}


def run_tool(tool: Tool, sb: Sandbox, args: dict[str, Any], timeout: float) -> tuple[str, bool]:
    """(output, is_error) — a tool never raises into the agent loop, except when the sandbox
    itself fails (``SandboxError``: the run is being stopped), which is infra."""
    try:
        if not isinstance(args, dict):
            raise ToolError("the tool input must be a JSON object")
        return bound(tool.run(sb, args, timeout)), False
    except ToolError as exc:
        return bound(str(exc)), True
    except SandboxError:
        raise
    except Exception as exc:  # whatever the model sent, the model gets to read what went wrong
        return bound(f"{tool.name} failed: {type(exc).__name__}: {exc}"), True
