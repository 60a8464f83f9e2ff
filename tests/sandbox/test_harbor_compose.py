"""A Harbor task's ``environment/docker-compose.yaml`` through ``gate run`` on a real container.

SkillsBench overrides Harbor's one service ``main`` (variables, resource limits, the log
folders): Harbor runs that as one container, and so does the gate (it was refused as
"multi-container"). A second service, or a key one container cannot honour, is refused with
the true reason; a ``${VAR}`` from the host passes only when it survives the scrub every task
environment gets, and each one withheld is named. Needs a Docker engine and the offline base
image (skipped with the reason without one; failed under ``GATE_REQUIRE_DOCKER=1``).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers.harbor import harbor_task
from tests.helpers.process import gate, user_env

# SkillsBench's shape: Harbor's variables for the build, the limits and the log folders
COMPOSE = """services:
  main:
    build:
      context: ${CONTEXT_DIR}
    image: ${MAIN_IMAGE_NAME}
    command: ["sh", "-c", "sleep infinity"]
    environment:
      - GREETING=hello compose
      - FROM_HOST=${COMPOSE_TEST_GREETING}
      - DEFAULTED=${COMPOSE_TEST_UNSET:-fallback}
      - COMPOSE_TEST_GREETING
    volumes:
      - ${HOST_VERIFIER_LOGS_PATH}:${ENV_VERIFIER_LOGS_PATH}
      - ${HOST_ARTIFACTS_PATH}:/logs/artifacts
    deploy:
      resources:
        limits:
          cpus: ${CPUS}
          memory: 700M
"""
SOLVE = "#!/bin/bash\nwc -l < data.txt > count.txt\necho kept > /logs/artifacts/note.txt\n"
# the verifier checks what the compose file set: the variables, the memory limit (cgroup v2
# or v1), the artifacts folder the oracle wrote into
TEST = """#!/bin/bash
cg=/sys/fs/cgroup
limit=$(cat $cg/memory.max 2>/dev/null || cat $cg/memory/memory.limit_in_bytes)
echo "GREETING=$GREETING FROM_HOST=$FROM_HOST DEFAULTED=$DEFAULTED" \
  "PASS=$COMPOSE_TEST_GREETING limit=$limit" > /logs/verifier/seen.txt
if [ "$GREETING" = "hello compose" ] && [ "$FROM_HOST" = "from the host" ] \
   && [ "$DEFAULTED" = fallback ] && [ "$COMPOSE_TEST_GREETING" = "from the host" ] \
   && [ "$limit" = $((700 * 1048576)) ] && [ "$(cat /logs/artifacts/note.txt)" = kept ] \
   && [ "$(cat /app/count.txt)" = 3 ]; then r=1; else r=0; fi
echo "$r" > /logs/verifier/reward.txt
"""


def _run(tmp_path: Path, compose: str, **env: str) -> dict:
    suite = tmp_path / "suite"
    task = harbor_task(suite, "compose", solve=SOLVE, test=TEST)
    (task / "environment" / "docker-compose.yaml").write_text(compose)
    out = tmp_path / "r.json"
    p = gate("run", "--tasks", suite, "--agent", "oracle", "-k", "1", "-o", out,
             base=user_env(**env))
    if not out.exists():  # refused: the suite's one task cannot run, exit 2 with the reason
        assert p.returncode == 2 and "no loadable task" in p.stderr, p.stdout + p.stderr
        return {"status": "refused", "reason": p.stderr}
    (run,) = json.loads(out.read_text())["runs"]
    return run


@pytest.mark.docker
@pytest.mark.slow
@pytest.mark.usefixtures("engine")
def test_a_one_service_override_of_main_runs_as_one_container(tmp_path: Path) -> None:
    run = _run(tmp_path, COMPOSE, COMPOSE_TEST_GREETING="from the host")
    kept = (tmp_path / "r.transcripts" / "compose-r0.jsonl").read_text()
    assert run["status"] == "passed", (run.get("reason"), kept[-3000:])
    # what the verifier saw, kept from /logs/verifier; the artifacts folder's file collected
    assert "limit=734003200" in kept and "artifacts/note.txt" in kept


@pytest.mark.docker
@pytest.mark.slow
@pytest.mark.usefixtures("engine")
@pytest.mark.parametrize(("compose", "reason"), [
    (COMPOSE + "  db:\n    image: postgres:16\n",
     "2 services (main, db): the gate runs the task in one container"),
    (COMPOSE.replace("    deploy:", "    ports:\n      - \"8080:80\"\n    deploy:"),
     "services.main.ports does not map onto the gate's one container"),
    (COMPOSE.replace("/logs/artifacts", "/data"),
     "services.main.volumes entry '${HOST_...}/logs/artifacts:/data'"),
])
def test_what_one_container_cannot_be_is_refused_with_the_true_reason(
        tmp_path: Path, compose: str, reason: str) -> None:
    run = _run(tmp_path, compose, COMPOSE_TEST_GREETING="from the host")
    assert run["status"] != "passed"
    assert reason in run["reason"], run["reason"]
    assert "multi-container" not in run["reason"]


@pytest.mark.docker
@pytest.mark.slow
@pytest.mark.usefixtures("engine")
def test_a_host_variable_that_is_a_credential_is_refused_and_named(tmp_path: Path) -> None:
    compose = COMPOSE.replace("      - GREETING=hello compose\n",
                              "      - GREETING=hello compose\n      - DB_URL=${DB_URL}\n"
                              "      - SERVICE_TOKEN\n")
    run = _run(tmp_path, compose, COMPOSE_TEST_GREETING="from the host",
               DB_URL="postgres://u:pw@h/db", SERVICE_TOKEN="t0ken-t0ken-t0ken")
    assert run["status"] != "passed"
    assert "DB_URL (a URL with a password), SERVICE_TOKEN (its name)" in run["reason"], run
    assert "postgres://u:pw@h/db" not in json.dumps(run) and "t0ken-t0ken" not in json.dumps(run)


@pytest.mark.slow
@pytest.mark.parametrize(("compose", "said"), [
    ("services: [main\n", "environment/docker-compose.yaml: not readable as YAML"),
    ("services:\n  main:\n    deploy:\n      resources:\n        limits:\n"
     "          memory: lots\n", "services.main memory 'lots' is not a size"),
])
def test_a_malformed_compose_file_is_exit_2_naming_file_and_field(
        tmp_path: Path, compose: str, said: str) -> None:
    suite = tmp_path / "suite"
    task = harbor_task(suite, "compose")
    (task / "environment" / "docker-compose.yaml").write_text(compose)
    p = gate("run", "--tasks", suite, "--agent", "oracle", "-o", tmp_path / "r.json")
    assert p.returncode == 2 and said in p.stderr and "Traceback" not in p.stderr, p.stderr
    assert len(p.stderr.strip().splitlines()) == 1, p.stderr


REAL = Path(__file__).resolve().parents[1] / "fixtures" / "harbor_compose"


@pytest.mark.parametrize("task, environ, refused", [
    # SkillsBench's usual override: Harbor's own variables, the log folders, the keep-alive
    ("gh-repo-analytics", {}, None),
    # ${NETWORK_MODE:-bridge} is the engine's bridge, as every public phase here; a host
    # variable the gate withholds is refused by name, never passed on
    ("mhc-layer-impl", {}, None),
    ("mhc-layer-impl", {"HF_TOKEN": "hf_" + "x" * 30}, "HF_TOKEN"),
    ("pg-essay-to-audiobook", {"OPENAI_API_KEY": "sk-" + "y" * 40}, "OPENAI_API_KEY"),
    # a mount of a host path is no log folder: the true reason, not "multi-container"
    ("scheduling-email-assistant", {}, "/root/google-auth"),
])
def test_real_skillsbench_overrides_map_or_are_refused_with_the_true_reason(
        task: str, environ: dict[str, str], refused: str | None) -> None:
    from gate.formats._compose import Refused, map_compose, read_compose

    data = read_compose(REAL / f"{task}.yaml")
    if refused is None:
        main = map_compose(data, cpus=1, memory_mb=2048, task_env={}, environ=environ)
        assert main.log_dirs  # Harbor's log folders kept in the one container
        return
    with pytest.raises(Refused) as exc:
        map_compose(data, cpus=1, memory_mb=2048, task_env={}, environ=environ)
    assert refused in str(exc.value) and "multi-container" not in str(exc.value)
    assert "x" * 30 not in str(exc.value) and "y" * 40 not in str(exc.value)  # never a value
