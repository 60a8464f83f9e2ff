"""The docker sandbox against a real Docker engine (``.ci/docker-engine`` brings one up).

Every test here is marked ``docker`` and skips, with the reason, when no engine is reachable or
the offline base image is missing; with ``GATE_REQUIRE_DOCKER=1`` (set by ``.ci/run``) it fails
instead, so CI cannot skip them quietly. Nothing here pulls an image.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from gate.core.tasks import load_task
from gate.sandbox import SandboxOptions
from tests.helpers.docker import IMAGE, launch, ours
from tests.helpers.process import gate as run_gate
from tests.helpers.suites import write_task

pytestmark = [pytest.mark.docker, pytest.mark.slow]


def gate(*args: str | Path, cwd: Path | None = None, env: dict[str, str] | None = None,
         timeout: float = 240) -> subprocess.CompletedProcess[str]:
    """``python -m gate ARGS``, started so that its containers are known as ours."""
    return run_gate(*args, cwd=cwd, env=env, timeout=timeout)


TOOL_DOCKERFILE = (f"FROM {IMAGE}\n"
                   "RUN printf '#!/bin/sh\\necho only-in-the-image\\n' > /usr/local/bin/imgtool"
                   " && chmod +x /usr/local/bin/imgtool\n")
TOOL_VERIFY = 'set -e\ntest "$(imgtool)" = only-in-the-image\ngrep -qx hi hello.txt\n'


def test_a_task_needing_its_images_tool_passes_in_docker_and_fails_locally(
        engine: None, make_task: Callable[..., Path], suite_dir: Path, tmp_path: Path) -> None:
    make_task("needs-tool", verify=TOOL_VERIFY, extra={"environment/Dockerfile": TOOL_DOCKERFILE})
    out = tmp_path / "r.json"
    p = gate("run", "--tasks", suite_dir, "--agent", "oracle", "-k", "2", "-j", "2", "-o", out)
    assert p.returncode == 0, p.stderr
    runs = json.loads(out.read_text())["runs"]
    assert [r["status"] for r in runs] == ["passed", "passed"], runs
    # the same verify on the host fails: the tool exists only in the image
    local = tmp_path / "local"
    write_task(local, "needs-tool", verify=TOOL_VERIFY)  # the same task, no environment/
    p = gate("run", "--tasks", local, "--agent", "oracle", "-k", "1", "-o", out)
    runs = json.loads(out.read_text())["runs"]
    assert [r["status"] for r in runs] == ["failed"], runs
    # and validate works for container tasks (the image is built once, then reused)
    p = gate("validate", "--tasks", suite_dir)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "1 sound, 0 broken" in p.stdout
    assert ours() == []


def test_the_suite_runs_in_docker_with_the_suites_image(
        engine: None, make_task: Callable[..., Path], suite_dir: Path, tmp_path: Path) -> None:
    make_task("plain", setup="echo prepared > prepared.txt\n",
              verify='set -e\ngrep -qx hi hello.txt\ngrep -qx prepared prepared.txt\n'
                     'test "$WORK_DIR" = /workspace\ntest -f "$TASK_DIR/verify.sh"\n')
    cfg = tmp_path / "gate.toml"
    cfg.write_text(f'[suite]\ntasks = "{suite_dir}"\nsandbox = "docker"\n')
    out = tmp_path / "r.json"
    p = gate("run", "--config", cfg, "--agent", "oracle", "-k", "1", "-o", out)
    assert p.returncode == 2, p.stderr  # no image for a task without one: said, not run
    assert "plain: needs an image" in p.stderr and "[suite].image" in p.stderr
    cfg.write_text(f'[suite]\ntasks = "{suite_dir}"\nsandbox = "docker"\nimage = "{IMAGE}"\n')
    p = gate("run", "--config", cfg, "--agent", "oracle", "-k", "1", "-o", out)
    assert p.returncode == 0, p.stderr
    runs = json.loads(out.read_text())["runs"]
    assert [r["status"] for r in runs] == ["passed"], runs


def test_a_missing_image_is_a_clear_refusal_and_never_pulled(
        engine: None, make_task: Callable[..., Path], suite_dir: Path, tmp_path: Path) -> None:
    make_task("absent", toml='[environment]\nimage = "gate-no-such-image:never"\n')
    make_task("absent-base", extra={"environment/Dockerfile": "FROM gate-no-such-base:x\n"})
    make_task("fine")
    out = tmp_path / "r.json"
    p = gate("run", "--tasks", suite_dir, "--agent", "oracle", "-k", "1", "-o", out)
    data = json.loads(out.read_text())
    assert [r["task"] for r in data["runs"]] == ["fine"], data
    assert "'gate-no-such-image:never' is not present and pulling is off" \
        in data["problems"]["absent"]
    assert "base image 'gate-no-such-base:x' is not present" in data["problems"]["absent-base"]
    assert "not run" in p.stderr


def test_a_command_agent_in_docker_reaches_its_own_meter_and_nothing_else(
        engine: None, tmp_path: Path) -> None:
    import shutil
    import socketserver
    import threading

    from gate.core.results import load_results
    from gate.sim import ledger_totals
    from gate.usage import Usage

    suite = tmp_path / "suite"
    shutil.copytree(REPO / "tasks" / "fix-version-compare", suite / "fix-version-compare")
    shutil.copy(Path(__file__).parents[1] / "agents" / "stdlib_agent.py",
                suite / "fix-version-compare" / "starting" / ".agent.py")
    # a service on the host, on every address: the container must not reach it
    host_service = socketserver.TCPServer(("0.0.0.0", 0), socketserver.BaseRequestHandler)
    threading.Thread(target=host_service.serve_forever, daemon=True).start()
    port = host_service.server_address[1]
    probes = f"127.0.0.1:{port},172.17.0.1:{port},1.1.1.1:80"
    cfg = tmp_path / "gate.toml"
    cfg.write_text(f'[agent]\nkind = "command"\ncommand = "python3 .agent.py"\n'
                   f'env = ["PROBES"]\n[suite]\ntasks = "{suite}"\nsandbox = "docker"\n'
                   f'image = "{IMAGE}"\n')
    out = tmp_path / "r.json"
    try:
        p = gate("run", "--config", cfg, "--sim", "-k", "2", "-j", "2", "-o", out,
                 env={"PROBES": probes})
    finally:
        host_service.shutdown()
    assert p.returncode == 0, p.stderr
    results = load_results(out)
    statuses = [r.status for r in results.runs]  # the simulated model may fail a run
    assert "passed" in statuses and "error" not in statuses, results.runs
    for run in results.runs:
        events = [json.loads(ln) for ln in Path(run.transcript).read_text().splitlines()]
        (command,) = [e for e in events if e["type"] == "command"]
        said = [ln for ln in command["stderr"].splitlines() if ln.startswith("PROBE")]
        assert said == [*(f"PROBE {t} failed" for t in probes.split(",")),
                        "PROBE other-run failed"], said
    # its usage, counted by the meter outside the container, equals what the simulator served
    served = ledger_totals(results.model_extra["simulator"]["ledger"])
    metered = sum((r.usage for r in results.runs), Usage())
    for field in ("input_tokens", "output_tokens", "cache_creation_input_tokens",
                  "cache_read_input_tokens"):
        assert getattr(metered, field) == getattr(served, field), field
    assert metered.input_tokens > 0
    assert sum(r.turns for r in results.runs) >= 4
    assert ours() == []


CHECKS = r"""
set -u
fail() { echo "FAIL: $*"; exit 1; }
[ "$(id -u)" != 0 ] || fail "runs as root"
ifaces=$(tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' ' | sort | tr '\n' ' ')
[ "$ifaces" = "lo " ] || fail "interfaces: $ifaces"
touch /etc/gate-probe 2>/dev/null && fail "the root filesystem is writable"
grep -q '^CapEff:[[:space:]]*0000000000000000' /proc/self/status || fail "capabilities kept"
grep -q '^NoNewPrivs:[[:space:]]*1' /proc/self/status || fail "new privileges allowed"
for f in /proc/[0-9]*/environ /proc/[0-9]*/cmdline; do
  if tr '\0' '\n' < "$f" 2>/dev/null | grep -q -e sk-ant-planted -e ghp_planted; then
    fail "credential in $f"
  fi
done
env | grep -q -i -e ANTHROPIC -e GITHUB_TOKEN && fail "credential variable"
true
"""


def test_inside_a_container_no_network_no_root_no_credential(
        engine: None, make_task: Callable[..., Path], suite_dir: Path, tmp_path: Path) -> None:
    make_task("probe", toml=f'[environment]\nimage = "{IMAGE}"\n',
              verify=CHECKS + "grep -qx hi hello.txt\n",
              solve=CHECKS + "echo hi > hello.txt\n")
    out = tmp_path / "r.json"
    secrets = {"ANTHROPIC_API_KEY": "sk-ant-planted-0123456789",
               "GITHUB_TOKEN": "ghp_planted0123456789", "MY_COPY": "sk-ant-planted-0123456789"}
    p = gate("run", "--tasks", suite_dir, "--agent", "oracle", "-k", "1", "-o", out, env=secrets)
    runs = json.loads(out.read_text())["runs"]
    assert [r["status"] for r in runs] == ["passed"], (runs, p.stderr)


def test_the_task_directory_is_visible_to_task_scripts_only(
        engine: None, make_task: Callable[..., Path]) -> None:
    from gate.sandbox._docker import DockerSandboxProvider

    task = load_task(make_task("hidden", toml=f'[environment]\nimage = "{IMAGE}"\n'))
    with DockerSandboxProvider(SandboxOptions()) as provider:
        assert provider.refusal(task) is None
        with provider.create(task, "hidden-r0") as sb:
            agent = sb.exec('ls -d /task || echo "TASK_DIR=${TASK_DIR:-unset}"', timeout=60)
            assert agent.stdout == "TASK_DIR=unset\n", agent
            script = sb.run_script("verify.sh", timeout=60)  # fails: no hello.txt yet
            assert script.returncode != 0 and "hello.txt" in script.stderr, script
            sb.write_file("/workspace/hello.txt", "hi\n")  # the path as commands see it
            assert sb.run_script("verify.sh", timeout=60).returncode == 0
            assert sb.read_file("hello.txt") == "hi\n"
            with pytest.raises(PermissionError):
                sb.read_file("../../etc/passwd")
            res = sb.exec("cat", timeout=60, stdin="from stdin\n")
            assert res.stdout == "from stdin\n", res
    assert ours() == []


ABUSE = r"""
setsid bash -c 'sleep 300.4242' < /dev/null > /dev/null 2>&1 &
python3 -c 'b = bytearray(1 << 30); print(len(b))' || echo "memory hog killed: $?"
bomb() { bomb | bomb & }; bomb 2>/dev/null
sleep 1
echo hi > hello.txt
"""


def test_a_fork_bomb_a_memory_hog_and_a_daemon_are_contained(
        engine: None, make_task: Callable[..., Path], suite_dir: Path, tmp_path: Path) -> None:
    make_task("abuse", solve=ABUSE, toml=(f'task_timeout = 20\n[environment]\nimage = "{IMAGE}"\n'
                                          "memory_mb = 128\npids = 64\n"))
    make_task("neighbour", toml=f'[environment]\nimage = "{IMAGE}"\n')
    out = tmp_path / "r.json"
    p = gate("run", "--tasks", suite_dir, "--agent", "oracle", "-k", "1", "-j", "2", "-o", out)
    runs = {r["task"]: r for r in json.loads(out.read_text())["runs"]}
    assert runs["neighbour"]["status"] == "passed", (runs, p.stderr)
    assert runs["abuse"]["status"] in ("passed", "failed"), runs  # recorded, not an infra error
    assert ours() == [], "a container outlived its command"
    # a duration no other process on the host uses (a shell's `sleep 300` would match)
    host = subprocess.run(["pgrep", "-f", "sleep 300.4242"], capture_output=True, text=True)
    assert host.stdout.strip() == "", "the daemon escaped to the host"


SLOW = "sleep 300\n"


def _wait_for_container(timeout: float = 120) -> None:
    end = time.monotonic() + timeout
    while not ours(all_=False):
        assert time.monotonic() < end, "no container started"
        time.sleep(0.5)


def test_ctrl_c_stops_containers_and_a_sigkilled_gate_is_cleaned_up_at_the_next_start(
        engine: None, make_task: Callable[..., Path], suite_dir: Path, tmp_path: Path) -> None:
    make_task("slow", solve=SLOW, toml=f'[environment]\nimage = "{IMAGE}"\n')
    make_task("quick", toml=f'[environment]\nimage = "{IMAGE}"\n')
    cmd = [sys.executable, "-m", "gate", "run", "--tasks", str(suite_dir), "--task", "slow",
           "--agent", "oracle", "-k", "1", "-o", str(tmp_path / "r.json")]
    # Ctrl-C: the container is gone within a few seconds
    proc = launch(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _wait_for_container()
    t0 = time.monotonic()
    proc.send_signal(signal.SIGINT)
    proc.wait(timeout=120)  # generous: a loaded runner is slow, a gate that hangs is not
    while ours() and time.monotonic() - t0 < 60:
        time.sleep(0.2)
    assert ours() == [], "Ctrl-C left a container"
    # SIGKILL: the container outlives the gate, and the next start removes it
    proc = launch(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _wait_for_container()
    proc.kill()
    proc.wait()
    assert ours(), "expected the killed gate's container to be left running"
    p = gate("run", "--tasks", suite_dir, "--task", "quick", "--agent", "oracle", "-k", "1",
             "-o", tmp_path / "r2.json")
    assert p.returncode == 0, p.stderr
    assert ours() == [], "the next start did not clean up"


REPO = Path(__file__).resolve().parents[2]


def test_the_bundled_suite_passes_with_the_oracle_in_docker_and_the_builtin_agents_tools_run_there(
        engine: None, tmp_path: Path) -> None:
    cfg = tmp_path / "gate.toml"
    cfg.write_text(f'[agent]\nkind = "builtin"\n[suite]\ntasks = "{REPO / "tasks"}"\n'
                   f'sandbox = "docker"\nimage = "{IMAGE}"\njobs = 3\n')
    out = tmp_path / "o.json"
    p = gate("run", "--config", cfg, "--agent", "oracle", "-k", "1", "-o", out, timeout=600)
    assert p.returncode == 0, p.stderr
    runs = json.loads(out.read_text())["runs"]
    assert len(runs) == 16 and {r["status"] for r in runs} == {"passed"}, runs
    # the builtin agent's loop stays in the gate (through the meter); its tools run in docker
    out = tmp_path / "b.json"
    p = gate("run", "--config", cfg, "--sim", "-k", "1", "--task", "fix-version-compare",
             "-o", out)
    assert p.returncode == 0, p.stderr
    (run,) = json.loads(out.read_text())["runs"]
    assert run["status"] == "passed" and run["turns"] > 1, run
    events = [json.loads(ln) for ln in Path(run["transcript"]).read_text().splitlines()]
    tools = [e["output"] for e in events if e["type"] == "tool"]
    assert tools, events
    if os.getuid() == 0:  # a root gate's tools run as the container's unprivileged user
        assert any(" 1000 1000 " in out for out in tools), tools
    assert ours() == []


def test_on_githubs_runners_a_missing_image_is_pulled(
        engine: None, make_task: Callable[..., Path], suite_dir: Path, tmp_path: Path) -> None:
    """``[suite].pull`` unset: pulled on GitHub's runners, where a registry is there (no registry
    is reachable here, so the pull fails with the engine's reason), never elsewhere (above)."""
    make_task("absent", toml='[environment]\nimage = "gate-no-such-image:never"\n')
    out = tmp_path / "r.json"
    p = gate("run", "--tasks", suite_dir, "--agent", "oracle", "-k", "1", "-o", out,
             env={"GITHUB_ACTIONS": "true"})
    data = json.loads(out.read_text())
    text = json.dumps(data) + p.stderr
    assert "cannot pull 'gate-no-such-image:never'" in text, text[-3000:]
    assert "pulling is off" not in text
