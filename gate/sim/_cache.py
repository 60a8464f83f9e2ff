"""Prompt caching as the API does it: breakpoints, prefix order, lookback, TTLs, minimums.

A request's prompt is flattened into blocks in prefix order — tools, then system, then
messages — and each block gets a chained hash of everything up to it (seeded with the model, so
a model change misses everything; ``tool_choice`` and thinking settings are mixed in where the
messages start, so changing them misses the messages only). A breakpoint (``cache_control``)
names a prefix the request may write; a later request reads the longest live entry found at or
up to ``LOOKBACK`` blocks before any of its breakpoints. Entries live per API key, expire after
their TTL and are refreshed on every hit.

Usage follows the API: ``cache_read_input_tokens`` is the hit prefix, the tokens from there to
the last breakpoint are ``cache_creation_input_tokens`` (split 5m / 1h by the breakpoint that
wrote each segment) and ``input_tokens`` is only what comes after the last breakpoint. A
breakpoint whose prefix is shorter than the model's minimum cacheable length is ignored, with no
error. The lookup (``plan``) and the write (``commit``) are separate so the server can make an
entry visible only once its response has begun, like the API.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from gate.sim._families import min_cacheable_tokens
from gate.sim._protocol import invalid
from gate.sim._tokens import block_tokens, canonical_json, tool_tokens

MAX_BREAKPOINTS = 4
LOOKBACK = 20
TTL_SECONDS: dict[str, float] = {"5m": 300.0, "1h": 3600.0}


@dataclass(frozen=True)
class PromptBlock:
    """One block of the prompt in prefix order, with the breakpoint it carries (if any)."""

    section: str
    tokens: int
    ttl: str | None
    digest: str


@dataclass(frozen=True)
class CacheUsage:
    input_tokens: int
    cache_creation_input_tokens: int
    cache_read_input_tokens: int
    ephemeral_5m_input_tokens: int
    ephemeral_1h_input_tokens: int

    def as_api(self, output_tokens: int) -> dict[str, Any]:
        """The ``usage`` object of a response, field for field as the API sends it."""
        return {
            "input_tokens": self.input_tokens,
            "cache_creation_input_tokens": self.cache_creation_input_tokens,
            "cache_read_input_tokens": self.cache_read_input_tokens,
            "cache_creation": {
                "ephemeral_5m_input_tokens": self.ephemeral_5m_input_tokens,
                "ephemeral_1h_input_tokens": self.ephemeral_1h_input_tokens,
            },
            "output_tokens": output_tokens,
            "service_tier": "standard",
        }


@dataclass
class CachePlan:
    """The outcome of a lookup: the usage to report and the writes to make once served."""

    key_id: str
    usage: CacheUsage
    writes: list[tuple[str, int, str]] = field(default_factory=list)
    refresh: list[tuple[str, int, str]] = field(default_factory=list)


@dataclass
class _Entry:
    tokens: int
    ttl: str
    expires_at: float


def _ttl_of(cc: Any, where: str) -> str:
    if not isinstance(cc, dict) or cc.get("type") != "ephemeral":
        raise invalid(f"{where}.cache_control.type: Input should be 'ephemeral'")
    ttl = cc.get("ttl", "5m")
    if ttl not in TTL_SECONDS:
        raise invalid(f"{where}.cache_control.ttl: Input should be '5m' or '1h'")
    return str(ttl)


def _message_blocks(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [b for b in content if isinstance(b, dict)]


def flatten(request: dict[str, Any]) -> list[PromptBlock]:
    """The prompt as blocks in prefix order; raises the API's 400s for bad breakpoints."""
    model = str(request.get("model", ""))
    h = hashlib.sha256(f"model:{model}".encode()).hexdigest()
    out: list[PromptBlock] = []

    def add(section: str, identity: str, tokens: int, cc: Any, where: str) -> None:
        nonlocal h
        h = hashlib.sha256(f"{h}\0{section}\0{identity}".encode()).hexdigest()
        ttl = _ttl_of(cc, where) if cc is not None else None
        out.append(PromptBlock(section, tokens, ttl, h))

    for i, tool in enumerate(request.get("tools") or []):
        add("tools", canonical_json(tool), tool_tokens(tool), tool.get("cache_control"),
            f"tools.{i}")
    system = request.get("system")
    sys_blocks = [{"type": "text", "text": system}] if isinstance(system, str) else (system or [])
    for i, block in enumerate(sys_blocks):
        if isinstance(block, dict):
            _no_empty_text(block, f"system.{i}")
            add("system", canonical_json(block), block_tokens(block), block.get("cache_control"),
                f"system.{i}")
    salt = canonical_json({"tool_choice": request.get("tool_choice"),
                           "thinking": request.get("thinking")})
    h = hashlib.sha256(f"{h}\0messages\0{salt}".encode()).hexdigest()
    for mi, msg in enumerate(request.get("messages") or []):
        role = msg.get("role")
        for bi, block in enumerate(_message_blocks(msg.get("content"))):
            _no_empty_text(block, f"messages.{mi}.content.{bi}")
            add("messages", canonical_json({"role": role, "block": block}), block_tokens(block),
                block.get("cache_control"), f"messages.{mi}.content.{bi}")
    auto = request.get("cache_control")
    if auto is not None and out:
        ttl = _ttl_of(auto, "cache_control")
        last = out[-1]
        if last.ttl is None:
            out[-1] = PromptBlock(last.section, last.tokens, ttl, last.digest)
    _check_breakpoints(out)
    return out


def _no_empty_text(block: dict[str, Any], where: str) -> None:
    if block.get("cache_control") is not None and block.get("type") == "text" \
            and not block.get("text"):
        raise invalid(f"{where}: cache_control cannot be set for empty text blocks")


def _check_breakpoints(blocks: list[PromptBlock]) -> None:
    ttls = [b.ttl for b in blocks if b.ttl is not None]
    if len(ttls) > MAX_BREAKPOINTS:
        raise invalid(f"A maximum of {MAX_BREAKPOINTS} blocks with cache_control may be "
                      f"provided. Found {len(ttls)}.")
    seen_5m = False
    for ttl in ttls:
        if ttl == "5m":
            seen_5m = True
        elif seen_5m:
            raise invalid("a ttl='1h' cache_control block must not come after a ttl='5m' "
                          "cache_control block. Note that blocks are processed in the following "
                          "order: `tools`, `system`, `messages`.")


def prompt_tokens(blocks: list[PromptBlock]) -> int:
    return sum(b.tokens for b in blocks)


class PromptCache:
    """Cache entries per API key (by key id), keyed by prefix hash; thread-safe."""

    def __init__(self, clock: Callable[[], float]) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._keys: dict[str, dict[str, _Entry]] = {}

    def plan(self, key_id: str, model: str, blocks: list[PromptBlock]) -> CachePlan:
        """Look the prompt up without changing the cache."""
        now = self._clock()
        prefix: list[int] = []
        running = 0
        for b in blocks:
            running += b.tokens
            prefix.append(running)
        total = running
        minimum = min_cacheable_tokens(model)
        bps = [i for i, b in enumerate(blocks) if b.ttl is not None]
        with self._lock:
            entries = self._keys.get(key_id, {})
            hit = -1
            for i in bps:
                for p in range(i, max(i - LOOKBACK, -1), -1):
                    e = entries.get(blocks[p].digest)
                    if e is not None and e.expires_at > now:
                        hit = max(hit, p)
                        break
        read = prefix[hit] if hit >= 0 else 0
        effective = [i for i in bps if prefix[i] >= minimum]
        w = {"5m": 0, "1h": 0}
        writes: list[tuple[str, int, str]] = []
        refresh: list[tuple[str, int, str]] = []
        if hit >= 0:
            refresh.append((blocks[hit].digest, prefix[hit], "5m"))
        covered = read
        for i in effective:
            ttl = blocks[i].ttl or "5m"
            if i <= hit:
                refresh.append((blocks[i].digest, prefix[i], ttl))
                continue
            w[ttl] += prefix[i] - covered
            covered = prefix[i]
            writes.append((blocks[i].digest, prefix[i], ttl))
        last = max(effective[-1] if effective else -1, hit)
        cached_upto = prefix[last] if last >= 0 else 0
        usage = CacheUsage(
            input_tokens=total - cached_upto,
            cache_creation_input_tokens=w["5m"] + w["1h"],
            cache_read_input_tokens=read,
            ephemeral_5m_input_tokens=w["5m"],
            ephemeral_1h_input_tokens=w["1h"],
        )
        return CachePlan(key_id, usage, writes, refresh)

    def commit(self, plan: CachePlan) -> None:
        """Make the plan's writes visible and refresh the entries it hit."""
        now = self._clock()
        with self._lock:
            entries = self._keys.setdefault(plan.key_id, {})
            for digest, _tokens, ttl in plan.refresh:
                e = entries.get(digest)
                if e is not None:
                    e.expires_at = max(e.expires_at, now + TTL_SECONDS[e.ttl])
                else:
                    entries[digest] = _Entry(_tokens, ttl, now + TTL_SECONDS[ttl])
            for digest, tokens, ttl in plan.writes:
                entries[digest] = _Entry(tokens, ttl, now + TTL_SECONDS[ttl])
            for digest in [d for d, e in entries.items() if e.expires_at <= now]:
                del entries[digest]
