"""Prompt caching through the real SDK: writes, reads, misses, limits, TTLs, keys, lookback."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import anthropic
import pytest

from gate.sim import (
    Latency,
    Simulator,
    block_tokens,
    min_cacheable_tokens,
    sim_label,
    text_tokens,
    tool_tokens,
)
from tests.helpers.suites import long_text

MODEL = "claude-sonnet-5-5"  # not in the table: family sonnet, minimum 1,024 tokens
EPH = {"type": "ephemeral"}
EPH_1H = {"type": "ephemeral", "ttl": "1h"}


class FakeClock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def sim(clock: FakeClock) -> Iterator[Simulator]:
    with Simulator(clock=clock) as s:
        yield s


@pytest.fixture
def client(sim: Simulator) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=sim.base_url, api_key="test-key", max_retries=0)


def tool(description: str = "Run a shell command.", cc: dict[str, Any] | None = None
         ) -> dict[str, Any]:
    t: dict[str, Any] = {"name": "bash", "description": description,
                         "input_schema": {"type": "object",
                                          "properties": {"command": {"type": "string"}}}}
    if cc:
        t["cache_control"] = cc
    return t


def system(text: str, cc: dict[str, Any] | None = EPH) -> list[dict[str, Any]]:
    block: dict[str, Any] = {"type": "text", "text": text}
    if cc:
        block["cache_control"] = cc
    return [block]


def usage(client: anthropic.Anthropic, **kw: Any) -> anthropic.types.Usage:
    kw.setdefault("model", MODEL)
    kw.setdefault("max_tokens", 64)
    kw.setdefault("messages", [{"role": "user", "content": "What is in the context?"}])
    return client.messages.create(**kw).usage


def test_first_request_writes_identical_second_reads(client: anthropic.Anthropic) -> None:
    sys_text = long_text(2000)
    question = "What is in the context?"
    first = usage(client, system=system(sys_text))
    second = usage(client, system=system(sys_text))
    cached = block_tokens({"type": "text", "text": sys_text})
    tail = block_tokens({"type": "text", "text": question})
    assert (first.cache_creation_input_tokens, first.cache_read_input_tokens) == (cached, 0)
    assert first.cache_creation is not None
    assert first.cache_creation.ephemeral_5m_input_tokens == cached
    assert first.cache_creation.ephemeral_1h_input_tokens == 0
    assert (second.cache_creation_input_tokens, second.cache_read_input_tokens) == (0, cached)
    assert first.input_tokens == second.input_tokens == tail  # only the uncached tail


def test_changed_system_misses_but_tools_with_own_breakpoint_hit(
        client: anthropic.Anthropic) -> None:
    tools = [tool(long_text(1100, "tooldoc"), cc=EPH)]
    msgs = [{"role": "user", "content": [{"type": "text", "text": "go", "cache_control": EPH}]}]
    usage(client, tools=tools, system=system(long_text(1200), cc=None), messages=msgs)
    changed = usage(client, tools=tools, system=system(long_text(1200, "other"), cc=None),
                    messages=msgs)
    assert changed.cache_read_input_tokens == tool_tokens(tools[0])
    assert changed.cache_creation_input_tokens > 0  # system + messages written again
    assert changed.input_tokens == 0  # the last breakpoint is the last block


def test_changed_tool_definition_misses_everything(client: anthropic.Anthropic) -> None:
    sys_blocks = system(long_text(2000))
    usage(client, tools=[tool(cc=EPH)], system=sys_blocks)
    again = usage(client, tools=[tool("Run a command in a shell.", cc=EPH)], system=sys_blocks)
    assert again.cache_read_input_tokens == 0
    assert again.cache_creation_input_tokens > 0


def test_model_change_misses(client: anthropic.Anthropic) -> None:
    sys_blocks = system(long_text(5000))
    usage(client, system=sys_blocks)
    assert usage(client, system=sys_blocks, model="claude-opus-4-8").cache_read_input_tokens == 0
    assert usage(client, system=sys_blocks).cache_read_input_tokens > 0


def test_tool_choice_change_misses_messages_only(client: anthropic.Anthropic) -> None:
    sys_blocks = system(long_text(2000))
    msgs = [{"role": "user", "content": [{"type": "text", "text": long_text(300, "q"),
                                          "cache_control": EPH}]}]
    usage(client, tools=[tool()], system=sys_blocks, messages=msgs)
    other = usage(client, tools=[tool()], system=sys_blocks, messages=msgs,
                  tool_choice={"type": "any"})
    assert other.cache_read_input_tokens == tool_tokens(tool()) + block_tokens(sys_blocks[0])
    assert other.cache_creation_input_tokens == block_tokens(msgs[0]["content"][0])


def test_five_breakpoints_is_a_400(client: anthropic.Anthropic) -> None:
    blocks = [{"type": "text", "text": f"part {i}", "cache_control": EPH} for i in range(5)]
    with pytest.raises(anthropic.BadRequestError) as err:
        usage(client, system=blocks)
    assert err.value.status_code == 400
    assert "maximum of 4" in str(err.value)
    # four are fine
    assert usage(client, system=blocks[:4]).input_tokens > 0


def test_top_level_cache_control_counts_as_a_breakpoint(client: anthropic.Anthropic) -> None:
    blocks = [{"type": "text", "text": f"part {i}", "cache_control": EPH} for i in range(4)]
    with pytest.raises(anthropic.BadRequestError):
        usage(client, system=blocks, extra_body={"cache_control": EPH})


def test_1h_after_5m_is_a_400(client: anthropic.Anthropic) -> None:
    blocks = system("a" * 100, cc=EPH) + system("b" * 100, cc=EPH_1H)
    with pytest.raises(anthropic.BadRequestError, match="1h"):
        usage(client, system=blocks)


def test_below_minimum_is_not_cached_and_minimum_is_per_model(
        client: anthropic.Anthropic) -> None:
    sys_blocks = system(long_text(800))  # < 1,024 (sonnet) but >= 512 (opus 5)
    for _ in range(2):
        small = usage(client, system=sys_blocks)
        assert small.cache_creation_input_tokens == small.cache_read_input_tokens == 0
        assert small.input_tokens == block_tokens(sys_blocks[0]) + block_tokens(
            {"type": "text", "text": "What is in the context?"})
    opus = usage(client, system=sys_blocks, model="claude-opus-5")
    assert opus.cache_creation_input_tokens == block_tokens(sys_blocks[0])


def test_5m_entry_expires_and_a_hit_refreshes_it(client: anthropic.Anthropic,
                                                   clock: FakeClock) -> None:
    sys_blocks = system(long_text(2000))
    assert usage(client, system=sys_blocks).cache_creation_input_tokens > 0
    clock.now += 299
    assert usage(client, system=sys_blocks).cache_read_input_tokens > 0  # refreshes the TTL
    clock.now += 299  # 598 s after the write, 299 s after the hit
    assert usage(client, system=sys_blocks).cache_read_input_tokens > 0
    clock.now += 301
    expired = usage(client, system=sys_blocks)
    assert expired.cache_read_input_tokens == 0
    assert expired.cache_creation_input_tokens > 0


def test_1h_entries_are_reported_as_1h_writes_and_outlive_5m(
        client: anthropic.Anthropic, clock: FakeClock) -> None:
    one_hour = system(long_text(1500, "stable"), cc=EPH_1H)
    five_min = system(long_text(1500, "recent"), cc=EPH)
    first = usage(client, system=one_hour + five_min)
    assert first.cache_creation is not None
    assert first.cache_creation.ephemeral_1h_input_tokens == block_tokens(one_hour[0])
    assert first.cache_creation.ephemeral_5m_input_tokens == block_tokens(five_min[0])
    clock.now += 1800
    later = usage(client, system=one_hour + five_min)
    assert later.cache_read_input_tokens == block_tokens(one_hour[0])
    assert later.cache_creation is not None
    assert later.cache_creation.ephemeral_5m_input_tokens == block_tokens(five_min[0])
    clock.now += 3601
    assert usage(client, system=one_hour + five_min).cache_read_input_tokens == 0


def test_cache_is_per_api_key(sim: Simulator, client: anthropic.Anthropic) -> None:
    sys_blocks = system(long_text(2000))
    usage(client, system=sys_blocks)
    other = anthropic.Anthropic(base_url=sim.base_url, api_key="another-key", max_retries=0)
    assert usage(other, system=sys_blocks).cache_read_input_tokens == 0
    assert usage(client, system=sys_blocks).cache_read_input_tokens > 0


def _conversation(n_blocks: int) -> list[dict[str, Any]]:
    content: list[dict[str, Any]] = [{"type": "text", "text": f"note {i}: " + "x" * 40}
                                     for i in range(n_blocks)]
    return [{"role": "user", "content": content}]


def test_lookback_finds_an_earlier_entry_within_20_blocks_only(
        client: anthropic.Anthropic) -> None:
    sys_blocks = system(long_text(2000))
    first = _conversation(1)
    first[0]["content"][0]["cache_control"] = EPH
    usage(client, system=system(long_text(2000), cc=None), messages=first)
    far = _conversation(30)  # 29 blocks past the entry: beyond the lookback
    far[0]["content"][-1]["cache_control"] = EPH
    miss = usage(client, system=system(long_text(2000), cc=None), messages=far)
    assert miss.cache_read_input_tokens == 0
    near = _conversation(15)  # 14 blocks past it: found
    near[0]["content"][-1]["cache_control"] = EPH
    hit = usage(client, system=system(long_text(2000), cc=None), messages=near)
    assert hit.cache_read_input_tokens == block_tokens(sys_blocks[0]) + block_tokens(
        first[0]["content"][0])


def test_automatic_cache_control_caches_the_whole_prompt(client: anthropic.Anthropic) -> None:
    msgs = [{"role": "user", "content": long_text(1500)}]
    first = usage(client, messages=msgs, extra_body={"cache_control": EPH})
    second = usage(client, messages=msgs, extra_body={"cache_control": EPH})
    assert first.cache_creation_input_tokens == second.cache_read_input_tokens > 1024
    assert second.input_tokens == 0


def test_concurrent_request_sees_entry_only_once_the_first_response_began() -> None:
    with Simulator(latency=Latency(fixed_ms=300)) as s:
        c = anthropic.Anthropic(base_url=s.base_url, api_key="k", max_retries=0)
        sys_blocks = system(long_text(2000))
        results: list[anthropic.types.Usage] = []
        threads = [threading.Thread(target=lambda: results.append(usage(c, system=sys_blocks)))
                   for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert [u.cache_read_input_tokens for u in results] == [0, 0]
        assert all(u.cache_creation_input_tokens > 0 for u in results)
        assert usage(c, system=sys_blocks).cache_read_input_tokens > 0


def test_streamed_and_non_streamed_usage_agree(client: anthropic.Anthropic) -> None:
    kw: dict[str, Any] = {"model": MODEL, "max_tokens": 200, "system": system(long_text(2000)),
                          "messages": [{"role": "user", "content": "hello"}]}
    client.messages.create(**kw)  # warm the cache so both read
    plain = client.messages.create(**kw)
    with client.messages.stream(**kw) as stream:
        streamed = stream.get_final_message()
    assert streamed.usage.model_dump() == plain.usage.model_dump()
    assert [b.model_dump(exclude={"parsed_output"}) for b in streamed.content] == [
        b.model_dump() for b in plain.content]


def test_a_timestamp_in_the_system_prompt_destroys_every_hit(
        client: anthropic.Anthropic) -> None:
    tools = [tool(long_text(1100, "tooldoc"))]
    reads = []
    for minute in range(3):
        sys_blocks = system(f"Now: 2026-11-30T07:0{minute}Z\n" + long_text(2000))
        reads.append(usage(client, tools=tools, system=sys_blocks).cache_read_input_tokens)
    assert reads == [0, 0, 0]


def test_minimum_cacheable_length_by_model_id() -> None:
    assert min_cacheable_tokens("claude-opus-5-5") == 512
    assert min_cacheable_tokens("claude-sonnet-4-5-20250929") == 1024  # dated id → its family
    assert min_cacheable_tokens("claude-opus-4-7") == 2048
    assert min_cacheable_tokens("claude-haiku-4-5") == 4096
    assert min_cacheable_tokens("claude-haiku-5-5") == 4096  # new: newest known haiku
    assert min_cacheable_tokens("claude-sonnet-5-5-sim") == 1024
    assert min_cacheable_tokens("some-other-model") == 1024
    assert sim_label("claude-sonnet-5-5") == "claude-sonnet-5-5-sim"
    assert sim_label("claude-sonnet-5-5-sim") == "claude-sonnet-5-5-sim"


def test_token_estimate_is_documented_rule() -> None:
    assert text_tokens("") == 0
    assert text_tokens("abcd") == 1
    assert text_tokens("abcde") == 2
    assert text_tokens("é" * 4) == 2  # utf-8 bytes, not characters
    a = {"type": "tool_use", "id": "x", "name": "bash", "input": {"b": 1, "a": 2}}
    b = {"type": "tool_use", "id": "x", "name": "bash", "input": {"a": 2, "b": 1},
         "cache_control": EPH}
    assert block_tokens(a) == block_tokens(b)  # canonical JSON, cache_control ignored
