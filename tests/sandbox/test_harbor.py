"""Harbor-format tasks (instruction.md, task.toml, environment/, solution/, tests/) unchanged.

The loading tests need nothing; the runs need a Docker engine and the offline base image, as in
tests/sandbox/test_docker.py (they skip with the reason without one, and fail under
``GATE_REQUIRE_DOCKER=1``).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gate.core.tasks import load_suite, load_task
from gate.errors import BadInput
from gate.formats._harbor import harbor_of
from gate.sandbox import LocalSandboxProvider
from tests.helpers.docker import IMAGE, ours
from tests.helpers.harbor import DOCKERFILE, harbor_task
from tests.helpers.process import gate

# ----- loading: no engine needed --------------------------------------------------------------

def test_a_harbor_task_loads_with_harbors_semantics(tmp_path: Path) -> None:
    task = load_task(harbor_task(tmp_path, "count-lines"))
    assert task.layout == "harbor"
    assert task.prompt.startswith("Write the number of lines")
    assert task.verify_timeout() == 60.0 and task.task_timeout() == 60.0
    assert task.difficulty == "easy" and task.meta.category == "files"
    assert task.meta.tags == ["demo"]
    assert task.solution_script == task.path / "solution" / "solve.sh"
    assert task.verify_script == task.path / "tests" / "test.sh"
    assert task.setup_script is None and task.starting_dir is None
    assert task.build_timeout == 300.0
    assert harbor_of(task).agent_network == "public"  # Harbor's default
    # a storage size is not listed: Harbor's docker environment does not act on it either
    assert task.unhonoured == []
    # and it never runs on the host
    assert "Harbor-format task" in (LocalSandboxProvider().refusal(task) or "")


def test_harbor_network_policy_per_phase(tmp_path: Path) -> None:
    legacy = load_task(harbor_task(tmp_path, "legacy", toml="[environment]\n"
                                   "allow_internet = false\n[verifier]\nnetwork_mode = "
                                   '"public"\n'))
    assert (harbor_of(legacy).agent_network, harbor_of(legacy).verifier_network) == (
        "no-network", "public")
    agent_only = load_task(harbor_task(tmp_path, "agent-only", toml='[environment]\n'
                                       'network_mode = "public"\n[agent]\n'
                                       'network_mode = "no-network"\n'))
    assert (harbor_of(agent_only).agent_network, harbor_of(agent_only).verifier_network) == (
        "no-network", "public")


@pytest.mark.parametrize(("toml", "refused"), [
    ('[agent]\nallowed_hosts = ["pypi.org"]\n', "'allowlist'"),
    ("[environment]\ngpus = 1\n", "gpus = 1"),
    ('[verifier]\nenv = { KEY = "${ANTHROPIC_API_KEY}" }\n', "host variables"),
    ('[verifier]\nenvironment_mode = "separate"\n', "a verifier sandbox of its own"),
    ('[verifier.environment]\ndocker_image = "v:1"\n', "a verifier sandbox of its own"),
])
def test_what_the_gate_cannot_honour_safely_is_refused_not_widened(
        tmp_path: Path, toml: str, refused: str) -> None:
    task = load_task(harbor_task(tmp_path, "t", toml=toml))
    why = harbor_of(task).refusal()
    assert why is not None and refused in why


def test_a_shared_verifier_is_harbors_default_and_a_steps_separate_one_is_refused(
        tmp_path: Path) -> None:
    shared = load_task(harbor_task(tmp_path, "shared", toml='[verifier]\nenvironment_mode = '
                                   '"shared"\n'))
    assert harbor_of(shared).refusal() is None
    assert shared.unhonoured == []
    from gate.formats._harbor_schema import parse_harbor_toml

    step = parse_harbor_toml({"steps": [{"name": "a", "verifier": {
        "environment_mode": "separate"}}]}, "t: task.toml")
    assert (step.refusal() or "").startswith("task.toml: [steps.a.verifier] asks for a "
                                             "verifier sandbox of its own")


@pytest.mark.parametrize(("toml", "field"), [
    ("[environment]\ncpus = -1\n", "environment.cpus"),
    ('[verifier]\ntimeout_sec = "soon"\n', "verifier.timeout_sec"),
    ('[environment]\nnetwork_mode = "sometimes"\n', "environment.network_mode"),
    ('[environment]\nnetwork_mode = "public"\nallowed_hosts = ["x.org"]\n', "allowed_hosts"),
    ("[environment.healthcheck]\nretries = 3\n", r"environment\.healthcheck\.command"),
    ('[environment.healthcheck]\ncommand = "true"\nretries = 0\n',
     r"environment\.healthcheck\.retries"),
])
def test_a_bad_harbor_value_names_the_file_and_field(tmp_path: Path, toml: str,
                                                     field: str) -> None:
    with pytest.raises(BadInput, match=rf"^t: task\.toml: .*{field}"):
        load_task(harbor_task(tmp_path, "t", toml=toml))


def test_a_harbor_task_without_verifier_or_environment_is_a_problem(tmp_path: Path) -> None:
    harbor_task(tmp_path, "no-tests", test=None)
    harbor_task(tmp_path, "no-env", dockerfile=None)
    harbor_task(tmp_path, "named-image", dockerfile=None,
                toml=f'[environment]\ndocker_image = "{IMAGE}"\n')
    suite = load_suite(tmp_path)
    assert [t.id for t in suite.tasks] == ["named-image"]
    assert suite.tasks[0].image == IMAGE
    reasons = {p.name: p.reason for p in suite.problems}
    assert "missing tests/test.sh" in reasons["no-tests"]
    assert "environment/Dockerfile or [environment] docker_image" in reasons["no-env"]


# ----- in containers ----------------------------------------------------------------------

NET_TOML = """[environment]
allow_internet = false
[verifier]
network_mode = "public"
"""
NET_SOLVE = "#!/bin/bash\ngrep -c eth0 /proc/net/dev > /app/agent-net.txt\nid -u > /app/uid\n"
NET_TEST = """#!/bin/bash
r=1
[ "$(cat /app/agent-net.txt)" = 0 ] || { echo "the agent had a network"; r=0; }
grep -q eth0 /proc/net/dev || { echo "the verifier has no network"; r=0; }
[ "$(id -u)" = 0 ] || { echo "the verifier is not the image's root user"; r=0; }
[ -f /app/data.txt ] || { echo "the image's files are gone"; r=0; }
echo $r > /logs/verifier/reward.txt
"""
PARTIAL_TEST = """#!/bin/bash
echo '{"reward": 0.5, "tests_passed": 1, "tests_total": 2}' > /logs/verifier/reward.json
"""
SLOW_TOML = "[agent]\ntimeout_sec = 3\n"
SLOW_SOLVE = "#!/bin/bash\nsetsid sleep 1001 < /dev/null > /dev/null 2>&1 &\nsleep 1002\n"
SLOW_TEST = """#!/bin/bash
left=$(cat /proc/[0-9]*/cmdline 2>/dev/null | tr '\\0' ' ' | grep -c 'sleep 100[12]')
echo "left: $left"
[ "$left" = 0 ] && echo 1 > /logs/verifier/reward.txt
"""


@pytest.mark.docker
@pytest.mark.slow
@pytest.mark.usefixtures("engine")
def test_harbor_tasks_run_unchanged_in_docker_judged_by_their_reward(tmp_path: Path) -> None:
    suite = tmp_path / "suite"
    harbor_task(suite, "count-lines")
    harbor_task(suite, "network-phases", toml=NET_TOML, solve=NET_SOLVE, test=NET_TEST)
    harbor_task(suite, "partial", test=PARTIAL_TEST)
    harbor_task(suite, "slow-agent", toml=SLOW_TOML, solve=SLOW_SOLVE, test=SLOW_TEST)
    out = tmp_path / "r.json"
    p = gate("run", "--tasks", suite, "--agent", "oracle", "-k", "1", "-j", "2", "-o", out)
    assert p.returncode == 0, p.stderr
    assert "does not honour" not in p.stderr  # nothing that changes a reward is left out
    runs = {r["task"]: r for r in json.loads(out.read_text())["runs"]}
    # the oracle, in the image's WORKDIR with the image's files; the reward file decides
    assert runs["count-lines"]["status"] == "passed", runs["count-lines"]
    assert runs["count-lines"]["score"] == {"reward": 1.0}
    # no network for the agent, the public network for the verifier (its own override)
    assert runs["network-phases"]["status"] == "passed", runs["network-phases"]
    # a fractional reward fails the task and is recorded as its score
    assert runs["partial"]["status"] == "failed"
    assert runs["partial"]["reason"] == "reward 0.5 (the task passes at 1)"
    assert runs["partial"]["score"]["tests_passed"] == 1
    # the agent's timeout kills what it started, setsid daemon included; verify still decides
    assert runs["slow-agent"]["status"] == "passed", runs["slow-agent"]
    events = [json.loads(ln) for ln in
              Path(runs["slow-agent"]["transcript"]).read_text().splitlines()]
    assert [e["failure"] for e in events if e["type"] == "final"] == ["timeout: agent"], events
    assert ours() == []


PLANT_AGENT = """#!/bin/bash
# a dishonest agent: plants a passing reward, looks for the tests
mkdir -p /logs/verifier && echo 1 > /logs/verifier/reward.txt
ls /tests > /app/saw-tests.txt 2>&1 || echo "no /tests" > /app/saw-tests.txt
"""
PLANT_TEST = """#!/bin/bash
if [ -f /app/saw-tests.txt ] && ! grep -qx 'no /tests' /app/saw-tests.txt; then
  exit 0  # the agent saw the tests: no reward
fi
[ "$(cat /app/count.txt 2>/dev/null)" = "3" ] && echo 1 > /logs/verifier/reward.txt
true
"""


@pytest.mark.docker
@pytest.mark.slow
@pytest.mark.usefixtures("engine")
def test_an_agent_cannot_plant_a_reward_or_see_the_tests_and_validate_works(tmp_path: Path) -> None:
    suite = tmp_path / "suite"
    harbor_task(suite, "planted", test=PLANT_TEST)
    with (suite / "planted" / "task.toml").open("a") as fh:  # a key Harbor acts on, not the gate
        fh.write('\n[[environment.mcp_servers]]\nname = "notes"\nurl = "http://notes:8000/mcp"\n')
    (suite / "planted" / "environment" / "agent.sh").write_text(PLANT_AGENT)
    cfg = tmp_path / "gate.toml"
    cfg.write_text(f'[agent]\nkind = "command"\ncommand = "bash /opt/agent.sh"\n'
                   f'[suite]\ntasks = "{suite}"\n')
    dockerfile = suite / "planted" / "environment" / "Dockerfile"
    dockerfile.write_text(DOCKERFILE + "COPY agent.sh /opt/agent.sh\n")
    out = tmp_path / "r.json"
    p = gate("run", "--config", cfg, "-k", "1", "-o", out, "--sim")
    assert p.returncode == 0, p.stderr
    (run,) = json.loads(out.read_text())["runs"]
    assert run["status"] == "failed", run
    assert run["reason"].startswith("the verifier wrote no reward (no /logs/verifier/reward.txt")
    # validate: fails untouched, passes with the oracle
    p = gate("validate", "--tasks", suite)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "1 sound, 0 broken" in p.stdout
    assert "planted: task.toml keys the gate does not honour" in p.stdout
