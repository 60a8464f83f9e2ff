"""Metering ``warm-prefix-v1``: each run is measured as if its shared prefix had been warm.

The meter in front of the simulator (its prompt cache is real), driven by the real SDK: a cold
run's first request and a warm sibling's measure the same; what was billed is kept as billed;
the write premium is overhead; a prefix that changes inside a conversation is still paid for.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anthropic
import pytest
from sim_helpers import long_text

from gate.cost import price_table
from gate.meter import MeteredRequest, MeterProxy, RunMeter, prefix_family, warm
from gate.sim import Simulator
from gate.usage import Usage

MODEL = "claude-sonnet-5-5"
EPH = {"type": "ephemeral"}
TOOLS = [{"name": "bash", "description": "Run a shell command.",
          "input_schema": {"type": "object", "properties": {"command": {"type": "string"}}},
          "cache_control": EPH}]


@pytest.fixture
def proxy() -> Iterator[MeterProxy]:
    with Simulator() as sim, MeterProxy(sim.base_url, "sim-key", price_table()) as p:
        yield p


def _system(text: str) -> list[dict[str, Any]]:
    return [{"type": "text", "text": text, "cache_control": EPH}]


def _opening(prompt: str = "Fix the bug.") -> list[dict[str, Any]]:
    return [{"role": "user", "content": [{"type": "text", "text": prompt,
                                          "cache_control": EPH}]}]


def _later(prompt: str = "Fix the bug.") -> list[dict[str, Any]]:
    return [{"role": "user", "content": prompt},
            {"role": "assistant", "content": "Looking at the files."},
            {"role": "user", "content": [{"type": "text", "text": "Go on.",
                                          "cache_control": EPH}]}]


def _ask(run: RunMeter, system: str, messages: list[dict[str, Any]]) -> Usage:
    client = anthropic.Anthropic(base_url=run.base_url, api_key=run.token, max_retries=0)
    with client.messages.stream(model=MODEL, max_tokens=64, tools=TOOLS,  # type: ignore[arg-type]
                                system=_system(system), messages=messages) as s:  # type: ignore[arg-type]
        return Usage.from_api(s.get_final_message().usage.model_dump())


def _fields(u: Usage) -> tuple[int, int, int, int]:
    return (u.input_tokens, u.output_tokens, u.cache_creation_input_tokens,
            u.cache_read_input_tokens)


def test_cold_first_request_measures_as_a_warm_one(proxy: MeterProxy) -> None:
    system = long_text(2000)
    cold = proxy.open_run("t-r0")
    billed_first = _ask(cold, system, _opening())
    assert billed_first.cache_creation_input_tokens > 0  # nobody warmed the prefix
    sibling = proxy.open_run("t-r1")
    warm_first = _ask(sibling, system, _opening())
    assert warm_first.cache_creation_input_tokens == 0  # the cold run warmed it

    t = cold.measured()
    assert _fields(t.billed_usage) == _fields(billed_first)  # what was billed stays billed
    assert _fields(t.usage) == _fields(warm_first)  # measured as the warm sibling was billed
    assert t.usage.cache_creation_5m == 0 and t.usage.prompt_tokens == billed_first.prompt_tokens
    prices = price_table()
    assert t.billed_cost_usd == pytest.approx(prices.cost(MODEL, billed_first))
    assert t.cost_usd == pytest.approx(prices.cost(MODEL, warm_first))
    assert t.overhead_usd > 0
    assert t.cost_usd + t.overhead_usd == pytest.approx(t.billed_cost_usd)
    s = sibling.measured()
    assert _fields(s.usage) == _fields(s.billed_usage) and s.overhead_usd == 0
    assert cold.totals() == (1, t.billed_usage, t.billed_cost_usd)  # totals() stay as billed


def test_only_the_first_opening_of_a_family_is_warmed(proxy: MeterProxy) -> None:
    run = proxy.open_run("t-r0")
    _ask(run, long_text(2000), _opening())
    # the conversation goes on: writing its new turn is the agent's own cost
    later = _ask(run, long_text(2000), _later())
    assert later.cache_creation_input_tokens > 0
    # a second opening of the same family in the run (e.g. a retry after the first finished)
    again = _ask(run, long_text(2000), _opening("Another question."))
    assert again.cache_creation_input_tokens > 0  # the new first message is written
    measured = [r.measured_usage for r in run.requests]
    assert measured[0] is not None and measured[1] is None and measured[2] is None


def test_a_side_request_with_its_own_system_prompt_is_its_own_family(
        proxy: MeterProxy) -> None:
    """Claude Code sends side requests (titles, summaries) with other system prompts: each
    family's first opening is measured warm, not only the run's first request."""
    run = proxy.open_run("t-r0")
    _ask(run, long_text(2000), _opening())
    side = _ask(run, long_text(1500, "summarise"), _opening("Title for this session?"))
    assert side.cache_creation_input_tokens > 0
    assert all(r.measured_usage is not None for r in run.requests)
    assert run.measured().usage.cache_creation_input_tokens == 0


def test_a_prefix_that_changes_inside_the_conversation_is_still_paid_for(
        proxy: MeterProxy) -> None:
    """``{{ now }}`` in the system prompt: every request is a new family, but only the opening
    one is measured warm; each later request writes its whole system and history again."""
    run = proxy.open_run("t-r0")
    _ask(run, "Current time: 10:00:00\n" + long_text(2000), _opening())
    later = _ask(run, "Current time: 10:00:07\n" + long_text(2000), _later())
    assert later.cache_creation_input_tokens > 2000
    t = run.measured()
    assert t.usage.cache_creation_input_tokens == later.cache_creation_input_tokens
    assert run.requests[1].measured_usage is None


def test_concurrent_openings_of_one_family_are_all_measured_warm() -> None:
    """Two openings of a family in flight at once: neither could have found the other's
    write, so both are measured warm; one started after the first completed is not."""
    prices = price_table()
    run = RunMeter(run_id="t-r0", token="x", base_url="http://127.0.0.1:1/r/t-r0")
    body = {"model": MODEL, "system": "s", "tools": [], "messages": [
        {"role": "user", "content": "hi"}]}
    first, second = run.prefix(body), run.prefix(body)  # both started before either ended
    billed = Usage(input_tokens=3, output_tokens=5, cache_creation_input_tokens=1000,
                   cache_creation_5m=1000)
    for p in (first, second):
        run.add(MeteredRequest(MODEL, 200, True, billed, prices.cost(MODEL, billed),
                               billed=True, prefix=p), prices.cost)
    third = run.prefix(body)
    run.add(MeteredRequest(MODEL, 200, True, billed, prices.cost(MODEL, billed),
                           billed=True, prefix=third), prices.cost)
    assert [r.measured_usage is not None for r in run.requests] == [True, True, False]
    assert run.requests[0].measured_usage == warm(billed)
    assert warm(billed).cache_read_input_tokens == 1000


def test_unbilled_requests_do_not_use_up_the_warm_start() -> None:
    """A 429 before anything was billed: the retry is still the family's first request."""
    prices = price_table()
    run = RunMeter(run_id="t-r0", token="x", base_url="http://127.0.0.1:1/r/t-r0")
    body = {"model": MODEL, "messages": [{"role": "user", "content": "hi"}]}
    run.add(MeteredRequest(MODEL, 429, True, Usage(), 0.0, error="429",
                           prefix=run.prefix(body)))
    billed = Usage(cache_creation_input_tokens=10, cache_creation_5m=10)
    run.add(MeteredRequest(MODEL, 200, True, billed, prices.cost(MODEL, billed), billed=True,
                           prefix=run.prefix(body)), prices.cost)
    assert run.requests[1].measured_usage is not None


def test_prefix_family_is_model_tools_and_system_as_sent() -> None:
    base = {"model": MODEL, "system": "s", "tools": [{"name": "a"}],
            "messages": [{"role": "user", "content": "one"}]}
    fam, opening = prefix_family(base)
    assert opening and fam is not None and fam.startswith(f"{MODEL}:")
    assert prefix_family({**base, "messages": [{"role": "user", "content": "two"}]})[0] == fam
    assert prefix_family({**base, "system": "t"})[0] != fam
    assert prefix_family({**base, "tools": []})[0] != fam
    assert prefix_family({**base, "model": "claude-haiku-5-5"})[0] != fam
    assert prefix_family({**base, "messages": [*base["messages"],  # type: ignore[list-item]
                                               {"role": "assistant", "content": "x"}]})[1] is False
    assert prefix_family(None) == (None, False)
    assert prefix_family({"model": MODEL}) == (None, False)
