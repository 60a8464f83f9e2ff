"""Issue 39, item 3: the builtin agent's shared prefix (tools + system prompt) counted by the
upstream's own count_tokens, through the meter, on the simulator; never guessed."""

from __future__ import annotations

from typing import Any

from gate.agents import agent_kind
from gate.core.config import GateConfig
from gate.core.cost import price_table
from gate.core.tasks import Task
from gate.execution.session import SIM_CREDENTIAL, prefix_record
from gate.meter import MeterProxy
from gate.sim import Simulator, text_tokens, tool_tokens


def _task(tmp_path: Any) -> Task:
    from gate.core.tasks import load_suite

    folder = tmp_path / "tasks" / "t"
    folder.mkdir(parents=True)
    (folder / "task.md").write_text("Write hi into hello.txt.\n")
    (folder / "verify.sh").write_text("grep -qx hi hello.txt\n")
    return load_suite(tmp_path / "tasks").tasks[0]


def test_the_builtin_agents_prefix_is_counted_by_the_upstream_through_the_meter(
        tmp_path: Any) -> None:
    """The simulator counts ceil(bytes / 4) + 3 a block: the prefix's count is exactly its
    tools' and its system block's, the probe message subtracted."""
    task = _task(tmp_path)
    cfg = GateConfig(root=tmp_path)
    kind = agent_kind("builtin")
    prefix = kind.cache_prefix(kind.build(cfg, "claude-sonnet-5-5", "claude-sonnet-5-5"), task)
    assert prefix is not None and set(prefix) == {"model", "system", "tools"}
    expected = sum(tool_tokens(t) for t in prefix["tools"]) + sum(
        3 + text_tokens(b["text"]) for b in prefix["system"])
    with Simulator(tasks_dir=tmp_path / "tasks") as sim, \
            MeterProxy(sim.base_url, SIM_CREDENTIAL, price_table()) as meter:
        record = prefix_record(meter, prefix)
    assert record == {"model": "claude-sonnet-5-5", "tokens": expected, "minimum": 1024,
                      "cached": expected >= 1024}


def test_an_upstream_that_gives_no_count_is_never_guessed(tmp_path: Any) -> None:
    task = _task(tmp_path)
    kind = agent_kind("builtin")
    prefix = kind.cache_prefix(kind.build(GateConfig(root=tmp_path), "claude-sonnet-5-5", "m"),
                               task)
    assert prefix is not None
    with Simulator(tasks_dir=tmp_path / "tasks") as sim, \
            MeterProxy(sim.base_url, "a key the simulator does not know", price_table(),
                       credential_header="authorization") as meter:
        assert prefix_record(meter, {**prefix, "model": ""}) is None  # a 400: no count


def test_an_agent_whose_requests_the_gate_does_not_know_has_no_prefix(tmp_path: Any) -> None:
    task = _task(tmp_path)
    cfg = GateConfig.model_validate({"agent": {"kind": "command", "command": "true"}})
    command = agent_kind("command")
    assert command.cache_prefix(command.build(cfg, "claude-sonnet-5-5", "m"), task) is None
    off = GateConfig.model_validate({"agent": {"cache": "off"}})
    builtin = agent_kind("builtin")
    assert builtin.cache_prefix(builtin.build(off, "claude-sonnet-5-5", "m"), task) is None


def test_an_upstream_that_never_answers_the_count_holds_the_run_back_briefly(
        tmp_path: Any, monkeypatch: Any) -> None:
    """The count waits its own short while (``COUNT_TIMEOUT_S``), not a model's 600 s."""
    import socket
    import time

    monkeypatch.setattr("gate.meter._proxy.COUNT_TIMEOUT_S", 0.5)
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(8)  # accepts connections (the kernel's backlog), answers nothing
    try:
        with MeterProxy(f"http://127.0.0.1:{silent.getsockname()[1]}", SIM_CREDENTIAL,
                        price_table()) as meter:
            started = time.monotonic()
            assert prefix_record(meter, {"model": "claude-sonnet-5-5", "system": "s"}) is None
            assert time.monotonic() - started < 5
    finally:
        silent.close()
