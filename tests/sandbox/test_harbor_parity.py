"""Harbor parity: real Harbor tasks run under the gate as Harbor runs them.

One test per way the gate used to part from Harbor (each was red before its fix): a command
agent's prompt and final files, setuid, legacy resource keys, named rewards, the build
timeout, the verifier's files, skills the task ships, multi-step tasks, a build's own error,
and the agent/verifier phase boundary. The loading tests need nothing; the runs are in-process
against a real Docker engine (``docker``; they skip without one, as tests/test_docker.py).
"""

from __future__ import annotations

import contextlib
import json
import time
from pathlib import Path
from typing import Any

import pytest

from gate.agents import Agent, OracleAgent
from gate.core.results import RunResult
from gate.core.skills import run_skills, skills_for
from gate.core.tasks import load_suite, load_task
from gate.execution.runner import RunOptions, run_one
from gate.formats import detect_format
from gate.formats._harbor import harbor_of
from tests.helpers.docker import IMAGE

BASE = f"FROM {IMAGE}\nWORKDIR /app\nRUN chmod 777 /app\n"
REWARD_FROM_FILE = """#!/bin/bash
if [ "$(cat /app/out.txt 2>/dev/null)" = "{want}" ]; then r=1; else r=0; fi
echo "$r" > /logs/verifier/reward.txt
"""


def harbor(root: Path, name: str, *, toml: str = "", dockerfile: str = BASE,
           solve: str | None = "#!/bin/bash\necho ok > /app/out.txt\n",
           test: str | None = REWARD_FROM_FILE.format(want="ok"),
           files: dict[str, str] | None = None,
           instruction: str | None = "Write ok into /app/out.txt.\n") -> Path:
    d = root / name
    every = {"instruction.md": instruction, "task.toml": toml,
             "environment/Dockerfile": dockerfile, "solution/solve.sh": solve,
             "tests/test.sh": test, **(files or {})}
    for rel, body in every.items():
        if body is not None:
            (d / rel).parent.mkdir(parents=True, exist_ok=True)
            (d / rel).write_text(body)
    return d


def run(path: Path, agent: Agent | None = None, tmp: Path | None = None,
        unprotected: bool = False, **options: Any) -> tuple[RunResult, list[dict[str, Any]]]:
    """``unprotected``: as [suite].reward_unprotected listing the task."""
    from gate.sandbox import SandboxOptions
    from gate.sandbox._docker import DockerSandboxProvider

    task = load_task(path)
    transcripts = (tmp or path.parent) / "transcripts"
    with DockerSandboxProvider(SandboxOptions(reward_unprotected=frozenset(
            {task.id} if unprotected else ()))) as provider:
        result = run_one(task, 0, agent or OracleAgent(), provider=provider,
                         options=RunOptions(transcripts_dir=transcripts, **options))
    events = [json.loads(ln) for ln in Path(result.transcript or "").read_text().splitlines()] \
        if result.transcript else []
    return result, events


def command_agent(command: str) -> Agent:
    from gate.agents._command import CommandAgent

    return CommandAgent(command)


# ----- loading: no engine ---------------------------------------------------------------------

def test_legacy_resource_keys_convert_as_harbor_converts_them(tmp_path: Path) -> None:
    task = load_task(harbor(tmp_path, "legacy", toml='[environment]\nmemory = "4G"\n'
                                                      'storage = "10G"\ncpus = 2\n'))
    env = harbor_of(task).config.environment
    assert (env.memory_mb, env.storage_mb) == (4096, 10240)
    assert task.meta.environment is not None and task.meta.environment.memory_mb == 4096
    assert "environment.memory" not in task.unhonoured  # converted, not dropped
    bad = harbor(tmp_path, "bad", toml='[environment]\nmemory = "4 gigs"\n')
    with pytest.raises(Exception, match=r"bad: task\.toml: environment.*4 gigs"):
        load_task(bad)


def test_named_rewards_decide_as_harbor_reads_them() -> None:
    from gate.formats._harbor import combine, judge, min_reward_failure, parse_rewards
    from gate.sandbox import ExecResult

    res = ExecResult(0, "", "")
    named, _ = parse_rewards("/logs/verifier/reward.json",
                             '{"correctness": 1, "style": 1.0, "note": "x", "ok": true}')
    assert named == {"correctness": 1.0, "style": 1.0}  # numbers only, booleans are not
    assert judge(named, "", res).passed
    half = judge({"correctness": 1.0, "style": 0.5}, "", res)
    assert not half.passed and half.reason == "style 0.5 (the task passes at 1)"
    assert judge({"score": 1.0}, "", res).passed  # one named reward: that one
    assert not judge({"reward": 0.0, "tests": 1.0}, "", res).passed  # `reward` decides
    assert parse_rewards("/logs/verifier/reward.txt", "\n") == (
        None, "/logs/verifier/reward.txt is empty")
    assert combine([("a", {"reward": 1.0}), ("b", {"reward": 0.0, "x": 1.0})], "mean") == {
        "reward": 0.5, "x": 0.5}
    assert combine([("a", {"reward": 1.0}), ("b", None)], "final") is None
    assert min_reward_failure({"reward": 0.5}, 1.0) == "reward=0.5 below min_reward 1"
    assert min_reward_failure(None, {"style": 0.0}) is not None  # missing: -inf


MULTI_TOML = """multi_step_reward_strategy = "mean"
[agent]
timeout_sec = 60.0
[[steps]]
name = "one"
min_reward = 1.0
[[steps]]
name = "two"
[steps.agent]
user = "player"
[steps.verifier]
timeout_sec = 30.0
"""


def multi_step(root: Path, name: str, *, toml: str = MULTI_TOML,
               first: str = "echo one > /app/out.txt; chmod 666 /app/out.txt") -> Path:
    return harbor(root, name, toml=toml, instruction=None, solve=None, test=None,
                  dockerfile=BASE + "RUN useradd -m player\n", files={
        "steps/one/instruction.md": "Write one into /app/out.txt.\n",
        "steps/one/solution/solve.sh": f"#!/bin/bash\n{first}\n",
        "steps/one/tests/test.sh": REWARD_FROM_FILE.format(want="one"),
        "steps/two/instruction.md": "Now write two into /app/out.txt.\n",
        "steps/two/workdir/setup.sh": "#!/bin/bash\necho prepared > /app/prepared.txt\n",
        "steps/two/solution/solve.sh": "#!/bin/bash\ntest -f /app/prepared.txt && "
                                       '[ "$(id -un)" = player ] && echo two > /app/out.txt\n',
        "tests/test.sh": REWARD_FROM_FILE.format(want="two"),  # the shared fallback
    })


def test_a_multi_step_task_loads_with_its_steps(tmp_path: Path) -> None:
    multi_step(tmp_path, "steps")
    suite = load_suite(tmp_path)
    assert suite.problems == ()
    (task,) = suite.tasks
    assert detect_format(task.path).name == "harbor"
    assert [s.name for s in task.steps] == ["one", "two"]
    assert task.prompt == "Write one into /app/out.txt.\n"
    two = task.for_step(1)
    assert two.prompt.startswith("Now write two") and two.verify_timeout() == 30.0
    (tmp_path / "steps" / "steps" / "two" / "instruction.md").unlink()
    assert "steps/two/instruction.md is missing" in load_suite(tmp_path).problems[0].reason


def test_skills_a_task_ships_are_skills_for_conditions_and_the_agent(tmp_path: Path) -> None:
    path = harbor(tmp_path, "skilled", files={
        "environment/skills/csv-tips/SKILL.md": "---\nname: csv-tips\ndescription: Tips for "
                                                "CSV files.\n---\nUse csv.\n"})
    task = load_task(path)
    assert task.skills_root is not None
    assert [s.name for s in run_skills(task, [], None)] == ["csv-tips"]  # told to the agent
    assert skills_for(task, "control", []) == []
    from gate.formats._harbor import baked_skill_dirs

    (path / "environment" / "Dockerfile").write_text(
        BASE + "COPY skills /root/.claude/skills\nCOPY --chown=0:0 skills/ /root/.codex/skills/\n"
        'COPY ["skills", "/root/.agents/skills"]\nCOPY tools /opt/tools\n')
    assert baked_skill_dirs(task) == ["/root/.agents/skills", "/root/.claude/skills",
                                      "/root/.codex/skills"]
    # skills copied to [environment] skills_dir from another folder of the build context
    other = harbor(tmp_path, "skills-dir", toml='[environment]\nskills_dir = "/opt/skills"\n',
                   dockerfile=BASE + "COPY my-skills/ /opt/skills/\n", files={
                       "environment/my-skills/csv-tips/SKILL.md": "---\nname: csv-tips\n"
                       "description: Tips for CSV files.\n---\nUse csv.\n"})
    task = load_task(other)
    assert task.skills_root == (other / "environment" / "my-skills").resolve()
    assert [s.name for s in run_skills(task, [], None)] == ["csv-tips"]
    assert baked_skill_dirs(task) == ["/opt/skills"]
    assert [s.name for s in skills_for(task, "full", []) or []] == ["csv-tips"]


def test_the_html_report_shows_the_verifiers_files_of_a_baseline_run() -> None:
    from gate.core.results import AgentInfo, RunUsage, SuiteInfo, TaskInfo, new_results
    from gate.core.traces import Trace
    from gate.report._html import render_html

    def results(status: str) -> Any:
        run = RunResult(task="t", replication=0, status=status, turns=1,  # type: ignore[arg-type]
                        reason=None, notes=None,
                        usage=RunUsage(input_tokens=1, output_tokens=1,
                                       cache_creation_input_tokens=0,
                                       cache_read_input_tokens=0),
                        cost_usd=0.0, duration_s=1.0, task_digest="d")
        return new_results(model="m", agent=AgentInfo(kind="builtin", fingerprint="f"),
                           suite=SuiteInfo(digest="s", tasks={"t": TaskInfo(digest="d")}),
                           commit="c", runs=[run])

    trace = Trace(task="t", status="failed", verify="ok",
                  verifier_files={"ctrf.json": '{"failed": "<b>test_x</b>"}',
                                  "artifacts/app/<x>.log": "kept"})
    page = render_html(results("failed"), baseline=results("failed"), baseline_traces=[trace])
    assert "verifier file · ctrf.json" in page
    assert "artifact · app/&lt;x&gt;.log" in page  # a Harbor artifact, by its container path
    assert "&lt;b&gt;test_x&lt;/b&gt;" in page and "<b>test_x" not in page


# ----- in containers --------------------------------------------------------------------------

@pytest.mark.docker
@pytest.mark.slow
@pytest.mark.usefixtures("engine")
def test_a_command_agent_reads_its_prompt_and_writes_its_final_inside_the_container(
        tmp_path: Path) -> None:
    path = harbor(tmp_path, "prompted", test=REWARD_FROM_FILE.format(
        want="Write ok into /app/out.txt."))
    agent = command_agent('cat "$GATE_PROMPT_FILE" > /app/out.txt && '
                          'echo "my final words" > "$GATE_FINAL_FILE"')
    result, events = run(path, agent)
    assert result.status == "passed", result.reason
    assert [e["message"] for e in events if e["type"] == "final"] == ["my final words"]


# Harbor runs a phase whose user is unset as the image's USER (root here), the verifier too
ROOT_VERIFIER = '[ "$(id -u)" = 0 ] || echo 0 > /logs/verifier/reward.txt\n'
@pytest.mark.docker
@pytest.mark.slow
@pytest.mark.usefixtures("engine")
def test_the_environments_variables_reach_the_agents_commands(tmp_path: Path) -> None:
    path = harbor(tmp_path, "env", toml='[environment]\nenv = { GREETING = "hello" }\n',
                  test=REWARD_FROM_FILE.format(want="hello"))
    result, _ = run(path, command_agent('echo "$GREETING" > /app/out.txt'))
    assert result.status == "passed", result.reason


SETUID_DOCKERFILE = BASE + ("RUN cp /usr/bin/id /usr/local/bin/root-id && chmod u+s "
                            "/usr/local/bin/root-id && useradd -m player\n")


@pytest.mark.docker
@pytest.mark.slow
@pytest.mark.usefixtures("engine")
def test_setuid_users_and_variables_work_as_under_harbor(tmp_path: Path) -> None:
    path = harbor(tmp_path, "setuid", dockerfile=SETUID_DOCKERFILE,
                  toml='[agent]\nuser = "player"\n[environment]\nenv = { GREETING = "hello" }\n',
                  solve='#!/bin/bash\necho "$(root-id -u) $(id -un) $GREETING" > /app/out.txt\n',
                  test=REWARD_FROM_FILE.format(want="0 player hello") + ROOT_VERIFIER)
    result, _ = run(path)
    assert result.status == "passed", result.reason


MEMORY = "cat /sys/fs/cgroup/memory.max 2>/dev/null || " \
         "cat /sys/fs/cgroup/memory/memory.limit_in_bytes"


@pytest.mark.docker
@pytest.mark.slow
@pytest.mark.usefixtures("engine")
def test_a_legacy_memory_key_is_the_containers_limit(tmp_path: Path) -> None:
    path = harbor(tmp_path, "mem", toml='[environment]\nmemory = "3G"\n',
                  solve=f"#!/bin/bash\n({MEMORY}) > /app/out.txt\n",
                  test=REWARD_FROM_FILE.format(want=str(3 * 1024 ** 3)))
    result, _ = run(path)
    assert result.status == "passed", result.reason


NAMED = """#!/bin/bash
echo "checking the output" ; echo "a diagnostic on stderr" >&2
echo '{"results": {"tests": 2, "passed": 1}}' > /logs/verifier/ctrf.json
echo '{"correctness": 1, "style": 0.5}' > /logs/verifier/reward.json
"""


@pytest.mark.docker
@pytest.mark.slow
@pytest.mark.usefixtures("engine")
def test_named_rewards_decide_and_the_verifiers_files_are_kept(tmp_path: Path) -> None:
    result, events = run(harbor(tmp_path, "named", test=NAMED))
    assert result.status == "failed" and result.reason == "style 0.5 (the task passes at 1)"
    assert result.score == {"correctness": 1.0, "style": 0.5}
    (verify,) = [e for e in events if e["type"] == "verify"]
    assert "a diagnostic on stderr" in verify["files"]["test-stdout.txt"]
    assert json.loads(verify["files"]["ctrf.json"]) == {"results": {"tests": 2, "passed": 1}}
    assert "checking the output" in verify["output"]  # test-stdout.txt is verify's output
    from gate.core.traces import trace_from_events

    trace = trace_from_events(events, result)
    assert "ctrf.json" in trace.verifier_files
    assert "a diagnostic on stderr" in trace.verifier_files["test-stdout.txt"]
    # the HTML report shows them: in the full transcript and in a baseline run's trace
    from gate.report._html import _event, _trace_view

    shown = dict(_event(verify).blocks)
    assert "a diagnostic on stderr" in shown["files"]
    assert _trace_view(trace).verifier_files == trace.verifier_files


@pytest.mark.docker
@pytest.mark.slow
@pytest.mark.usefixtures("engine")
def test_the_build_timeout_is_enforced(tmp_path: Path) -> None:
    import docker

    marker = f"tick-{time.time()}"  # a build that talks all the time: no read ever times out
    chatty = BASE + f"RUN for i in $(seq 60); do echo {marker} $i; sleep 1; done\n"
    path = harbor(tmp_path, "slow-build", dockerfile=chatty,
                  toml="[environment]\nbuild_timeout_sec = 4\n")
    start = time.monotonic()
    result, _ = run(path)
    assert result.status == "error"
    assert "build_timeout_sec (4 s)" in (result.reason or "")
    assert time.monotonic() - start < 45  # the build alone takes 60 s; a loaded runner is slower
    # and the engine stopped building (the step's container is gone)
    client = docker.from_env()
    try:
        for _ in range(20):
            running = [c for c in client.containers.list()
                       if marker in " ".join(c.attrs["Config"].get("Cmd") or [])]
            if not running:
                break
            time.sleep(0.5)
        assert running == []
    finally:
        client.close()


@pytest.mark.docker
@pytest.mark.slow
@pytest.mark.usefixtures("engine")
def test_a_failed_build_shows_the_builds_own_error(tmp_path: Path) -> None:
    # a builder that colours its output (npm, apt, pip do): the reason is plain text
    broken = BASE + ("RUN sh -c 'printf \"\\033[91mcause-%s is why\\033[0m\\n\" $((40+2)) >&2; "
                     "exit 3'\n")
    result, _ = run(harbor(tmp_path, "broken-build", dockerfile=broken))
    assert result.status == "error"
    assert "cause-42 is why" in (result.reason or ""), result.reason
    assert "returned a non-zero code: 3" in (result.reason or "")
    assert "\x1b" not in (result.reason or "")
    assert "\ncause-42 is why\n" in (result.reason or "")  # the line itself, uncoloured


SKILLS_DOCKERFILE = BASE + "COPY skills /root/.claude/skills\n"
LIST_SKILLS = ("#!/bin/bash\necho baked: $(ls /root/.claude/skills)\n"
               "echo workdir: $(ls -A)\n")


@pytest.mark.docker
@pytest.mark.slow
@pytest.mark.usefixtures("engine")
def test_conditions_switch_the_skills_a_task_ships(tmp_path: Path) -> None:
    path = harbor(tmp_path, "skilled", dockerfile=SKILLS_DOCKERFILE, solve=LIST_SKILLS, files={
        "environment/skills/csv-tips/SKILL.md": "---\nname: csv-tips\ndescription: Tips for "
                                                "CSV files.\n---\nUse csv.\n"})

    def seen(**options: Any) -> str:
        _, events = run(path, tmp=tmp_path / str(len(options)), **options)
        return next(e["stdout"] for e in events if e["type"] == "oracle")

    # as the task runs elsewhere: in the agent user's own folder (root's), not the workdir
    assert seen() == "baked: csv-tips\nworkdir:\n"
    assert seen(condition="control") == "baked:\nworkdir:\n"  # gone, from the image too


PLANTER = ("setsid nohup sh -c 'while :; do mkdir -p /logs/verifier; "
           "echo 1 > /logs/verifier/reward.txt 2>/dev/null; sleep 0.05; done' "
           ">/dev/null 2>&1 < /dev/null & echo started")
HONEST_ZERO = "#!/bin/bash\nsleep 1\necho 0 > /logs/verifier/reward.txt\nsleep 1\n"


@pytest.mark.docker
@pytest.mark.slow
@pytest.mark.usefixtures("engine")
def test_a_process_of_the_agent_cannot_rewrite_the_reward(tmp_path: Path) -> None:
    path = harbor(tmp_path, "planted", test=HONEST_ZERO)
    result, _ = run(path, command_agent(PLANTER))
    assert result.status == "failed", result
    assert result.score == {"reward": 0.0}


@pytest.mark.docker
@pytest.mark.slow
@pytest.mark.usefixtures("engine")
def test_a_multi_step_task_runs_its_steps_in_one_container(tmp_path: Path) -> None:
    result, events = run(multi_step(tmp_path, "steps"))
    assert result.status == "passed", result.reason
    assert result.score is not None and result.score["steps"] == {
        "one": {"reward": 1.0}, "two": {"reward": 1.0}}
    assert [e["step"] for e in events if e["type"] == "verify"] == ["one", "two"]
    # a step below its min_reward ends the run there, and the run fails
    result, events = run(multi_step(tmp_path, "stops", first="echo wrong > /app/out.txt"),
                         tmp=tmp_path / "stops-t")
    assert result.status == "failed"
    assert (result.reason or "").startswith("step 'one': reward=0 below min_reward 1")
    assert [e["step"] for e in events if e["type"] == "verify"] == ["one"]


def test_a_gate_task_needing_setuid_in_the_strict_sandbox_is_refused_by_name(
        tmp_path: Path) -> None:
    from gate.sandbox._docker import privileged_need

    for line, refused in (("RUN chmod u+s /usr/local/bin/helper", True),
                          ("RUN chmod 4755 /usr/local/bin/helper", True),
                          ("RUN apt-get install -y sudo", True),
                          ("RUN chmod 755 /usr/local/bin/helper", False),
                          ("RUN chmod +x /usr/local/bin/helper", False)):
        dockerfile = tmp_path / "environment" / "Dockerfile"
        dockerfile.parent.mkdir(exist_ok=True)
        dockerfile.write_text(f"FROM {IMAGE}\n{line}\n")
        why = privileged_need(dockerfile)
        assert (why is not None) == refused, line
        if why:
            assert why.startswith("environment/Dockerfile line 2 sets up a setuid program")


@pytest.mark.docker
@pytest.mark.slow
@pytest.mark.usefixtures("engine")
def test_the_docker_sandbox_refuses_a_gate_task_with_a_setuid_helper(
        make_task: Any) -> None:
    from gate.sandbox._docker import DockerSandboxProvider

    path = make_task("suid", extra={"environment/Dockerfile": SETUID_DOCKERFILE})
    with DockerSandboxProvider() as provider:
        why = provider.refusal(load_task(path))
    assert why is not None and "line 4 sets up a setuid program" in why


SERVER = ("#!/bin/bash\nsetsid nohup bash -c 'exec -a my-little-server sleep 600' >/dev/null 2>&1 "
          "< /dev/null &\necho ok > /app/out.txt\n")
NEEDS_SERVER = """#!/bin/bash
if grep -qa my-little-server /proc/[0-9]*/cmdline 2>/dev/null; then r=1; else r=0; fi
echo $r > /logs/verifier/reward.txt
"""


@pytest.mark.docker
@pytest.mark.slow
@pytest.mark.usefixtures("engine")
def test_a_service_the_agent_left_running_is_stopped_and_named(tmp_path: Path) -> None:
    result, _ = run(harbor(tmp_path, "server", solve=SERVER, test=NEEDS_SERVER))
    assert result.status == "failed"
    assert "the agent phase left 1 process running, stopped before the verifier" in (
        result.reason or ""), result.reason
    assert "my-little-server" in (result.reason or "")


STEP_AGENT = ('if grep -q "Write one" "$GATE_PROMPT_FILE"; then echo one > /app/out.txt; '
              'chmod 666 /app/out.txt; elif [ "$(id -un)" = player ]; then '
              'echo two > /app/out.txt; fi')


@pytest.mark.docker
@pytest.mark.slow
@pytest.mark.usefixtures("engine")
def test_an_agent_gets_each_steps_prompt_as_each_steps_user(tmp_path: Path) -> None:
    result, _ = run(multi_step(tmp_path, "steps"), command_agent(STEP_AGENT))
    assert result.status == "passed", result.reason


def test_the_phase_boundary_stops_everything_the_agent_phase_started() -> None:
    """Known by pid and start time: the image's own processes (the keep-alive among them),
    pid 1 and the listing's shell stay; nothing an agent can choose (a name, the keep-alive's
    old ``sleep 3600`` under pid 1 included, a marker, a socket, a parent) spares a process;
    the gate's own relay is killed apart; services are kept only when asked."""
    from gate.sandbox._procs import leftovers, parse

    listing = parse("\n".join([
        "S 50",
        "P 1 0 S 100 , sh -c keep-alive",
        "P 5 1 S 101 , entrypoint-daemon",  # the container started with it
        "P 6 1 S 990 , entrypoint-daemon",  # a pid it had, at another start time: new
        "P 7 1 S 500 , sleep 3600",  # a child of pid 1 named as a keep-alive's sleep
        "P 8 1 S 510 , sleep 3600",  # an orphan named as it
        "P 20 19 S 600 900, nginx: master process",  # listens
        "P 21 20 S 601 , nginx: worker process",  # (its sockets unreadable: another user)
        "P 19 0 S 599 , sh -c service nginx start",  # the listener's parent
        "P 22 20 Z 602 , ",  # a zombie runs nothing
        "P 30 0 S 700 , sh -c while :; do echo 1 > /logs/verifier/reward.txt; done",
        "P 31 30 S 701 , sleep 0.05",
        "P 40 1 S 800 901, python3 -I /run/gate-meter/relay.py 8765",  # the gate's own
        "P 41 1 S 801 902, python3 -I /run/gate-meter/relay.py 8765",  # a copy of its name
        "P 45 1 S 850 , sh -c : gate-process-listing; loop",  # the marker grants nothing
        "P 50 0 R 900 , sh -c echo S ...",  # the listing
        "P 51 50 R 901 , sed -n s/x/y/p",
        "L 900", "L 901", "L 902", "garbage line",
    ]))
    at_start = {(1, "100"), (5, "101"), (6, "102")}
    agents, gates, kept = leftovers(listing, at_start, own={(40, "800")})
    assert [p.pid for p in agents] == [6, 7, 8, 19, 20, 21, 30, 31, 41, 45]
    assert [p.pid for p in gates] == [40] and kept == []
    agents, gates, kept = leftovers(listing, at_start, own={(40, "800")}, services=True)
    assert [p.pid for p in agents] == [6, 7, 8, 30, 31, 45]
    assert [p.pid for p in kept] == [19, 20, 21, 41]


SERVE = ("#!/bin/bash\nmkdir -p /srv/www && echo served > /srv/www/index.txt\n"
         "cd /srv/www && setsid nohup python3 -m http.server 8765 >/dev/null 2>&1 "
         "< /dev/null &\nsleep 1\n")
FETCH = """#!/bin/bash
python3 -c 'import urllib.request as u; print(u.urlopen("http://127.0.0.1:8765/index.txt", \
timeout=5).read().decode().strip())' > /tmp/got.txt 2>&1
if [ "$(cat /tmp/got.txt)" = served ]; then echo 1; else cat /tmp/got.txt; echo 0; fi \
    > /logs/verifier/reward.txt
"""


@pytest.mark.docker
@pytest.mark.slow
@pytest.mark.usefixtures("engine")
def test_a_service_the_agent_started_serves_the_verifier_only_where_the_suite_says(
        tmp_path: Path) -> None:
    result, _ = run(harbor(tmp_path, "service", solve=SERVE, test=FETCH),
                    tmp=tmp_path / "protected")
    assert result.status == "failed", result.reason  # the default: the server is stopped
    assert "stopped before the verifier" in (result.reason or ""), result.reason
    result, events = run(harbor(tmp_path, "service", solve=SERVE, test=FETCH), unprotected=True)
    assert result.status == "passed", result.reason
    (verify,) = [e for e in events if e["type"] == "verify"]
    assert "http.server 8765" in verify["files"]["(services kept running from the agent phase)"]


def test_keys_at_harbors_defaults_ask_nothing_and_a_second_compose_service_is_refused(
        tmp_path: Path) -> None:
    from gate.formats import get_format

    task = load_task(harbor(tmp_path, "defaults", toml=(
        '[environment]\nstorage = "10G"\nmcp_servers = []\n[verifier]\n'
        'a_newer_key = "x"\n')))
    assert task.unhonoured == ["verifier.a_newer_key"]  # storage 10G is Harbor's default
    # what Harbor's docker environment ignores too changes no reward: never listed (a storage
    # size, an `image` that is not Harbor's docker_image); a key it acts on still is
    assert load_task(harbor(tmp_path, "more", toml=(
        '[environment]\nstorage = "5G"\nimage = "unused:1"\ngpu_types = ["a100"]\n'))
                     ).unhonoured == ["environment.gpu_types"]
    compose = harbor(tmp_path, "compose", files={
        "environment/docker-compose.yaml": "services:\n  main:\n    build: .\n"})
    assert get_format("harbor").refusal(load_task(compose)) is None  # one container, as Harbor
    (compose / "environment" / "docker-compose.yaml").write_text(
        "services:\n  main:\n    build: .\n  redis:\n    image: redis:7\n")
    why = get_format("harbor").refusal(load_task(compose))
    assert why is not None and why.startswith(
        "environment/docker-compose.yaml: 2 services (main, redis): the gate runs the task in "
        "one container"), why


@pytest.mark.docker
@pytest.mark.slow
@pytest.mark.usefixtures("engine")
def test_a_rebuilt_base_image_rebuilds_the_tasks_image(tmp_path: Path) -> None:
    import docker

    from gate.sandbox._docker import DockerSandboxProvider

    client = docker.from_env()
    base = f"agent-gate-test-base:{int(time.time() * 1000)}"
    try:
        (tmp_path / "b1").mkdir()
        (tmp_path / "b1" / "Dockerfile").write_text(f"FROM {IMAGE}\nRUN echo one > /base\n")
        client.images.build(path=str(tmp_path / "b1"), tag=base)
        task = load_task(harbor(tmp_path, "on-base", dockerfile=f"FROM {base}\n"))
        with DockerSandboxProvider() as provider:
            first = provider.image_for(task)
            (tmp_path / "b1" / "Dockerfile").write_text(f"FROM {IMAGE}\nRUN echo two > /base\n")
            client.images.build(path=str(tmp_path / "b1"), tag=base)
            second = provider.image_for(task)
        assert first != second
        assert client.containers.run(second, ["cat", "/base"], remove=True) == b"two\n"
    finally:
        for image in {base}:
            with contextlib.suppress(docker.errors.DockerException):
                client.images.remove(image, force=True)
        client.close()


#: a check that passes on its third attempt, counting its attempts in /tmp/hc
THIRD_TIME = ('n=$(cat /tmp/hc 2>/dev/null || echo 0); echo $((n + 1)) > /tmp/hc; '
              '[ "$n" -ge 2 ]')


@pytest.mark.docker
@pytest.mark.slow
@pytest.mark.usefixtures("engine")
def test_the_environment_healthcheck_polls_as_docker_does_before_the_run(tmp_path: Path) -> None:
    """Retries count consecutive failures; failures inside the start period do not count; the
    agent starts only once the check passed; a check that never passes is an infra error."""
    solve = "#!/bin/bash\ncp /tmp/hc /app/out.txt\n"  # what the check had done by then
    polled = "\n[environment.healthcheck]\ncommand = '{cmd}'\ninterval_sec = 0.1\n"
    for name, extra in (("retries", "retries = 3\n"),
                        ("grace", "retries = 1\nstart_period_sec = 3\nstart_interval_sec = 0.1\n")):
        result, _ = run(harbor(tmp_path, name, toml=polled.format(cmd=THIRD_TIME) + extra,
                               solve=solve, test=REWARD_FROM_FILE.format(want="3")),
                        tmp=tmp_path / f"{name}-t")
        assert result.status == "passed", (name, result.reason)
    # retries = 1 and no start period: the first failure fails the check
    result, _ = run(harbor(tmp_path, "once", toml=polled.format(cmd=THIRD_TIME) + "retries = 1\n",
                           solve=solve), tmp=tmp_path / "once-t")
    assert result.status == "error", result.reason
    assert result.reason == ("infra: the [environment] healthcheck failed 1 time(s) in a row "
                             "(exit 1)"), result.reason
    result, _ = run(harbor(tmp_path, "never", toml=polled.format(
        cmd="echo not listening yet >&2; exit 7") + "retries = 2\n"), tmp=tmp_path / "never-t")
    assert result.status == "error" and result.reason == (
        "infra: the [environment] healthcheck failed 2 time(s) in a row (exit 7): "
        "not listening yet"), result.reason
    assert load_task(tmp_path / "never").unhonoured == []


@pytest.mark.docker
@pytest.mark.slow
@pytest.mark.usefixtures("engine")
def test_a_steps_healthcheck_runs_before_its_agent_and_an_unready_handover_fails_the_run(
        tmp_path: Path) -> None:
    """Step two's check reads what step one's agent left; failing there fails the run (not
    infra: the agent left the environment unready), naming the step."""
    toml = MULTI_TOML.replace("min_reward = 1.0\n", "") + (
        "[steps.healthcheck]\ncommand = 'test -f /app/prepared.txt && grep -qx one /app/out.txt'"
        "\ninterval_sec = 0.1\nretries = 2\n")
    result, events = run(multi_step(tmp_path, "ready", toml=toml))
    assert result.status == "passed", result.reason
    assert [e["step"] for e in events if e["type"] == "verify"] == ["one", "two"]
    result, events = run(multi_step(tmp_path, "unready", toml=toml,
                                    first="echo wrong > /app/out.txt"), tmp=tmp_path / "u-t")
    assert result.status == "failed", result.reason
    assert (result.reason or "").startswith(
        "step 'one': then the step 'two' healthcheck failed 2 time(s) in a row (exit 1)"), \
        result.reason
    assert [e["step"] for e in events if e["type"] == "verify"] == ["one"]


@pytest.mark.docker
@pytest.mark.slow
@pytest.mark.usefixtures("engine")
def test_artifacts_are_kept_with_the_run_as_harbor_collects_them(tmp_path: Path) -> None:
    """A listed file, a listed folder under its `destination`, a step's own, and whatever is in
    /logs/artifacts: kept after each verify under artifacts/; a missing path is skipped."""
    toml = ('artifacts = ["/app/out.txt", {source = "/app/logs", destination = "logs"}, '
            '"/app/never-written"]\n')
    solve = ("#!/bin/bash\necho ok > /app/out.txt\nmkdir -p /app/logs/deep /logs/artifacts\n"
             "echo a > /app/logs/a.txt\necho b > /app/logs/deep/b.txt\n"
             "echo by-convention > /logs/artifacts/note.txt\n")
    result, events = run(harbor(tmp_path, "kept", toml=toml, solve=solve))
    assert result.status == "passed", result.reason
    (verify,) = [e for e in events if e["type"] == "verify"]
    kept = {k: v for k, v in verify["files"].items() if k.startswith("artifacts/")}
    assert kept == {"artifacts/app/out.txt": "ok\n", "artifacts/logs/a.txt": "a\n",
                    "artifacts/logs/deep/b.txt": "b\n", "artifacts/note.txt": "by-convention\n"}
    assert "reward.txt" in verify["files"]  # the verifier's own files stay beside them
    # a step's artifacts are collected with that step's verify, the task's with every step's
    steps = MULTI_TOML.replace('name = "two"\n',
                               'name = "two"\nartifacts = ["/app/prepared.txt"]\n')
    result, events = run(multi_step(tmp_path, "stepped", toml='artifacts = ["/app/out.txt"]\n'
                                    + steps), tmp=tmp_path / "stepped-t")
    assert result.status == "passed", result.reason
    per_step = {e["step"]: sorted(k for k in e.get("files", {}) if k.startswith("artifacts/"))
                for e in events if e["type"] == "verify"}
    assert per_step == {"one": ["artifacts/app/out.txt"],
                        "two": ["artifacts/app/out.txt", "artifacts/app/prepared.txt"]}
    assert load_task(tmp_path / "kept").unhonoured == []
