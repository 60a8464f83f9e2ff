"""``gate sim serve`` as a real process, the bundled suite through the simulator, and
(opt-in) Claude Code completing a task against it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

import anthropic
import pytest

from gate.core.tasks import Task, load_suite
from gate.sim import Simulator, decide_outcome, read_ledger
from tests.helpers.suites import prepare_workspace, run_episode, tiny_suite

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
BUNDLED = REPO / "tasks"


@contextmanager
def serve(*args: str, env: dict[str, str] | None = None) -> Iterator[str]:
    """Run ``gate sim serve`` and yield its base URL (read from its first line)."""
    proc = subprocess.Popen([sys.executable, "-m", "gate", "sim", "serve", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, **(env or {})})
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert "listening on http://127.0.0.1:" in line, line + (proc.stderr.read()
                                                                  if proc.stderr else "")
        yield line.split()[-1]
    finally:
        proc.terminate()
        proc.wait(10)


def test_serve_takes_options_from_flags_and_env(tmp_path: Path) -> None:
    ledger = tmp_path / "ledger.jsonl"
    env = {"GATE_SIM_FAULT_429": "1", "GATE_SIM_RETRY_AFTER": "3",
           "GATE_SIM_LEDGER": str(ledger)}
    with serve("--seed", "4", env=env) as url:
        client = anthropic.Anthropic(base_url=url, api_key="k", max_retries=0)
        with pytest.raises(anthropic.RateLimitError) as err:
            client.messages.create(model="claude-haiku-4-5", max_tokens=10,
                                   messages=[{"role": "user", "content": "hi"}])
        assert err.value.response.headers["retry-after"] == "3"
    assert [e["status"] for e in read_ledger(ledger)] == [429]


def test_serve_answers_as_an_account_out_of_credit() -> None:
    """``--fault-credit``: the provider's own credit message, a 400 the SDK does not retry."""
    with serve("--fault-credit", "1") as url:
        client = anthropic.Anthropic(base_url=url, api_key="k", max_retries=2)
        with pytest.raises(anthropic.BadRequestError) as err:
            client.messages.create(model="claude-haiku-4-5", max_tokens=10,
                                   messages=[{"role": "user", "content": "hi"}])
    assert err.value.body["error"]["message"].startswith(  # type: ignore[index]
        "Your credit balance is too low to access the Anthropic API.")


def test_serve_rejects_bad_options_with_one_line() -> None:
    res = subprocess.run([sys.executable, "-m", "gate", "sim", "serve", "--fault-429", "2"],
                         capture_output=True, text=True, timeout=30)
    assert res.returncode == 2
    assert "Traceback" not in res.stderr and "fault-429" in res.stderr
    res = subprocess.run([sys.executable, "-m", "gate", "sim", "serve", "--fault-429", "0.6",
                          "--fault-500", "0.6"], capture_output=True, text=True, timeout=30)
    assert res.returncode == 2
    assert res.stderr.strip().splitlines() == ["gate: error: fault rates add up to more than 1"]


def _solving_seed(tasks: list[Task], model: str) -> int:
    for seed in range(5000):
        if all(decide_outcome(seed, model, t.id, t.difficulty, 0) == "solve" for t in tasks):
            return seed
    raise AssertionError("no seed solves every task")


@pytest.mark.skipif(not BUNDLED.is_dir(), reason="no bundled tasks/ directory in this checkout")
def test_bundled_suite_is_solved_by_replaying_each_oracle(tmp_path: Path) -> None:
    tasks = [t for t in load_suite(BUNDLED).tasks if t.solution_script]
    if not tasks:
        pytest.skip("the bundled suite has no task with solution/solve.sh")
    model = "claude-opus-5-5"
    seed = _solving_seed(tasks, model)
    with Simulator(tasks_dir=BUNDLED, seed=seed) as sim:
        client = anthropic.Anthropic(base_url=sim.base_url, api_key="k", max_retries=0)
        with ThreadPoolExecutor(8) as pool:  # episodes are independent, like `gate run -j 8`
            passed = list(pool.map(
                lambda t: run_episode(client, t, tmp_path / t.id, model=model).passed, tasks))
    assert [t.id for t, ok in zip(tasks, passed, strict=True) if not ok] == []


@pytest.mark.claude_code
def test_claude_code_completes_an_easy_task_against_gate_sim_serve(tmp_path: Path,
                                                                   claude_bin: str) -> None:
    if BUNDLED.is_dir() and (BUNDLED / "fix-low-stock-report").is_dir():
        suite_dir, task_id = BUNDLED, "fix-low-stock-report"
    else:
        suite_dir, task_id = tiny_suite(tmp_path / "suite"), "turn-mode-on"
    task = load_suite(suite_dir, [task_id]).tasks[0]
    model = "claude-sonnet-5-5"
    seed = _solving_seed([task], model)
    ws = prepare_workspace(task, tmp_path)
    home = tmp_path / "home"
    home.mkdir()
    (tmp_path / "tmp").mkdir()  # Claude Code's temp root (claude-<uid>/...), not the machine's
    ledger = tmp_path / "ledger.jsonl"
    with serve("--tasks", str(suite_dir), "--seed", str(seed), "--ledger", str(ledger)) as url:
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home),
               "TMPDIR": str(tmp_path / "tmp"), "ANTHROPIC_BASE_URL": url,
               "ANTHROPIC_API_KEY": "sim-key",
               "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "IS_SANDBOX": "1"}
        res = subprocess.run(
            [claude_bin, "-p", task.prompt, "--output-format", "json",
             "--dangerously-skip-permissions", "--model", model],
            cwd=ws, env=env, capture_output=True, text=True, timeout=240)
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    # what it keeps per workspace went to its own temp root, not the machine's /tmp
    slug = str(ws).replace("/", "-")
    machine = Path("/tmp") / f"claude-{os.getuid()}"
    assert not (machine / slug).exists() and list((tmp_path / "tmp").iterdir())
    result = json.loads(res.stdout)
    assert result["is_error"] is False
    served = [e for e in read_ledger(ledger) if e.get("task") == task_id]
    assert len(served) == 4 and {e["episode"] for e in served} == {0}
    assert result["usage"]["cache_read_input_tokens"] > 0  # its breakpoints hit the cache
    verdict = subprocess.run(["bash", str(task.verify_script)], cwd=ws, capture_output=True,
                             text=True, timeout=60,
                             env={**os.environ, "WORK_DIR": str(ws), "TASK_DIR": str(task.path)})
    assert verdict.returncode == 0, verdict.stdout + verdict.stderr
