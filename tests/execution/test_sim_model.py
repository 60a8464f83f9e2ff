"""The simulated model: task recognition, realistic turns, seeded failures, strength by model."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anthropic
import pytest

from gate.core.tasks import Suite, load_suite
from gate.sim import PASS_RATES, TURNS, Simulator, decide_outcome, shell_tool, split_solution
from tests.helpers.suites import BASH_TOOL, READ_TOOL, run_episode, tiny_suite

STRONG, WEAK = "claude-opus-5-5", "claude-haiku-5-5"


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory) -> Suite:
    return load_suite(tiny_suite(tmp_path_factory.mktemp("suite")))


def _client(sim: Simulator) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=sim.base_url, api_key="k", max_retries=0)


@pytest.fixture
def sim(suite: Suite) -> Iterator[Simulator]:
    with Simulator(tasks_dir=suite.root, seed=11) as s:
        yield s


def _seed_where(outcomes: list[str], model: str, task_id: str, difficulty: str) -> int:
    """A seed whose first episodes of ``task_id`` go as ``outcomes`` (found, not hard-coded)."""
    for seed in range(10_000):
        if [decide_outcome(seed, model, task_id, difficulty, e)
                for e in range(len(outcomes))] == outcomes:
            return seed
    raise AssertionError(f"no seed gives {outcomes}")


# -- the decision function ----------------------------------------------------------------
@pytest.mark.parametrize("difficulty", ["easy", "medium", "hard"])
def test_pass_rates_follow_the_documented_table(difficulty: str) -> None:
    n = 4000
    for fam, model in (("opus", STRONG), ("sonnet", "claude-sonnet-5-5"), ("haiku", WEAK)):
        solved = sum(decide_outcome(0, model, "t", difficulty, e) == "solve" for e in range(n))
        assert abs(solved / n - PASS_RATES[fam][difficulty]) < 0.03, (fam, difficulty)


def test_weaker_model_solves_a_subset_and_harder_tasks_fail_more() -> None:
    by: dict[tuple[str, str], set[tuple[int, int]]] = {}
    for model in (STRONG, "claude-sonnet-4-5-20250929", WEAK):
        for diff in ("easy", "medium", "hard"):
            by[model, diff] = {(seed, e) for seed in range(40) for e in range(25)
                               if decide_outcome(seed, model, "t", diff, e) == "solve"}
    for diff in ("easy", "medium", "hard"):
        assert by[WEAK, diff] < by["claude-sonnet-4-5-20250929", diff] < by[STRONG, diff]
    for model in (STRONG, WEAK):
        assert len(by[model, "easy"]) > len(by[model, "medium"]) > len(by[model, "hard"])


def test_every_failure_mode_happens_and_outcomes_are_seeded() -> None:
    kinds = [decide_outcome(5, WEAK, "t", "hard", e) for e in range(300)]
    assert set(kinds) == {"solve", "give_up", "partial", "loop"}
    assert kinds == [decide_outcome(5, WEAK, "t", "hard", e) for e in range(300)]
    assert kinds != [decide_outcome(6, WEAK, "t", "hard", e) for e in range(300)]


def test_split_solution_keeps_heredocs_whole_and_repeats_set_lines() -> None:
    script = ("#!/usr/bin/env bash\n# the fix\nset -euo pipefail\n\nmkdir -p out\n\n"
              "cat > out/a.md <<'EOF'\n# A\n\nbody\nEOF\n\n"
              "python3 - <<'PY'\nx = 1\n\nprint(x)\nPY\n\necho done\n")
    preamble, steps = split_solution(script)
    assert preamble == "set -euo pipefail"
    assert steps == ["mkdir -p out", "cat > out/a.md <<'EOF'\n# A\n\nbody\nEOF",
                     "python3 - <<'PY'\nx = 1\n\nprint(x)\nPY", "echo done"]


def test_shell_tool_detection() -> None:
    claude_code_bash = {"name": "Bash", "input_schema": {"type": "object", "properties": {
        "command": {"type": "string"}, "timeout": {"type": "number"}}}}
    assert shell_tool({"tools": [READ_TOOL, BASH_TOOL]}) == "bash"
    assert shell_tool({"tools": [claude_code_bash]}) == "Bash"
    assert shell_tool({"tools": [{"type": "bash_20250124", "name": "bash"}]}) == "bash"
    assert shell_tool({"tools": [READ_TOOL]}) is None
    no_command = {"name": "bash", "input_schema": {"type": "object",
                                                   "properties": {"cmd": {"type": "string"}}}}
    assert shell_tool({"tools": [no_command]}) is None
    assert shell_tool({"tools": [BASH_TOOL], "tool_choice": {"type": "none"}}) is None


# -- end to end through the SDK and a minimal tool loop -------------------------------------
@pytest.mark.slow
def test_outcomes_end_to_end_match_the_decision_and_repeat_with_the_seed(
        suite: Suite, tmp_path: Path) -> None:
    def play(seed: int) -> dict[tuple[str, str], list[bool]]:
        got: dict[tuple[str, str], list[bool]] = {}
        with Simulator(tasks_dir=suite.root, seed=seed) as s:
            client = _client(s)
            for model in (STRONG, WEAK):
                for task in suite.tasks:
                    got[model, task.id] = [run_episode(client, task, tmp_path, model=model).passed
                                           for _ in range(5)]
        return got

    first = play(2)
    for (model, task_id), passed in first.items():
        diff = suite.get(task_id).difficulty
        expected = [decide_outcome(2, model, task_id, diff, e) == "solve" for e in range(5)]
        assert passed == expected, (model, task_id)
    flat = {m: sum(sum(v) for (mm, _), v in first.items() if mm == m) for m in (STRONG, WEAK)}
    assert 0 < flat[WEAK] < flat[STRONG]
    assert not all(all(v) for v in first.values())  # failures happen
    assert play(2) == first  # same seed, model, config and suite → same outcomes


def test_a_solving_episode_looks_acts_checks_and_answers(sim: Simulator, suite: Suite,
                                                         tmp_path: Path) -> None:
    task = suite.get("count-lines")
    seed = _seed_where(["solve"], STRONG, task.id, "medium")
    with Simulator(tasks_dir=suite.root, seed=seed) as s:
        ep = run_episode(_client(s), task, tmp_path, model=STRONG)
    assert ep.passed
    assert ep.turns == TURNS["medium"]
    assert ep.commands[0] == "ls -la"
    assert any("wc -l < data.txt" in c for c in ep.commands)
    assert "37" in ep.final  # answer-style tasks are verified from the final message
    assert ep.stop_reason == "end_turn"


def test_max_turns_below_what_the_task_needs_fails_it(suite: Suite, tmp_path: Path) -> None:
    task = suite.get("build-report")  # hard: 9 turns when solved
    seed = _seed_where(["solve", "solve"], STRONG, task.id, "hard")
    with Simulator(tasks_dir=suite.root, seed=seed) as s:
        short = run_episode(_client(s), task, tmp_path, model=STRONG, max_turns=4)
        enough = run_episode(_client(s), task, tmp_path, model=STRONG, max_turns=9)
    assert not short.passed and short.turns == 4
    assert enough.passed and enough.turns == 9
    assert "report written to out/report.md" in enough.final
    assert "(no output)" not in enough.final  # the tool loop's placeholder is not an answer


@pytest.mark.parametrize(("outcome", "check"), [
    ("give_up", lambda ep: "sorry" in ep.final and ep.turns <= 3),
    ("partial", lambda ep: "fixed" in ep.final and ep.stop_reason == "end_turn"),
    ("loop", lambda ep: ep.turns == 12 and ep.stop_reason == "tool_use"),
])
def test_failure_modes_end_to_end(suite: Suite, tmp_path: Path, outcome: str,
                                  check: Any) -> None:
    task = suite.get("build-report")
    seed = _seed_where([outcome], WEAK, task.id, "hard")
    with Simulator(tasks_dir=suite.root, seed=seed) as s:
        ep = run_episode(_client(s), task, tmp_path, model=WEAK, max_turns=12)
    assert not ep.passed
    assert check(ep), ep


def test_no_shell_tool_means_no_action(sim: Simulator, suite: Suite, tmp_path: Path) -> None:
    task = suite.get("turn-mode-on")
    for tools in ([READ_TOOL], []):
        ep = run_episode(_client(sim), task, tmp_path, model=STRONG, tools=tools)
        assert (ep.turns, ep.commands, ep.passed) == (1, [], False)
        assert "no shell tool" in ep.final


def test_task_is_recognised_inside_a_wrapped_prompt_and_ids_carry_the_episode(
        sim: Simulator, suite: Suite) -> None:
    task = suite.get("turn-mode-on")
    wrapped = [{"type": "text", "text": "<system-reminder>\nToday is Monday.\n</system-reminder>"},
               {"type": "text", "text": "  " + task.prompt.replace(" ", "  ")}]
    client = _client(sim)
    a = client.messages.create(model=STRONG, max_tokens=1000, tools=[BASH_TOOL],
                               messages=[{"role": "user", "content": wrapped}])
    b = client.messages.create(model=STRONG, max_tokens=1000, tools=[BASH_TOOL],
                               messages=[{"role": "user", "content": task.prompt}])
    ids = [blk.id for m in (a, b) for blk in m.content if blk.type == "tool_use"]
    assert ids[0].startswith("toolu_sim_0_0_") and ids[1].startswith("toolu_sim_1_0_")


def test_two_plays_of_one_episode_are_different_conversations(suite: Suite) -> None:
    """The API's ``tool_use`` ids are unique to each answer, so two runs' conversations share
    no bytes after their first answer and neither reads the other's cached turns. Two plays of
    one episode (a same-job A/B's arms: one seed, one replication) take the same action under
    different ids; with one id the arm whose turn came first paid every write of the pair, and
    a README-only PR was blocked on cost (+19.5 %, p = 0.0011)."""
    task = suite.get("turn-mode-on")
    calls = []
    for _ in range(2):
        with Simulator(tasks_dir=suite.root, seed=11) as s:
            msg = _client(s).messages.create(model=STRONG, max_tokens=1000, tools=[BASH_TOOL],
                                             messages=[{"role": "user", "content": task.prompt}])
        calls += [blk for blk in msg.content if blk.type == "tool_use"]
    a, b = calls
    assert a.input == b.input and a.id[:14] == b.id[:14] == "toolu_sim_0_0_"
    assert a.id != b.id


def test_unknown_prompt_gets_a_plain_answer(sim: Simulator) -> None:
    msg = _client(sim).messages.create(model=STRONG, max_tokens=500, tools=[BASH_TOOL],
                                       messages=[{"role": "user", "content": "What is 2+2?"}])
    assert msg.stop_reason == "end_turn"
    assert [b.type for b in msg.content] == ["text"]


# -- an agent that ends on a command of its own (mini-swe-agent: gate/sim/_submit.py) -----
SUBMIT = "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"
#: mini-swe-agent 2.x's own words (its mini.yaml), in the first user message as it sends them
MINI_PROMPT = ("6. Submit your changes and finish your work by issuing the following command: "
               f"`echo {SUBMIT}`.\n   Do not combine it with any other command.")


def test_an_episode_ends_on_the_submit_command_the_prompt_names(suite: Suite,
                                                                tmp_path: Path) -> None:
    task = suite.get("count-lines")
    seed = _seed_where(["solve", "give_up"], STRONG, task.id, "medium")
    with Simulator(tasks_dir=suite.root, seed=seed) as s:
        ep = run_episode(_client(s), task, tmp_path, model=STRONG, system=MINI_PROMPT,
                         submit=SUBMIT)
        gave_up = run_episode(_client(s), task, tmp_path, model=STRONG, system=MINI_PROMPT,
                              submit=SUBMIT)
    # the same turns as a text-ending agent's: the final answer carries the command
    assert ep.submitted and ep.passed and ep.turns == TURNS["medium"]
    assert ep.commands[-1] == f"echo {SUBMIT}" and ep.stop_reason == "tool_use"
    assert "37" in ep.final  # the final answer is the text beside the command
    assert gave_up.submitted and not gave_up.passed and "sorry" in gave_up.final


def test_no_submit_command_without_the_prompt_asking_for_one(sim: Simulator, suite: Suite,
                                                             tmp_path: Path) -> None:
    task = suite.get("count-lines")
    # a backquoted echo that nothing says ends the work is not a submit command
    other = f"Logs are tagged with `echo {SUBMIT}` lines by the deploy script."
    for system in (None, other):
        ep = run_episode(_client(sim), task, tmp_path, model=STRONG, system=system,
                         submit=SUBMIT)
        assert not ep.submitted and ep.stop_reason == "end_turn"
        assert not any(SUBMIT in c for c in ep.commands)


@pytest.mark.skipif(shutil.which("dash") is None, reason="no dash (Debian's /bin/sh) here")
def test_a_command_sh_refuses_is_run_again_with_bash(suite: Suite, tmp_path: Path) -> None:
    """mini-swe-agent's `bash` tool runs /bin/sh (dash on Debian): the model reads the refusal
    of `set -o pipefail` and runs the command again through bash (gate/sim/_shell.py)."""
    task = suite.get("count-lines")  # its solution starts `set -euo pipefail`
    seed = _seed_where(["solve", "solve"], STRONG, task.id, "medium")
    with Simulator(tasks_dir=suite.root, seed=seed) as s:
        dash = run_episode(_client(s), task, tmp_path, model=STRONG, shell="dash")
        bash = run_episode(_client(s), task, tmp_path, model=STRONG)
    refused = next(i for i, c in enumerate(dash.commands) if c.startswith("set -euo pipefail"))
    assert dash.commands[refused + 1].startswith("bash -c 'set -euo pipefail")
    assert dash.passed and "37" in dash.final
    assert dash.turns == bash.turns + 1  # the retry costs a turn, in plain sight
    assert bash.passed and not any(c.startswith("bash -c") for c in bash.commands)
