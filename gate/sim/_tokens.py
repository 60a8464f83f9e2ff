"""A deterministic token estimate, so usage and cache numbers are stable across runs.

The rule (documented because tests, baselines and users rely on it):

- ``text_tokens(s) = ceil(len(s.encode("utf-8")) / 4)`` — about four bytes per token, which is
  close to real tokenizers on English and code and costs nothing to compute.
- Structured values (tool definitions, ``tool_use`` input, unknown blocks) are measured over their
  *canonical JSON*: ``json.dumps(value, sort_keys=True, separators=(",", ":"),
  ensure_ascii=False)`` with every ``cache_control`` key removed (marking a block for caching
  does not change what it says).
- Every block costs ``BLOCK_OVERHEAD`` (3) tokens on top of its content:
  text → its text; tool definition → canonical JSON of ``{name, description, input_schema}``
  (or of the whole definition for typed tools such as ``bash_20250124``);
  ``tool_use`` → name + canonical JSON of ``input``; ``tool_result`` → its content (a string, or
  the sum of its inner blocks); image / document → ``IMAGE_TOKENS`` (1,000); thinking → its text.
"""

from __future__ import annotations

import json
import math
from typing import Any

BLOCK_OVERHEAD = 3
IMAGE_TOKENS = 1000


def text_tokens(text: str) -> int:
    """``ceil(utf-8 bytes / 4)``."""
    return math.ceil(len(text.encode("utf-8")) / 4)


def strip_cache_control(value: Any) -> Any:
    """The value with every ``cache_control`` key removed, recursively."""
    if isinstance(value, dict):
        return {k: strip_cache_control(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [strip_cache_control(v) for v in value]
    return value


def canonical_json(value: Any) -> str:
    """Key-sorted, compact, ``cache_control``-free JSON: the identity of a block."""
    return json.dumps(strip_cache_control(value), sort_keys=True, separators=(",", ":"),
                      ensure_ascii=False)


def json_tokens(value: Any) -> int:
    return text_tokens(canonical_json(value))


def tool_tokens(tool: dict[str, Any]) -> int:
    """A tool definition: name, description and input schema (typed tools: the whole object)."""
    if "input_schema" in tool:
        core = {k: tool.get(k) for k in ("name", "description", "input_schema") if k in tool}
        return BLOCK_OVERHEAD + json_tokens(core)
    return BLOCK_OVERHEAD + json_tokens(tool)


def block_tokens(block: dict[str, Any]) -> int:
    """One content block of a message or of ``system``."""
    kind = block.get("type")
    if kind == "text":
        return BLOCK_OVERHEAD + text_tokens(str(block.get("text", "")))
    if kind == "tool_use":
        return (BLOCK_OVERHEAD + text_tokens(str(block.get("name", "")))
                + json_tokens(block.get("input", {})))
    if kind == "tool_result":
        content = block.get("content")
        if content is None:
            inner = 0
        elif isinstance(content, str):
            inner = text_tokens(content)
        elif isinstance(content, list):
            inner = sum(block_tokens(b) if isinstance(b, dict) else json_tokens(b)
                        for b in content)
        else:
            inner = json_tokens(content)
        return BLOCK_OVERHEAD + inner
    if kind in ("image", "document"):
        return BLOCK_OVERHEAD + IMAGE_TOKENS
    if kind == "thinking":
        return BLOCK_OVERHEAD + text_tokens(str(block.get("thinking", "")))
    if kind == "redacted_thinking":
        return BLOCK_OVERHEAD + text_tokens(str(block.get("data", "")))
    return BLOCK_OVERHEAD + json_tokens(block)
