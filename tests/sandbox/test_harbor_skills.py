"""Skills and the oracle on real Harbor tasks, through ``gate run`` / ``gate validate``.

Where a Harbor task's skills go (the agent user's own ``~/.claude/skills``, not the task's
working directory), that no skill is ever dropped silently (a skill whose ``name`` is not its
folder's, a ``SKILL.md`` elsewhere in the image), that ``--condition control`` leaves no skill
where a skill-loading agent looks, and that ``gate validate`` runs a multi-step task's per-step
oracles. Real tasks: tests/fixtures/harbor_real (its README names each source); the runs need
a Docker engine and the stand-in images (``.ci/harbor-images``), and skip without them.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.docker import standins_problem
from tests.helpers.process import gate

REPO = Path(__file__).resolve().parents[2]
SAMPLE = Path(__file__).resolve().parents[1] / "fixtures" / "harbor_real"


@pytest.fixture(scope="module")
def standins() -> None:
    why = standins_problem()
    if why is not None:
        if os.environ.get("GATE_REQUIRE_DOCKER") == "1":
            pytest.fail(why)
        pytest.skip(why)


def _suite(tmp_path: Path, *names: str) -> Path:
    """A suite of copies of the real sample's tasks ``names``, and its gate.toml."""
    tasks = tmp_path / "tasks"
    for name in names:
        shutil.copytree(SAMPLE / name, tasks / name)
    cfg = tmp_path / "gate.toml"
    cfg.write_text(f'[suite]\ntasks = "{tasks}"\nsandbox = "docker"\n')
    return cfg


@pytest.mark.docker
@pytest.mark.slow
@pytest.mark.timeout(900)
@pytest.mark.usefixtures("standins")
def test_validate_runs_each_steps_own_oracle(tmp_path: Path) -> None:
    cfg = _suite(tmp_path, "cookbook-multi-step")
    p = gate("validate", "--config", cfg, cwd=tmp_path, timeout=800)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "no oracle" not in p.stdout, p.stdout
    assert "passes" in p.stdout and "1 sound, 0 broken" in p.stdout, p.stdout
    # a step without its own solution is named, and the oracle is not called broken
    (tmp_path / "tasks" / "cookbook-multi-step" / "steps" / "document" / "solution" /
     "solve.sh").unlink()
    p = gate("validate", "--config", cfg, cwd=tmp_path, timeout=800)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "for step 'document'" in " ".join(p.stdout.split()), p.stdout
    assert "1 sound (1 without an oracle), 0 broken" in p.stdout, p.stdout


#: a verifier that looks where Harbor puts skills, and at the working directory: reward 1 only
#: when the workdir holds nothing of the gate's and the skill is in the agent user's own folder
WHERE_SKILLS_ARE = """#!/bin/bash
echo "workdir: $(ls -A /app | tr '\\n' ' ')"
echo "home: $(ls -A "$HOME/.claude/skills" 2>&1 | tr '\\n' ' ')"
if [ ! -e /app/.claude ] && [ -f "$HOME/.claude/skills/generate-greeting/SKILL.md" ]; then
  echo 1 > /logs/verifier/reward.txt
else
  echo 0 > /logs/verifier/reward.txt
fi
"""


@pytest.mark.docker
@pytest.mark.slow
@pytest.mark.timeout(900)
@pytest.mark.usefixtures("standins")
def test_a_harbor_tasks_skills_are_in_the_agent_users_home_not_its_workdir(
        tmp_path: Path) -> None:
    cfg = _suite(tmp_path, "cookbook-skills")
    (tmp_path / "tasks" / "cookbook-skills" / "tests" / "test.sh").write_text(WHERE_SKILLS_ARE)
    out = tmp_path / "results.json"
    p = gate("run", "--config", cfg, "--agent", "oracle", "-k", "1", "-o", out, cwd=tmp_path,
             timeout=800)
    run = json.loads(out.read_text())["runs"][0]
    verify = [e for e in _events(tmp_path / "results.transcripts") if e["type"] == "verify"]
    assert run["status"] == "passed", (run["reason"], verify, p.stderr[-2000:])
    assert "home: generate-greeting" in verify[0]["output"], verify


def _events(transcripts: Path) -> list[dict[str, Any]]:
    return [json.loads(ln) for f in sorted(transcripts.glob("*.jsonl"))
            for ln in f.read_text().splitlines()]


@pytest.mark.docker
@pytest.mark.slow
@pytest.mark.timeout(900)
@pytest.mark.usefixtures("standins")
def test_the_builtin_agent_is_told_where_a_harbor_tasks_skills_are(tmp_path: Path) -> None:
    from gate.agents._builtin import BuiltinAgent
    from gate.core.cost import price_table
    from gate.core.tasks import load_suite
    from gate.execution.runner import RunOptions, run_one
    from gate.meter import MeterProxy
    from gate.sandbox import SandboxOptions
    from gate.sandbox._docker import DockerSandboxProvider
    from gate.sim import Simulator

    _suite(tmp_path, "cookbook-skills")
    task = load_suite(tmp_path / "tasks").get("cookbook-skills")
    seen: list[dict[str, Any]] = []
    agent = BuiltinAgent(model="claude-sonnet-5-5",
                         system_template=(REPO / "agent" / "system.md").read_text())
    with Simulator(tasks_dir=tmp_path / "tasks", seed=1) as sim, MeterProxy(
            sim.base_url, "sim-key", price_table(),
            observer=lambda run, body: seen.append(json.loads(body))) as meter, \
            DockerSandboxProvider(SandboxOptions()) as provider:
        res = run_one(task, 0, agent, meter=meter, provider=provider,
                      options=RunOptions(transcripts_dir=tmp_path / "t"))
    assert res.status == "passed", res.reason
    block = seen[0]["system"][-1]["text"]
    assert "<location>/root/.claude/skills/generate-greeting/SKILL.md</location>" in block, \
        block


SKILLS_SAMPLE = Path(__file__).resolve().parents[1] / "fixtures" / "harbor_skills"
MARIO = "skillsbench-mario-skills"
BROKEN = "---\nname: [unclosed\n---\nA skill whose front matter is not YAML.\n"


def _listing(verify_output: str) -> dict[str, list[str]]:
    """The verifier's lines: each skill folder and the skills (with a SKILL.md) it holds."""
    got = {}
    for line in verify_output.splitlines():
        key, sep, rest = line.partition(": ")
        if sep and key.startswith(("/", "vendored")):
            got[key] = rest.split()
    return got


def _mario_run(tmp_path: Path, *args: str) -> tuple[dict[str, Any], dict[str, list[str]]]:
    out = tmp_path / f"results{len(args)}.json"
    p = gate("run", "--config", tmp_path / "gate.toml", "--agent", "oracle", "-k", "1",
             "-o", out, *args, cwd=tmp_path, timeout=800)
    assert out.exists(), p.stdout + p.stderr
    run = json.loads(out.read_text())["runs"][0]
    assert run["status"] == "passed", (run["reason"], p.stderr[-2000:])
    verify = next(e for e in _events(tmp_path / f"results{len(args)}.transcripts")
                  if e["type"] == "verify")
    return run, _listing(verify["output"])


@pytest.mark.docker
@pytest.mark.slow
@pytest.mark.timeout(900)
@pytest.mark.usefixtures("standins")
def test_no_skill_is_dropped_silently_and_control_leaves_none(tmp_path: Path) -> None:
    tasks = tmp_path / "tasks"
    shutil.copytree(SKILLS_SAMPLE / MARIO, tasks / MARIO)
    broken = tasks / MARIO / "environment" / "skills" / "broken" / "SKILL.md"
    broken.parent.mkdir()
    broken.write_text(BROKEN)
    (tmp_path / "gate.toml").write_text(f'[suite]\ntasks = "{tasks}"\nsandbox = "docker"\n')
    shipped = ["broken", "ffmpeg", "image_editing", "object_counter"]

    run, seen = _mario_run(tmp_path)  # as the task runs elsewhere: every skill where it was
    assert seen["/root/.claude/skills"] == shipped, seen
    assert seen["/app/.claude/skills"] == ["workdir-only"] and seen["/opt/skills"] == [
        "image-only"], seen
    notes = " ".join((run["notes"] or "").split())
    # the skill whose name is not its folder's is installed, as its folder, and said so
    assert "skill environment/skills/ffmpeg is named 'ffmpeg-keyframe-extraction'" in notes
    assert "skill environment/skills/broken not honoured (" in notes, notes
    assert "outside the skill folders, left as the image has it (no condition switches it): " \
        "/opt/vendor/tool/SKILL.md" in notes, notes

    run, seen = _mario_run(tmp_path, "--condition", "control")
    for folder in ("/root/.claude/skills", "/app/.claude/skills", "/opt/skills",
                   "/root/.codex/skills", "/root/.opencode/skill", "/root/.agents/skills"):
        assert seen[folder] == [], (folder, seen)
    assert seen["vendored"] == ["SKILL.md"]  # named, not switched
    assert "/opt/vendor/tool/SKILL.md" in (run["notes"] or "")

    p = gate("validate", "--config", tmp_path / "gate.toml", cwd=tmp_path, timeout=800)
    said = " ".join(p.stdout.split())
    assert f"note: {MARIO}: skill environment/skills/broken not honoured" in said, p.stdout
    assert f"note: {MARIO}: skill environment/skills/ffmpeg is named" in said, p.stdout
    assert f"note: {MARIO}: SKILL.md outside the skill folders" in said, p.stdout


@pytest.mark.docker
@pytest.mark.slow
@pytest.mark.timeout(600)
@pytest.mark.usefixtures("standins")
def test_skills_go_to_each_phase_users_own_home(tmp_path: Path) -> None:
    from tests.helpers.docker import IMAGE

    task = tmp_path / "tasks" / "as-a-user"
    files = {
        "instruction.md": "Say where your skills are.\n",
        "task.toml": '[agent]\nuser = "agent"\n',
        "environment/Dockerfile": f"FROM {IMAGE}\nRUN useradd -m agent\nWORKDIR /app\n",
        "environment/skills/csv-tips/SKILL.md": "---\nname: csv-tips\ndescription: Tips for "
                                                "CSV files.\n---\nUse csv.\n",
        "solution/solve.sh": "#!/bin/bash\nstat -c '%U %n' $HOME/.claude/skills/*/SKILL.md "
                             "> /tmp/seen\n",
        "tests/test.sh": "#!/bin/bash\ncat /tmp/seen\nls -A /app\n"
                         "grep -qx 'agent /home/agent/.claude/skills/csv-tips/SKILL.md' /tmp/seen"
                         " && echo 1 > /logs/verifier/reward.txt "
                         "|| echo 0 > /logs/verifier/reward.txt\n"}
    for rel, body in files.items():
        (task / rel).parent.mkdir(parents=True, exist_ok=True)
        (task / rel).write_text(body)
    (tmp_path / "gate.toml").write_text(
        f'[suite]\ntasks = "{tmp_path / "tasks"}"\nsandbox = "docker"\n')
    out = tmp_path / "r.json"
    p = gate("run", "--config", tmp_path / "gate.toml", "--agent", "oracle", "-k", "1", "-o",
             out, cwd=tmp_path, timeout=500)
    run = json.loads(out.read_text())["runs"][0]
    verify = [e for e in _events(tmp_path / "r.transcripts") if e["type"] == "verify"]
    assert run["status"] == "passed", (run["reason"], verify, p.stderr[-2000:])
