"""The builtin agent's tools, executed in the task's sandbox. Output is bounded."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from gate.sandbox import Sandbox

OUTPUT_LIMIT = 16_000  # characters of tool output the model sees


def bound(text: str, limit: int = OUTPUT_LIMIT) -> str:
    """Keep the head and the tail of long output, with a note of what was cut."""
    if len(text) <= limit:
        return text
    head, tail = text[: limit * 2 // 3], text[-(limit // 3):]
    cut = len(text) - len(head) - len(tail)
    return f"{head}\n[... {cut} characters truncated by the gate; narrow the command ...]\n{tail}"


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


def _bash(sb: Sandbox, args: dict[str, Any], timeout: float) -> str:
    res = sb.exec(_str(args, "command"), timeout=max(1.0, min(timeout, 120.0)))
    out = res.output
    if res.timed_out:
        out += "\n[command timed out and was killed]"
    elif res.returncode != 0:
        out += f"\n[exit code {res.returncode}]"
    return out or "(no output)"


def _read(sb: Sandbox, args: dict[str, Any], timeout: float) -> str:
    try:
        text = sb.read_file(_str(args, "path"))
    except (FileNotFoundError, IsADirectoryError, PermissionError) as exc:
        raise ToolError(f"cannot read {args.get('path')}: {exc.strerror}") from None
    lines = text.splitlines()
    offset = int(args.get("offset") or 0)
    limit = int(args.get("limit") or 2000)
    shown = lines[offset: offset + limit]
    body = "\n".join(f"{i + offset + 1:6}\t{ln}" for i, ln in enumerate(shown))
    if offset + limit < len(lines):
        body += f"\n[... {len(lines) - offset - limit} more lines; use offset/limit ...]"
    return body or "(empty file)"


def _write(sb: Sandbox, args: dict[str, Any], timeout: float) -> str:
    path, content = _str(args, "path"), _str(args, "content")
    sb.write_file(path, content)
    return f"wrote {len(content)} characters to {path}"


def _edit(sb: Sandbox, args: dict[str, Any], timeout: float) -> str:
    path, old, new = _str(args, "path"), _str(args, "old_string"), _str(args, "new_string")
    try:
        text = sb.read_file(path)
    except (FileNotFoundError, IsADirectoryError) as exc:
        raise ToolError(f"cannot edit {path}: {exc.strerror}") from None
    count = text.count(old) if old else 0
    if count == 0:
        raise ToolError(f"old_string not found in {path}")
    if count > 1 and not args.get("replace_all"):
        raise ToolError(f"old_string occurs {count} times in {path}; make it unique "
                        "or set replace_all")
    sb.write_file(path, text.replace(old, new) if args.get("replace_all")
                  else text.replace(old, new, 1))
    return f"edited {path} ({count if args.get('replace_all') else 1} replacement)"


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
    """(output, is_error) — a tool never raises into the agent loop."""
    try:
        return bound(tool.run(sb, args, timeout)), False
    except ToolError as exc:
        return str(exc), True
    except (OSError, ValueError, TypeError) as exc:
        return f"{tool.name} failed: {exc}", True
