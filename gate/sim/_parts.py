"""An answer too long for ``max_tokens``, written in parts (:func:`gate.sim._model.in_parts`):
the commands that write a command's text to a file, each one's answer under ``max_tokens``."""

from __future__ import annotations

import json
import shlex

from gate.sim._tokens import BLOCK_OVERHEAD, block_tokens, text_tokens

#: below this room (bytes of command per answer) an act is not written in parts: it is cut
MIN_PART_BYTES = 512
PART_SLACK = 16  # tokens kept free in each part's answer


def answer_tokens(text: str, tool: str, command: str) -> int:
    return block_tokens({"type": "text", "text": text}) + block_tokens(
        {"type": "tool_use", "name": tool, "input": {"command": command}})


def delimiter(text: str, stem: str) -> str:
    """A heredoc delimiter that is no line of ``text``."""
    lines = set(text.splitlines())
    n = 0
    while (word := f"{stem}_{n}" if n else stem) in lines:
        n += 1
    return word


PART_TEXT = "This is long, so I'll write it to a file in parts (999 of 999)."


def parts_of(cmd: str, tool: str, max_tokens: int, path: str) -> list[str] | None:
    """The commands that write ``cmd`` (plus a final newline) to ``$f``, each one's answer
    under ``max_tokens``; None when an answer leaves too little room."""
    fixed = (block_tokens({"type": "text", "text": PART_TEXT}) + BLOCK_OVERHEAD
             + text_tokens(tool) + text_tokens('{"command":""}') + PART_SLACK)
    end = delimiter(cmd, "GATE_SIM_PART")
    wrapper = len(json.dumps(f"{path}cat >> \"$f\" <<'{end}'\n{end}")[1:-1].encode())
    room = (max_tokens - fixed) * 4 - wrapper
    if room < MIN_PART_BYTES:
        return None
    ops: list[tuple[str, str]] = []  # ("lines" | "piece", text)
    batch, used = "", 0
    for line in (cmd if cmd.endswith("\n") else cmd + "\n").splitlines(keepends=True):
        size = _json_bytes(line)
        if size > room:  # a line longer than an answer: in printf pieces
            if batch:
                ops.append(("lines", batch))
                batch, used = "", 0
            ops += [("piece", p) for p in _pieces(line, room)]
            continue
        if used + size > room:
            ops.append(("lines", batch))
            batch, used = "", 0
        batch, used = batch + line, used + size
    if batch:
        ops.append(("lines", batch))
    out: list[str] = []
    for k, (kind, text) in enumerate(ops):
        to = ">" if k == 0 else ">>"
        out.append(f"{path}cat {to} \"$f\" <<'{end}'\n{text}{end}" if kind == "lines"
                   else f"{path}printf %s {shlex.quote(text)} {to} \"$f\"")
    return out if all(answer_tokens(PART_TEXT, tool, c) <= max_tokens for c in out) else None


def _json_bytes(text: str) -> int:
    return len(json.dumps(text, ensure_ascii=False)[1:-1].encode("utf-8"))


def _pieces(line: str, room: int) -> list[str]:
    """``line`` cut into pieces whose quoted form (``printf %s '...'``) fits ``room``."""
    out: list[str] = []
    piece, used = "", 2  # the quotes
    for ch in line:
        size = 7 if ch == "'" else _json_bytes(ch)  # ' is written '"'"'
        if used + size > room:
            out.append(piece)
            piece, used = "", 2
        piece, used = piece + ch, used + size
    if piece:
        out.append(piece)
    return out


