from __future__ import annotations

import json
import os
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from gate.agents._builtin import BuiltinAgent
from gate.agents._tools import OUTPUT_LIMIT, TOOLS, bound, run_tool
from gate.core.cost import price_table
from gate.core.tasks import load_suite
from gate.execution.runner import RunOptions, run_one
from gate.meter import MeterProxy
from gate.sandbox import READ_LIMIT, LocalSandboxProvider, SandboxError


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
    assert "cut by the gate" in out and out.rstrip().endswith("[exit code 3]")
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


def _hostile_workspace(sb) -> None:  # type: ignore[no-untyped-def]
    work = Path(sb.workdir)
    (work / "loop-a").symlink_to("loop-b")
    (work / "loop-b").symlink_to("loop-a")
    (work / "blob.bin").write_bytes(b"\x7fELF\x00\x01\x02" + bytes(range(256)) * 10)
    os.mkfifo(work / "fifo")
    with open(work / "huge.log", "wb") as fh:  # sparse: over the read limit, no disk used
        fh.truncate(READ_LIMIT + 1)
    (work / "adir").mkdir()


@pytest.mark.parametrize("tool,args,says", [
    ("read_file", {"path": "loop-a"}, "symlink loop"),
    ("read_file", {"path": "a.py", "offset": float("inf")}, "`offset` must be an integer"),
    ("read_file", {"path": "a.py", "offset": float("nan")}, "`offset` must be an integer"),
    ("read_file", {"path": "a.py", "offset": 10**400}, "`offset` must be an integer"),
    ("read_file", {"path": "a.py", "offset": -3}, "`offset` must be an integer"),
    ("read_file", {"path": "a.py", "offset": "3"}, "`offset` must be an integer"),
    ("read_file", {"path": "a.py", "offset": [1]}, "`offset` must be an integer"),
    ("read_file", {"path": "a.py", "offset": True}, "`offset` must be an integer"),
    ("read_file", {"path": "a.py", "limit": 0}, "`limit` must be an integer"),
    ("read_file", {"path": "a.py", "limit": 10**30}, "`limit` must be an integer"),
    ("read_file", {"path": 42}, "`path` must be a string"),
    ("read_file", {}, "`path` must be a string"),
    ("read_file", ["a.py"], "must be a JSON object"),
    ("read_file", "a.py", "must be a JSON object"),
    ("read_file", {"path": "adir"}, "is a directory"),
    ("read_file", {"path": "."}, "is a directory"),
    ("read_file", {"path": "blob.bin"}, "binary file"),
    ("read_file", {"path": "fifo"}, "not a regular file"),
    ("read_file", {"path": "huge.log"}, "over the gate's limit"),
    ("read_file", {"path": "a\x00b"}, "read_file failed: ValueError"),
    ("read_file", {"path": "x" * 5000}, "cannot read"),
    ("read_file", {"path": "missing.txt"}, "No such file"),
    ("write_file", {"path": "loop-a", "content": "x"}, "symlink loop"),
    ("write_file", {"path": "adir", "content": "x"}, "cannot write adir"),
    ("write_file", {"path": "fifo", "content": "x"}, "cannot write fifo"),
    ("write_file", {"path": "a.py", "content": "\ud800"}, "write_file failed"),
    ("write_file", {"path": "a.py", "content": None}, "`content` must be a string"),
    ("write_file", {"path": "a.py/sub", "content": "x"}, "cannot write a.py/sub"),
    ("edit_file", {"path": "blob.bin", "old_string": "E", "new_string": "e"}, "binary file"),
    ("edit_file", {"path": "a.py", "old_string": "x", "new_string": "y",
                   "replace_all": "yes"}, "`replace_all` must be true or false"),
    ("edit_file", {"path": "loop-b", "old_string": "x", "new_string": "y"}, "symlink loop"),
    ("edit_file", {"path": "fifo", "old_string": "x", "new_string": "y"}, "not a regular file"),
    ("bash", {"command": "echo \x00"}, "bash failed: ValueError"),
    ("bash", {"command": ["ls"]}, "`command` must be a string"),
])
def test_every_bad_tool_call_is_a_tool_error(make_task, suite_dir: Path, tmp_path: Path,
                                             tool: str, args: object, says: str) -> None:
    sb = _sandbox(make_task, suite_dir, tmp_path)
    _hostile_workspace(sb)
    box: list[tuple[str, bool]] = []
    worker = threading.Thread(target=lambda: box.append(
        run_tool(TOOLS[tool], sb, args, 5)), daemon=True)  # type: ignore[arg-type]
    worker.start()
    worker.join(10)
    assert box, f"{tool} {args!r} hung (a FIFO must never block the gate)"
    out, is_error = box[0]
    assert is_error, out
    assert says in out, out
    assert sb.read_file("a.py") == "x = 1\ny = 1\n"  # nothing was damaged on the way
    sb.close()


def test_read_file_pages_through_with_offset_and_limit(make_task, suite_dir: Path,
                                                       tmp_path: Path) -> None:
    sb = _sandbox(make_task, suite_dir, tmp_path)
    sb.write_file("n.txt", "".join(f"line{i}\n" for i in range(10)))
    out, err = run_tool(TOOLS["read_file"], sb, {"path": "n.txt", "offset": 8.0, "limit": 5}, 5)
    assert not err and out == "     9\tline8\n    10\tline9"
    out, err = run_tool(TOOLS["read_file"], sb, {"path": "n.txt", "offset": 10**15}, 5)
    assert not err and out == "(empty file)"
    sb.close()


def test_a_cancelled_run_stays_infra_not_a_tool_error(make_task, suite_dir: Path,
                                                      tmp_path: Path) -> None:
    make_task("t")
    cancel = threading.Event()
    cancel.set()
    sb = LocalSandboxProvider(base_dir=tmp_path / "ws", cancel=cancel).create(
        load_suite(suite_dir).get("t"), "t-r0")
    with pytest.raises(SandboxError):
        run_tool(TOOLS["bash"], sb, {"command": "true"}, 5)
    sb.close()


class _ScriptedModel:
    """A Messages API on loopback that asks for hostile tool calls once, then ends the turn."""

    CALLS = (("read_file", '{"path": "loop-a", "offset": 1e400}'),
             ("read_file", '["a.py"]'),
             ("read_file", '{"path": "a.py", "limit": 123456789012345678901234567890}'),
             ("edit_file", '{"path": "fifo", "old_string": "x", "new_string": "y"}'),
             ("write_file", '{"path": "../../escape", "content": "y"}'),
             ("bash", '{"command": null}'),
             ("no_such_tool", "{}"))

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        model = self

        class H(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["content-length"])))
                model.requests.append(body)
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.end_headers()
                usage = {"input_tokens": 10, "output_tokens": 1}
                events: list[dict[str, Any]] = [{"type": "message_start", "message": {
                    "id": "m", "type": "message", "role": "assistant", "model": body["model"],
                    "content": [], "stop_reason": None, "stop_sequence": None, "usage": usage}}]
                first = len(model.requests) == 1
                blocks = model.CALLS if first else []
                for i, (name, raw) in enumerate(blocks):
                    events += [
                        {"type": "content_block_start", "index": i, "content_block": {
                            "type": "tool_use", "id": f"tu{i}", "name": name, "input": {}}},
                        {"type": "content_block_delta", "index": i, "delta": {
                            "type": "input_json_delta", "partial_json": raw}},
                        {"type": "content_block_stop", "index": i}]
                if not first:
                    events += [
                        {"type": "content_block_start", "index": 0,
                         "content_block": {"type": "text", "text": ""}},
                        {"type": "content_block_delta", "index": 0,
                         "delta": {"type": "text_delta", "text": "done"}},
                        {"type": "content_block_stop", "index": 0}]
                events += [{"type": "message_delta", "usage": {"output_tokens": 5}, "delta": {
                    "stop_reason": "tool_use" if first else "end_turn", "stop_sequence": None}},
                           {"type": "message_stop"}]
                for ev in events:
                    self.wfile.write(f"event: {ev['type']}\ndata: {json.dumps(ev)}\n\n".encode())
                self.close_connection = True

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"


@pytest.mark.slow
def test_hostile_tool_calls_are_tool_errors_in_a_real_run(make_task, suite_dir: Path,
                                                          tmp_path: Path) -> None:
    make_task("t", starting={"a.py": "x = 1\n"},
              setup="ln -s loop-b loop-a\nln -s loop-a loop-b\nmkfifo fifo\n")
    model = _ScriptedModel()
    with MeterProxy(model.url, "sk-ant-unused", price_table()) as meter:
        res = run_one(load_suite(suite_dir).get("t"), 0,
                      BuiltinAgent(model="claude-sonnet-5-5"), meter=meter,
                      provider=LocalSandboxProvider(base_dir=tmp_path / "ws"),
                      options=RunOptions(transcripts_dir=tmp_path / "tr"))
    model.server.shutdown()
    assert res.status == "failed", res.reason  # the task's verdict, not an infra error
    assert res.reason is not None and res.reason.startswith("verify exited")
    results = model.requests[1]["messages"][-1]["content"]
    assert len(results) == len(_ScriptedModel.CALLS)
    assert all(r["type"] == "tool_result" and r["is_error"] for r in results), results
