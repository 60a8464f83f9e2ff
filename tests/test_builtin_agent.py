from __future__ import annotations

import json
from pathlib import Path

from gate.agents._builtin import BuiltinAgent
from gate.agents._tools import OUTPUT_LIMIT, TOOLS, bound, run_tool
from gate.sandbox import LocalSandboxProvider
from gate.tasks import load_suite


def _sandbox(make_task, suite_dir: Path, tmp_path: Path):
    make_task("t", starting={"a.py": "x = 1\ny = 1\n"})
    task = load_suite(suite_dir).get("t")
    return LocalSandboxProvider(base_dir=tmp_path / "ws").create(task, "t-r0")


def test_edit_file_exact_unique_replace(make_task, suite_dir: Path, tmp_path: Path) -> None:
    sb = _sandbox(make_task, suite_dir, tmp_path)
    edit = TOOLS["edit_file"]
    out, err = run_tool(edit, sb, {"path": "a.py", "old_string": "= 1", "new_string": "= 2"}, 5)
    assert err and "occurs 2 times" in out
    out, err = run_tool(edit, sb, {"path": "a.py", "old_string": "x = 1", "new_string": "x = 2"},
                        5)
    assert not err and sb.read_file("a.py") == "x = 2\ny = 1\n"
    out, err = run_tool(edit, sb, {"path": "a.py", "old_string": "zzz", "new_string": "q"}, 5)
    assert err and "not found" in out
    out, err = run_tool(edit, sb, {"path": "a.py", "old_string": "= ", "new_string": ":= ",
                                   "replace_all": True}, 5)
    assert not err and sb.read_file("a.py") == "x := 2\ny := 1\n"
    sb.close()


def test_bash_output_is_bounded_and_exit_code_reported(make_task, suite_dir: Path,
                                                       tmp_path: Path) -> None:
    sb = _sandbox(make_task, suite_dir, tmp_path)
    out, err = run_tool(TOOLS["bash"], sb, {"command": "seq 1 100000; exit 3"}, 30)
    assert not err
    assert len(out) < OUTPUT_LIMIT + 200
    assert "truncated by the gate" in out and out.rstrip().endswith("[exit code 3]")
    assert out.startswith("1\n2\n")
    out, err = run_tool(TOOLS["bash"], sb, {"command": 42}, 30)
    assert err
    sb.close()


def test_bound_keeps_head_and_tail() -> None:
    text = "H" * 50_000 + "T" * 50_000
    b = bound(text, 1000)
    assert b.startswith("H" * 600) and b.endswith("T" * 300) and len(b) < 1200


def test_breakpoints_last_tool_system_and_moving_turn() -> None:
    agent = BuiltinAgent(model="claude-sonnet-5-5", cache="1h")
    history = [{"role": "user", "content": "do it"},
               {"role": "assistant", "content": [{"type": "text", "text": "ok"}]},
               {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1",
                                             "content": "done"}]}]
    msgs = agent._messages(history)
    tools = agent._tool_schemas()
    marks = json.dumps([tools, msgs]).count("cache_control")
    assert marks == 2  # + 1 on the system block = 3 ≤ 4
    assert tools[-1]["cache_control"] == {"type": "ephemeral", "ttl": "1h"}
    assert "cache_control" in msgs[-1]["content"][-1]
    assert "cache_control" not in json.dumps(history)  # the history itself is not mutated
    assert "cache_control" not in json.dumps(msgs[:-1])
    off = BuiltinAgent(model="claude-sonnet-5-5", cache="off")
    assert "cache_control" not in json.dumps([off._tool_schemas(), off._messages(history)])


def test_file_tools_are_confined_to_the_workspace(make_task, suite_dir: Path,
                                                  tmp_path: Path) -> None:
    sb = _sandbox(make_task, suite_dir, tmp_path)
    for path in ("/etc/passwd", "../home/x", "/proc/self/environ"):
        out, err = run_tool(TOOLS["read_file"], sb, {"path": path}, 5)
        assert err and "outside the workspace" in out, (path, out)
    out, err = run_tool(TOOLS["write_file"], sb, {"path": "../escape.txt", "content": "x"}, 5)
    assert err and not (Path(sb.workdir).parent / "escape.txt").exists()
    out, err = run_tool(TOOLS["read_file"], sb, {"path": f"{sb.workdir}/a.py"}, 5)
    assert not err and "x = 1" in out
    sb.close()
