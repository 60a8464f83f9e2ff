"""The simulator solves a Harbor task as its oracle does, without /solution in the agent phase.

Harbor's oracle runs ``bash /solution/solve.sh`` in one process; ``/solution`` exists only for
the oracle. The simulated model acts once with the whole script, carried in its own command
(the gate reads it from the suite directory), so a ``cd``, a variable or a sibling file in
``solution/`` works as under the oracle. The run needs a Docker engine and the offline base
image (skipped with the reason without one; failed under ``GATE_REQUIRE_DOCKER=1``).
"""

from __future__ import annotations

import json
import subprocess
import urllib.request
from pathlib import Path

import pytest

from gate.core.config import load_config
from gate.core.tasks import load_suite, load_task
from gate.execution.run import RunRequest, run_suite
from gate.sim import Simulator, decide_outcome, whole_solution
from tests.helpers.docker import IMAGE

REPO = Path(__file__).resolve().parents[2]
SOLVE = """#!/bin/bash
set -e
mkdir -p /tmp/build
cd /tmp/build

NAME="$(cat "$TASK_DIR/name.txt")"

echo "$NAME" > out.txt
cp out.txt /app/result.txt
echo "greeting for $GREETING_TARGET" >> /app/result.txt
"""
TEST = """#!/bin/bash
want=$'harbor\\ngreeting for world'
if [ "$(cat /app/result.txt 2>/dev/null)" = "$want" ]; then r=1; else r=0; fi
echo "$r" > /logs/verifier/reward.txt
"""
TOML = """version = "1.0"
[metadata]
difficulty = "easy"
[agent]
timeout_sec = 120.0
[verifier]
timeout_sec = 60.0
[solution.env]
GREETING_TARGET = "world"
"""


def _task(root: Path) -> Path:
    d = root / "carry-state"
    files = {"instruction.md": "Put the project's name and the greeting into /app/result.txt.\n",
             "task.toml": TOML, "environment/Dockerfile": f"FROM {IMAGE}\nWORKDIR /app\n",
             "solution/solve.sh": SOLVE, "solution/name.txt": "harbor\n", "tests/test.sh": TEST}
    for rel, body in files.items():
        (d / rel).parent.mkdir(parents=True, exist_ok=True)
        (d / rel).write_text(body)
    return d


def test_the_whole_solve_script_travels_in_the_command_not_as_a_path(tmp_path: Path) -> None:
    task = load_task(_task(tmp_path))
    cmd = whole_solution(task)
    assert cmd is not None
    assert SOLVE in cmd  # the script's content, verbatim, in a heredoc
    assert "export GREETING_TARGET=world" in cmd  # [solution].env, as the oracle gets it
    # the sibling file travels packed; a gate-layout task keeps the step-by-step replay
    assert "base64 -d" in cmd
    plain = tmp_path / "plain"
    (plain / "solution").mkdir(parents=True)
    (plain / "task.md").write_text("x\n")
    (plain / "verify.sh").write_text("true\n")
    (plain / "solution" / "solve.sh").write_text("echo hi\n")
    assert whole_solution(load_task(plain)) is None


@pytest.mark.docker
@pytest.mark.usefixtures("engine")
def test_the_command_runs_the_script_as_the_oracle_would(tmp_path: Path) -> None:
    """The command alone, in a container with no /solution: state carries across the
    script's blank lines, ``$TASK_DIR`` holds the solution's other files."""
    cmd = whole_solution(load_task(_task(tmp_path)))
    assert cmd is not None
    p = subprocess.run(["docker", "run", "--rm", "-w", "/app", IMAGE, "bash", "-c",
                        f"mkdir -p /app && {{ {cmd}\n}} && cat /app/result.txt"],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert p.stdout.splitlines()[-2:] == ["harbor", "greeting for world"]


@pytest.mark.docker
@pytest.mark.slow
@pytest.mark.usefixtures("engine")
def test_sim_solves_a_harbor_task_whose_oracle_passes(tmp_path: Path) -> None:
    root = tmp_path / "suite"
    _task(root)
    cfg = load_config(REPO / "gate.toml")
    cfg = cfg.model_copy(update={"suite": cfg.suite.model_copy(
        update={"tasks": str(root), "sandbox": "docker"})})
    model = cfg.agent.model or ""
    seed = next(s for s in range(100)
                if decide_outcome(s, model, "carry-state", "easy", 0) == "solve")
    oracle = run_suite(RunRequest(config=cfg, output=tmp_path / "oracle.json", replications=1,
                                  jobs=1, agent_kind="oracle"))
    assert oracle.runs[0].status == "passed", oracle.runs[0].reason
    res = run_suite(RunRequest(config=cfg, output=tmp_path / "sim.json", replications=1,
                               jobs=1, sim=True, seed=seed))
    (run,) = res.runs
    assert run.status == "passed", run.reason


def test_each_step_of_a_multi_step_task_is_known_with_its_own_solution(tmp_path: Path) -> None:
    """Harbor's cookbook multi-step task (tests/fixtures/harbor_real): the simulator knows each
    step's instruction as that step, and acts with that step's solve.sh."""
    sample = REPO / "tests" / "fixtures" / "harbor_real"
    (task,) = load_suite(sample, ["cookbook-multi-step"]).tasks
    bash = [{"name": "bash", "input_schema": {"type": "object", "properties": {
        "command": {"type": "string"}}}}]
    with Simulator(tasks_dir=sample, ledger_path=tmp_path / "ledger.jsonl") as sim:
        for step in task.steps:
            commands: list[str] = []
            messages: list[dict[str, object]] = [{"role": "user", "content": step.prompt}]
            for _ in range(6):  # look, act, check, answer
                body = json.dumps({"model": "claude-opus-5-5", "max_tokens": 4096,
                                   "tools": bash, "messages": messages}).encode()
                req = urllib.request.Request(f"{sim.base_url}/v1/messages", data=body,
                                             headers={"content-type": "application/json",
                                                      "x-api-key": "k"})
                with urllib.request.urlopen(req, timeout=30) as resp:
                    reply = json.loads(resp.read())
                uses = [b for b in reply["content"] if b["type"] == "tool_use"]
                if not uses:
                    break
                commands.append(uses[0]["input"]["command"])
                messages += [{"role": "assistant", "content": reply["content"]},
                             {"role": "user", "content": [{"type": "tool_result",
                                                           "tool_use_id": uses[0]["id"],
                                                           "content": "ok"}]}]
            acted = [c for c in commands if "GATE_SIM_SOLVE" in c]
            assert len(acted) == 1 and f"echo \"{step.name} done\"" in acted[0], (
                step.name, commands)


@pytest.mark.docker
@pytest.mark.slow
@pytest.mark.usefixtures("engine")
def test_sim_replays_a_harbor_solution_larger_than_max_tokens_over_several_turns(
        tmp_path: Path) -> None:
    """A 100 KB ``solve.sh`` does not fit in one answer of 4,096 tokens: through ``gate run
    --sim`` the simulator writes it in parts, one tool call per turn, and runs it in the
    task's container (it was cut at ``max_tokens`` every time, while the oracle passed)."""
    import hashlib

    from tests.helpers.process import gate

    lines, h = [], b"seed"
    for _ in range(1600):
        h = hashlib.sha256(h).digest()
        lines.append(h.hex())
    body = "\n".join(lines) + "\n"
    digest = hashlib.sha256(body.encode()).hexdigest()
    root = tmp_path / "suite"
    d = _task(root)
    (d / "solution" / "solve.sh").write_text(
        SOLVE + f"cat > /app/big.txt <<'EOF_BIG'\n{body}EOF_BIG\n")
    (d / "tests" / "test.sh").write_text(TEST.replace(
        "; then r=1", f' && [ "$(sha256sum /app/big.txt | cut -d" " -f1)" = "{digest}" ]'
        "; then r=1"))
    seed = next(s for s in range(100)
                if decide_outcome(s, "claude-sonnet-5-5", "carry-state", "easy", 0) == "solve")
    p = gate("run", "--tasks", root, "--agent", "oracle", "-k", "1", "-o", tmp_path / "o.json")
    assert p.returncode == 0, p.stdout + p.stderr
    out = tmp_path / "sim.json"
    p = gate("run", "--sim", "--tasks", root, "-k", "1", "--seed", str(seed), "-o", out)
    (run,) = json.loads(out.read_text())["runs"]
    assert run["status"] == "passed", (run["reason"], p.stderr[-2000:])
    assert run["turns"] > 4 + 5
