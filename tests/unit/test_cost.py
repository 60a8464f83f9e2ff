from __future__ import annotations

import re

import pytest

from gate.core.config import PriceOverride
from gate.core.cost import price_table
from gate.errors import BadInput
from gate.usage import Usage


def test_cost_matches_hand_computation() -> None:
    u = Usage(input_tokens=1_000, output_tokens=500, cache_creation_input_tokens=3_000,
              cache_read_input_tokens=20_000, cache_creation_5m=2_000, cache_creation_1h=1_000)
    # sonnet 5.5: 2 in, 2.5 5m-write, 4 1h-write, 0.10 read, 10 out (USD / Mtok)
    expected = (1_000 * 2 + 2_000 * 2.5 + 1_000 * 4 + 20_000 * 0.10 + 500 * 10) / 1e6
    assert price_table().cost("claude-sonnet-5-5", u) == pytest.approx(expected)


def test_dated_id_prices_as_family_and_unknown_model_is_clear() -> None:
    t = price_table()
    u = Usage(input_tokens=1_000_000)
    assert t.cost("claude-sonnet-4-5-20250929", u) == pytest.approx(3.0)
    with pytest.raises(BadInput, match=r'\[agent.prices."claude-nova-9"\]'):
        t.cost("claude-nova-9", u)


def test_haiku_5_5_long_prompt_tier_applies_to_every_token() -> None:
    t = price_table()
    short = Usage(input_tokens=90_000, output_tokens=1_000)
    long = Usage(input_tokens=50_000, cache_read_input_tokens=60_000, output_tokens=1_000)
    assert t.cost("claude-haiku-5-5", short) == pytest.approx((90_000 * 0.10 + 1_000 * 0.5) / 1e6)
    assert t.cost("claude-haiku-5-5", long) == pytest.approx(
        (50_000 * 0.5 + 60_000 * 0.05 + 1_000 * 2.5) / 1e6)


def test_every_model_of_the_price_sheet_is_present() -> None:
    names = set(price_table().models)
    for m in ("claude-fable-5-2", "claude-mythos-5-2", "claude-fable-5-1", "claude-mythos-5-1",
              "claude-fable-5", "claude-mythos-5", "claude-opus-5-5", "claude-opus-5",
              "claude-opus-4-8", "claude-opus-4-7", "claude-opus-4-6", "claude-opus-4-5",
              "claude-opus-4-1", "claude-opus-4", "claude-sonnet-5-5", "claude-sonnet-5",
              "claude-sonnet-4-6", "claude-sonnet-4-5", "claude-sonnet-4", "claude-haiku-5-5",
              "claude-haiku-4-5", "claude-haiku-3-5"):
        assert m in names


def test_override_adds_a_model_with_default_cache_multipliers() -> None:
    t = price_table({"my-model": PriceOverride(input=1.0, output=5.0)})
    u = Usage(cache_creation_input_tokens=1_000_000, cache_creation_5m=1_000_000)
    assert t.cost("my-model", u) == pytest.approx(1.25)
    assert t.cost("my-model", Usage(cache_read_input_tokens=1_000_000)) == pytest.approx(0.1)


def test_usage_from_api_and_hit_rate() -> None:
    u = Usage.from_api({"input_tokens": 10, "output_tokens": 5,
                        "cache_creation_input_tokens": 30, "cache_read_input_tokens": 60,
                        "cache_creation": {"ephemeral_5m_input_tokens": 0,
                                           "ephemeral_1h_input_tokens": 30},
                        "server_tool_use": None, "service_tier": "standard"})
    assert (u.cache_creation_1h, u.cache_creation_5m) == (30, 0)
    assert u.cache_hit_rate == pytest.approx(0.6)
    assert (u + u).cache_read_input_tokens == 120
    partial = Usage.from_api({"input_tokens": 3, "cache_creation_input_tokens": None})
    assert partial.prompt_tokens == 3


def test_a_zero_cache_price_override_is_honoured() -> None:
    """0 is a price (a free cache read), not a missing value: `or` would turn it into 0.1x."""
    t = price_table({"my-model": PriceOverride(input=2.0, output=10.0, cache_read=0.0,
                                               cache_write_5m=0.0)})
    u = Usage(input_tokens=0, cache_read_input_tokens=1_000_000,
              cache_creation_input_tokens=1_000_000, cache_creation_5m=1_000_000)
    assert t.cost("my-model", u) == 0.0
    # absent cache prices still default to 1.25x / 2x / 0.1x of input
    d = price_table({"other": PriceOverride(input=2.0, output=10.0)})
    assert d.cost("other", Usage(cache_read_input_tokens=1_000_000)) == pytest.approx(0.2)


@pytest.mark.parametrize(("body", "field"), [
    ('date = "x"\n[models.m]\ninput = -1.0\noutput = 1.0\n', "models.m.input"),
    ('date = "x"\n[models.m]\ninput = 1.0\n', "models.m.output"),
    ('date = "x"\n[models.m]\ninput = 1.0\noutput = 1.0\ncache_reed = 0.1\n',
     "models.m.cache_reed"),
    ('date = "x"\n[models.m]\ninput = 1.0\noutput = 1.0\nlong_context_threshold = 5\n',
     "long_context and long_context_threshold"),
])
def test_a_price_table_is_validated_like_the_overrides(body: str, field: str) -> None:
    from gate.core.cost import parse_price_table

    with pytest.raises(BadInput, match=re.escape(field)):
        parse_price_table(body, "prices.toml")


def test_the_bundled_price_table_is_valid() -> None:
    from importlib import resources

    from gate.core.cost import parse_price_table

    text = resources.files("gate").joinpath("data/prices.toml").read_text("utf-8")
    assert parse_price_table(text, "prices.toml").models == price_table().models
