"""The simulator: a local, Anthropic-compatible model server with faithful prompt caching.

It lets the whole gate run with no network and no key, and it is the test bed for caching,
metering, faults and statistics. The model it reports back is the requested id plus ``-sim``
(``claude-sonnet-5-5`` → ``claude-sonnet-5-5-sim``) and its logs say "simulator", so simulated
numbers are never mistaken for real ones.
"""

from gate.sim._cache import LOOKBACK, MAX_BREAKPOINTS, TTL_SECONDS
from gate.sim._families import (
    PASS_RATES,
    SIM_SUFFIX,
    family,
    min_cacheable_tokens,
    normalise,
    pass_rate,
    sim_label,
)
from gate.sim._faults import FAULT_KINDS, FaultConfig, Latency
from gate.sim._ledger import key_id, ledger_totals, read_ledger
from gate.sim._model import (
    EPISODE_STRIDE,
    RUN_HEADER,
    TURNS,
    decide_outcome,
    shell_tool,
    split_solution,
    whole_solution,
)
from gate.sim._simulator import Simulator
from gate.sim._tokens import BLOCK_OVERHEAD, block_tokens, text_tokens, tool_tokens

__all__ = [
    "BLOCK_OVERHEAD",
    "EPISODE_STRIDE",
    "FAULT_KINDS",
    "LOOKBACK",
    "MAX_BREAKPOINTS",
    "PASS_RATES",
    "RUN_HEADER",
    "SIM_SUFFIX",
    "TTL_SECONDS",
    "TURNS",
    "FaultConfig",
    "Latency",
    "Simulator",
    "block_tokens",
    "decide_outcome",
    "family",
    "key_id",
    "ledger_totals",
    "min_cacheable_tokens",
    "normalise",
    "pass_rate",
    "read_ledger",
    "shell_tool",
    "sim_label",
    "split_solution",
    "text_tokens",
    "tool_tokens",
    "whole_solution",
]
