"""Token usage as an additive value type."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict


class Usage(BaseModel):
    """Tokens billed for one or more model requests, as the Messages API reports them.

    ``input_tokens`` counts only *uncached* input: the tokens after the last cache
    breakpoint. The whole prompt is ``input_tokens + cache_creation_input_tokens +
    cache_read_input_tokens``. Cache writes are split by TTL into ``cache_creation_5m`` and
    ``cache_creation_1h`` (they sum to ``cache_creation_input_tokens``), because the two are
    priced differently.
    """

    model_config = ConfigDict(extra="allow")

    input_tokens: int = 0
    output_tokens: int = 0
    cache_creation_input_tokens: int = 0
    cache_read_input_tokens: int = 0
    cache_creation_5m: int = 0
    cache_creation_1h: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            cache_creation_input_tokens=self.cache_creation_input_tokens
            + other.cache_creation_input_tokens,
            cache_read_input_tokens=self.cache_read_input_tokens + other.cache_read_input_tokens,
            cache_creation_5m=self.cache_creation_5m + other.cache_creation_5m,
            cache_creation_1h=self.cache_creation_1h + other.cache_creation_1h,
        )

    @property
    def prompt_tokens(self) -> int:
        """Every input token of the request(s), cached or not."""
        return self.input_tokens + self.cache_creation_input_tokens + self.cache_read_input_tokens

    @property
    def cache_hit_rate(self) -> float | None:
        """``cache_read / (input + cache_creation + cache_read)``; None when nothing was sent."""
        total = self.prompt_tokens
        return self.cache_read_input_tokens / total if total else None

    @classmethod
    def from_api(cls, usage: dict[str, Any] | None) -> Usage:
        """Build from an API ``usage`` object; absent or null fields count as 0.

        When the API gives no TTL split, writes are taken as 5-minute writes (the default TTL).
        """
        u = usage or {}

        def num(key: str, src: dict[str, Any] = u) -> int:
            value = src.get(key)
            return int(value) if isinstance(value, int | float) else 0

        creation = num("cache_creation_input_tokens")
        split = u.get("cache_creation") if isinstance(u.get("cache_creation"), dict) else None
        if split is not None:
            w5 = num("ephemeral_5m_input_tokens", split)
            w1 = num("ephemeral_1h_input_tokens", split)
            if w5 + w1 != creation:  # a partial split: the rest is default-TTL writes
                w5 = max(creation - w1, 0)
        else:
            w5, w1 = creation, 0
        return cls(
            input_tokens=num("input_tokens"),
            output_tokens=num("output_tokens"),
            cache_creation_input_tokens=creation,
            cache_read_input_tokens=num("cache_read_input_tokens"),
            cache_creation_5m=w5,
            cache_creation_1h=w1,
        )
