"""Prices are data (``gate/data/prices.toml``, dated); cost is a pure function of usage.

Cost is computed per model request, because a tier can depend on the size of one request's
prompt (Haiku 5.5 charges long-context rates on every token of a request over 100k).
"""

from __future__ import annotations

import difflib
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from gate._files import describe_validation_error
from gate.core.config import PriceOverride
from gate.errors import BadInput
from gate.usage import Usage

_DATED = re.compile(r"^(?P<family>.+?)(?:-\d{8}|-latest)$")
#: a model id as Anthropic names them: ``claude-<family>-<major>[-<minor>]``
_NAMED = re.compile(r"^claude-([a-z]+)-\d+(?:-\d+)?$")


@dataclass(frozen=True)
class Rates:
    """USD per million tokens."""

    input: float
    cache_write_5m: float
    cache_write_1h: float
    cache_read: float
    output: float

    @classmethod
    def from_price(cls, p: PriceOverride) -> Rates:
        """Cache prices default to 1.25x / 2x / 0.1x of input only when *absent*: an explicit
        0 (a free cache read on some contract) is a price, not a missing value."""

        def given(value: float | None, factor: float) -> float:
            return p.input * factor if value is None else value

        return cls(
            input=p.input,
            cache_write_5m=given(p.cache_write_5m, 1.25),
            cache_write_1h=given(p.cache_write_1h, 2.0),
            cache_read=given(p.cache_read, 0.1),
            output=p.output,
        )


class _BundledModel(PriceOverride):
    """One model of the bundled table: the same validation as a gate.toml override, plus an
    optional long-context tier."""

    long_context: PriceOverride | None = None
    long_context_threshold: int | None = Field(default=None, gt=0)


class _BundledTable(BaseModel):
    model_config = ConfigDict(extra="forbid")

    date: str
    models: dict[str, _BundledModel]
    # USD per use of a server tool, keyed by the ``usage.server_tool_use`` count that bills it
    server_tools: dict[str, float] = Field(default_factory=dict)

    @field_validator("server_tools")
    @classmethod
    def _not_negative(cls, fees: dict[str, float]) -> dict[str, float]:
        for key, fee in fees.items():
            if fee < 0:
                raise ValueError(f"{key}: a price must not be negative")
        return fees


@dataclass(frozen=True)
class ModelPrice:
    rates: Rates
    long_context: Rates | None = None
    long_context_threshold: int | None = None

    def rates_for(self, usage: Usage) -> Rates:
        if self.long_context and self.long_context_threshold is not None \
                and usage.prompt_tokens > self.long_context_threshold:
            return self.long_context
        return self.rates


@dataclass(frozen=True)
class PriceTable:
    date: str
    models: Mapping[str, ModelPrice]
    #: USD per use of a server tool, by the ``usage.server_tool_use`` count that bills it
    server_tools: Mapping[str, float] = field(default_factory=dict)

    def resolve(self, model: str) -> ModelPrice:
        """Exact id, else its family (a dated or ``-latest`` id), else a clear ``BadInput``."""
        if model in self.models:
            return self.models[model]
        m = _DATED.match(model)
        if m and m.group("family") in self.models:
            return self.models[m.group("family")]
        if (near := self.misspelled(model)) is not None:
            raise BadInput(f"model {model!r} is not in the price table of {self.date}: "
                           f"did you mean {near!r}?")
        raise BadInput(
            f"no price for model {model!r} (price table of {self.date}): add it to gate.toml as "
            f'[agent.prices."{model}"] with input = ... and output = ... (USD per million tokens)'
        )

    def misspelled(self, model: str) -> str | None:
        """The known model ``model`` is a misspelling of, or None. A name built as the table's
        are (``claude-<a family of the table>-<version>``, a date or ``-latest`` after it) is
        taken for a model newer than the table, never a misspelling: ``claude-sonnet-9-0``
        gets the price advice, ``claude-sonet-5-5`` the nearest name (difflib)."""
        m = _DATED.match(model)
        bare = m.group("family") if m else model
        families = {f.group(1) for name in self.models
                    if (f := _NAMED.match(name)) is not None}
        named = _NAMED.match(bare)
        if named is not None and named.group(1) in families:
            return None
        near = difflib.get_close_matches(bare, list(self.models), n=1, cutoff=0.8)
        if not near:  # a difference of case alone is a misspelling too
            near = difflib.get_close_matches(bare.lower(), list(self.models), n=1, cutoff=0.8)
        return near[0] if near else None

    def with_overrides(self, overrides: Mapping[str, PriceOverride]) -> PriceTable:
        if not overrides:
            return self
        models = dict(self.models)
        for name, o in overrides.items():
            models[name] = ModelPrice(Rates.from_price(o))
        return PriceTable(self.date, models, self.server_tools)

    def cost(self, model: str, usage: Usage) -> float:
        return request_cost(self.resolve(model), usage)

    def tool_fees(self, counts: Mapping[str, int]) -> tuple[float, list[str]]:
        """USD for a request's billed server-tool uses (``usage.server_tool_use``'s counts),
        and the counts this table has no price for (never priced at $0 in silence)."""
        fee = sum(n * self.server_tools[k] for k, n in counts.items() if k in self.server_tools)
        return fee, sorted(k for k in counts if k not in self.server_tools)


def request_cost(price: ModelPrice, usage: Usage) -> float:
    """USD for one request's usage. ``input_tokens`` is the uncached part only."""
    r = price.rates_for(usage)
    # Writes with no TTL split recorded count as 5-minute writes (the API's default TTL).
    unsplit = usage.cache_creation_input_tokens - usage.cache_creation_5m - usage.cache_creation_1h
    total = (
        usage.input_tokens * r.input
        + (usage.cache_creation_5m + max(unsplit, 0)) * r.cache_write_5m
        + usage.cache_creation_1h * r.cache_write_1h
        + usage.cache_read_input_tokens * r.cache_read
        + usage.output_tokens * r.output
    )
    return total / 1_000_000


def parse_price_table(text: str, where: str) -> PriceTable:
    """A price table in the bundled format, validated like gate.toml's overrides."""
    try:
        table = _BundledTable.model_validate(tomllib.loads(text))
    except tomllib.TOMLDecodeError as exc:
        raise BadInput(f"{where}: not valid TOML: {exc}") from None
    except ValidationError as exc:
        raise BadInput(f"{where}: {describe_validation_error(exc)}") from None
    models: dict[str, ModelPrice] = {}
    for name, m in table.models.items():
        if (m.long_context is None) != (m.long_context_threshold is None):
            raise BadInput(f"{where}: models.{name}: long_context and long_context_threshold "
                           "go together")
        models[name] = ModelPrice(
            Rates.from_price(m),
            Rates.from_price(m.long_context) if m.long_context else None,
            m.long_context_threshold,
        )
    return PriceTable(table.date, models, dict(table.server_tools))


@lru_cache(maxsize=1)
def default_prices() -> PriceTable:
    text = resources.files("gate").joinpath("data/prices.toml").read_text("utf-8")
    return parse_price_table(text, "gate/data/prices.toml")


def price_table(overrides: Mapping[str, PriceOverride] | None = None) -> PriceTable:
    return default_prices().with_overrides(overrides or {})
