"""Skills: the loader, the conditions model, skills into the workspace per run (local and
docker), the builtin agent's progressive disclosure, and the simulator's model of skill use."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from gate.agents import Agent, AgentOutcome, RunContext
from gate.agents._builtin import BuiltinAgent
from gate.core.config import load_config
from gate.core.cost import price_table
from gate.core.skills import (
    STANDARD_CONDITIONS,
    Skill,
    load_skill,
    load_skills,
    skills_for,
    standard_conditions,
)
from gate.core.tasks import Task, load_suite, load_task
from gate.errors import BadInput
from gate.execution.runner import RunOptions, run_one
from gate.meter import MeterProxy
from gate.sandbox import LocalSandboxProvider, Sandbox, SandboxOptions, make_provider
from gate.sim import Simulator
from gate.sim._model import NO_EFFECT_MARKER, SimModel, decide_outcome
from tests.helpers import ROOT as REPO
from tests.helpers.docker import IMAGE
from tests.helpers.suites import BASH_TOOL, READ_TOOL, write_task

BUNDLED_SKILLS = REPO / "skills"
RATE_TASK = "find-api-rate-limit"


def write_skill(root: Path, name: str, *, front: str | None = None, body: str = "# Use it\n",
                files: dict[str, str] | None = None) -> Path:
    d = root / name
    d.mkdir(parents=True)
    if front is None:
        front = f"name: {name}\ndescription: Use {name} when the task needs it.\n"
    (d / "SKILL.md").write_text(f"---\n{front}---\n\n{body}")
    for rel, text in (files or {}).items():
        (d / rel).parent.mkdir(parents=True, exist_ok=True)
        (d / rel).write_text(text)
    return d


# ----- the loader -------------------------------------------------------------------------


@pytest.mark.parametrize(("front", "field"), [
    ("description: no name here\n", "name: missing"),
    ("name: demo\n", "description: missing"),
    ("name: Demo_Skill\ndescription: d\n", "name: 'Demo_Skill' is not a valid skill name"),
    ("name: other\ndescription: d\n", "name: 'other' is not the folder's name"),
    ("name: demo\ndescription: ''\n", "description: must be non-empty"),
    ("name: demo\ndescription: use <b>me</b>\n", "description: must not contain XML tags"),
    ("name: demo\ndescription: [unclosed\n", "the front matter is not valid YAML"),
    ("- a list\n", "the front matter must be a YAML mapping"),
])
def test_loader_errors_name_the_file_and_the_field(tmp_path: Path, front: str,
                                                   field: str) -> None:
    folder = write_skill(tmp_path / "skills", "demo", front=front)
    with pytest.raises(BadInput) as err:
        load_skill(folder)
    msg = str(err.value)
    assert msg.startswith(f"{folder / 'SKILL.md'}: "), msg
    assert field in msg, msg
    assert "\n" not in msg


def test_loader_refuses_missing_front_matter_symlinks_and_a_folder_without_skill_md(
        tmp_path: Path) -> None:
    root = tmp_path / "skills"
    d = write_skill(root, "demo")
    (d / "SKILL.md").write_text("# no front matter\n")
    with pytest.raises(BadInput, match=r"SKILL.md: no YAML front matter"):
        load_skills(root)
    (d / "SKILL.md").write_text("---\nname: demo\ndescription: d\n")
    with pytest.raises(BadInput, match="not closed"):
        load_skills(root)
    (d / "SKILL.md").write_text("---\nname: demo\ndescription: d\n---\n")
    (d / "leak").symlink_to("/etc/hostname")
    with pytest.raises(BadInput, match=r"demo/leak: a symlink"):
        load_skills(root)
    (d / "leak").unlink()
    (root / "empty").mkdir()
    with pytest.raises(BadInput, match=r"empty: no SKILL.md"):
        load_skills(root)
    shutil.rmtree(root / "empty")
    (root / "README.md").write_text("not a skill\n")
    (skill,) = load_skills(root)
    assert (skill.name, skill.description) == ("demo", "d")


def test_bundled_skills_load_and_the_digest_follows_every_file(tmp_path: Path) -> None:
    skills = {s.name: s for s in load_skills(BUNDLED_SKILLS)}
    assert set(skills) == {"context-offloading", "git-commit-messages"}
    assert "large" in skills["context-offloading"].description
    copy = tmp_path / "skills"
    shutil.copytree(BUNDLED_SKILLS, copy)
    script = copy / "context-offloading" / "scripts" / "offload.sh"
    before = load_skill(copy / "context-offloading").digest
    assert before == skills["context-offloading"].digest
    script.write_text(script.read_text() + "\n# edited\n")
    assert load_skill(copy / "context-offloading").digest != before


@pytest.mark.slow
def test_a_broken_skill_stops_gate_run_with_exit_2_naming_file_and_field(
        tmp_path: Path) -> None:
    write_task(tmp_path / "tasks", "t")
    write_skill(tmp_path / "skills", "demo", front="name: demo\n")
    (tmp_path / "gate.toml").write_text('[agent]\nskills = "skills"\n[suite]\ntasks = "tasks"\n')
    p = subprocess.run([sys.executable, "-m", "gate", "run", "--sim", "-k", "1", "-o",
                        str(tmp_path / "r.json")], cwd=tmp_path, capture_output=True,
                       text=True, timeout=120)
    assert p.returncode == 2, p.stderr
    lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
    assert any("[agent].skills:" in ln and "demo/SKILL.md: description: missing" in ln
               for ln in lines), p.stderr
    assert "Traceback" not in p.stderr


# ----- conditions --------------------------------------------------------------------------


def _task(root: Path, name: str, metadata: dict[str, Any] | None) -> Task:
    extra = {"metadata.json": json.dumps(metadata)} if metadata is not None else None
    return load_task(write_task(root, name, extra=extra))


def _skills(root: Path, *names: str) -> list[Skill]:
    for n in names:
        write_skill(root, n)
    return load_skills(root)


def test_standard_conditions_follow_each_tasks_metadata(tmp_path: Path) -> None:
    skills = _skills(tmp_path / "skills", "alpha", "beta", "gamma", "delta")
    full = _task(tmp_path / "tasks", "full-task",
                 {"target_skill": "alpha", "irrelevant_skill": "beta"})
    assert standard_conditions(full, skills) == list(STANDARD_CONDITIONS)
    names = {c: [s.name for s in skills_for(full, c, skills) or []]
             for c in STANDARD_CONDITIONS}
    assert names["control"] == []
    assert names["target"] == ["alpha"]
    assert names["negative"] == ["beta"]
    assert names["full"] == ["alpha", "beta", "delta", "gamma"]
    assert names["target_plus_unrelated"] == ["alpha", "beta"]
    plus_one = names["target_plus_one"]
    assert len(plus_one) == 2 and "alpha" in plus_one
    assert not {"alpha", "beta"} >= set(plus_one)  # another skill, not the irrelevant one
    assert skills_for(full, "target_plus_one", list(reversed(skills))) == \
        skills_for(full, "target_plus_one", skills)  # deterministic, whatever the order

    negative_control = _task(tmp_path / "tasks", "neg", {"target_skill": "none",
                                                         "irrelevant_skill": "none"})
    assert standard_conditions(negative_control, skills) == ["control", "full"]
    for c in ("target", "negative", "target_plus_one", "target_plus_unrelated"):
        assert skills_for(negative_control, c, skills) is None
    no_metadata = _task(tmp_path / "tasks", "plain", None)
    assert standard_conditions(no_metadata, skills) == ["control", "full"]
    target_only = _task(tmp_path / "tasks", "target-only", {"target_skill": "gamma"})
    assert standard_conditions(target_only, skills) == ["control", "target", "full",
                                                        "target_plus_one"]


def test_the_bundled_rate_limit_task_gets_its_standard_conditions() -> None:
    skills = load_skills(BUNDLED_SKILLS)
    task = load_suite(REPO / "tasks").get(RATE_TASK)
    assert [s.name for s in skills_for(task, "target", skills) or []] == ["context-offloading"]
    assert [s.name for s in skills_for(task, "negative", skills) or []] == \
        ["git-commit-messages"]
    assert standard_conditions(task, skills) == list(STANDARD_CONDITIONS)


def test_metadata_naming_an_unknown_skill_is_bad_input_naming_file_and_field(
        tmp_path: Path) -> None:
    skills = _skills(tmp_path / "skills", "alpha")
    task = _task(tmp_path / "tasks", "t", {"target_skill": "alpha", "irrelevant_skill": "nope"})
    with pytest.raises(BadInput, match=r"^t: metadata.json: irrelevant_skill: no skill named "
                                       r"'nope' \(skills: alpha\)$"):
        skills_for(task, "control", skills)
    same = _task(tmp_path / "tasks", "u", {"target_skill": "alpha", "irrelevant_skill": "alpha"})
    with pytest.raises(BadInput, match="irrelevant_skill: the same skill as target_skill"):
        skills_for(same, "target", skills)
    with pytest.raises(BadInput, match="unknown condition 'bogus'"):
        skills_for(task, "bogus", skills)


def test_named_conditions_from_gate_toml_are_strict(tmp_path: Path) -> None:
    skills = _skills(tmp_path / "skills", "alpha", "beta")
    task = _task(tmp_path / "tasks", "t", None)
    cfg_path = tmp_path / "gate.toml"
    cfg_path.write_text('[conditions.only-beta]\nskills = ["beta"]\n')
    cfg = load_config(cfg_path)
    assert [s.name for s in skills_for(task, "only-beta", skills, cfg.conditions) or []] == \
        ["beta"]
    cfg_path.write_text('[conditions.ghost]\nskills = ["gamma"]\n')
    with pytest.raises(BadInput, match=r"\[conditions.ghost\].skills: no skill named 'gamma'"):
        skills_for(task, "ghost", skills, load_config(cfg_path).conditions)
    for bad, says in [('[conditions.x]\nskils = ["alpha"]\n', "conditions.x.skils"),
                      ('[conditions.control]\nskills = []\n', "is a standard condition"),
                      ('[conditions.x]\nskills = ["Alpha!"]\n', "is not a skill name"),
                      ('[conditions."a b"]\nskills = []\n', "is not a condition name")]:
        cfg_path.write_text(bad)
        with pytest.raises(BadInput) as err:
            load_config(cfg_path)
        assert str(err.value).startswith(f"{cfg_path}: conditions"), str(err.value)
        assert says in str(err.value), str(err.value)


# ----- skills into the workspace, per run ---------------------------------------------------


class _Lister(Agent):
    """Reports what the workspace holds under .claude/ (and whether the host's skills folder
    is reachable from the sandbox) as its final message."""

    kind = "lister"

    def __init__(self, probe: Path, home: bool = False) -> None:
        self.probe = probe
        self.home = home  # list the agent user's own ~/.claude (a Harbor task's skills)
        self.said: list[str] = []

    def run(self, sandbox: Sandbox, ctx: RunContext) -> AgentOutcome:
        res = sandbox.exec(("test -e .claude && echo WORKDIR-CLAUDE; cd \"$HOME\"; "
                            if self.home else "") +
                           "find .claude -type f 2>/dev/null | sort; "
                           f"test -e {self.probe} && echo HOST-SKILLS-VISIBLE; "
                           "test -x .claude/skills/context-offloading/scripts/offload.sh "
                           "&& echo EXECUTABLE; for d in .claude/skills/*/; do "
                           'touch "$d/e" 2>/dev/null && rm "$d/e" && echo WRITABLE; done',
                           timeout=60)
        self.said.append(res.stdout)
        return AgentOutcome(final_message=res.stdout)


def _run_listing(tmp_path: Path, provider: Any, condition: str) -> list[str]:
    skills = load_skills(BUNDLED_SKILLS)
    task = load_task(write_task(tmp_path / "tasks", f"t-{condition}", verify="true\n",
                                starting={"a.txt": "x\n"},
                                extra={"metadata.json": json.dumps(
                                    {"target_skill": "context-offloading",
                                     "irrelevant_skill": "git-commit-messages"})}))
    picked = skills_for(task, condition, skills)
    assert picked is not None
    res = run_one(task, 0, _Lister(BUNDLED_SKILLS / "context-offloading" / "SKILL.md"),
                  provider=provider, options=RunOptions(condition=condition, skills=picked))
    assert res.status == "passed", res.reason
    final = next(tmp_path.glob(f"ws/gate-t-{condition}-{condition}-r0-*/work/.runner/final.txt"))
    return final.read_text().split()


def _check_conditions(tmp_path: Path, provider: Any) -> list[str]:
    def files(said: list[str]) -> list[str]:
        return [f for f in said if f.startswith(".claude")]

    assert files(_run_listing(tmp_path, provider, "control")) == []
    target = _run_listing(tmp_path, provider, "target")
    assert files(target) == [".claude/skills/context-offloading/SKILL.md",
                             ".claude/skills/context-offloading/scripts/offload.sh"]
    assert "EXECUTABLE" in target and "WRITABLE" in target  # the agent's own, like its files
    negative = _run_listing(tmp_path, provider, "negative")
    assert files(negative) == [".claude/skills/git-commit-messages/SKILL.md"]
    return target


def test_a_control_workspace_has_no_skills_and_a_target_one_only_its_skill_local(
        tmp_path: Path) -> None:
    provider = LocalSandboxProvider(base_dir=tmp_path / "ws", keep=True)
    target = _check_conditions(tmp_path, provider)
    # the local sandbox runs as the gate's own user: it cannot hide the repository's files
    assert "HOST-SKILLS-VISIBLE" in target


@pytest.mark.docker
@pytest.mark.slow
def test_a_control_workspace_has_no_skills_and_a_target_one_only_its_skill_docker(
        engine: None, tmp_path: Path) -> None:
    provider = make_provider("docker", SandboxOptions(keep=True, base_dir=tmp_path / "ws",
                                                      image=IMAGE))
    with provider:
        target = _check_conditions(tmp_path, provider)
    assert "HOST-SKILLS-VISIBLE" not in target  # only the workspace is mounted


# ----- the builtin agent and the simulator --------------------------------------------------


def _suite_copy(tmp_path: Path) -> Path:
    tasks = tmp_path / "tasks"
    shutil.copytree(REPO / "tasks" / RATE_TASK, tasks / RATE_TASK)
    return tasks


@pytest.mark.slow
def test_the_builtin_agent_lists_the_runs_skills_and_reads_skill_md_on_demand(
        tmp_path: Path) -> None:
    tasks = _suite_copy(tmp_path)
    task = load_suite(tasks).get(RATE_TASK)
    skills = load_skills(BUNDLED_SKILLS)
    seen: list[dict[str, Any]] = []
    transcripts: dict[str, list[dict[str, Any]]] = {}
    agent = BuiltinAgent(model="claude-sonnet-5-5",
                         system_template=(REPO / "agent" / "system.md").read_text())
    with Simulator(tasks_dir=tasks, seed=3) as sim, MeterProxy(
            sim.base_url, "sim-key", price_table(),
            observer=lambda run, body: seen.append(json.loads(body))) as meter:
        for condition in ("control", "target", "full"):
            res = run_one(task, 0, agent, meter=meter,
                          provider=LocalSandboxProvider(base_dir=tmp_path / "ws"),
                          options=RunOptions(condition=condition, transcripts_dir=tmp_path /
                                             condition,
                                             skills=skills_for(task, condition, skills) or []))
            assert res.status in ("passed", "failed"), res.reason
            assert res.transcript is not None
            transcripts[condition] = [json.loads(ln) for ln in
                                      Path(res.transcript).read_text().splitlines()]
            systems = [r["system"] for r in seen]
            seen.clear()
            if condition == "control":
                assert all(len(s) == 1 and "<available_skills>" not in s[0]["text"]
                           for s in systems)
                continue
            # the configured prompt, then one stable block listing the skills, cached
            assert all(len(s) == 2 and s[1] == systems[0][1] for s in systems)
            block = systems[0][1]
            assert "cache_control" in block and "cache_control" not in systems[0][0]
            for s in skills_for(task, condition, skills) or []:
                assert f"<name>{s.name}</name>" in block["text"]
                assert s.description in block["text"]
                assert f"<location>.claude/skills/{s.name}/SKILL.md</location>" in block["text"]
            assert ("git-commit-messages" in block["text"]) == (condition == "full")
    target = transcripts["target"]
    assert {"type": "skills", "installed": {"context-offloading": skills[0].digest}} == \
        {k: v for k, v in target[0].items() if k != "t"}
    reads = [e for e in target if e["type"] == "tool" and "SKILL.md" in json.dumps(e["input"])]
    assert reads and "# Context offloading" in reads[0]["output"]  # read on demand, in full
    assert not [e for e in transcripts["control"] if "SKILL.md" in json.dumps(e)]


def _episode(model: SimModel, task: Task, system: str, episode_run: str,
             skill_md: str) -> str:
    """Drive one simulated conversation to its end without a sandbox (tool results made up:
    the SKILL.md read returns ``skill_md``); returns the episode's final outcome."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": task.prompt}]
    outcome = ""
    for _ in range(80):
        req = {"model": "claude-sonnet-5-5", "system": system, "messages": messages,
               "tools": [BASH_TOOL, READ_TOOL]}
        reply = model.reply(req, run=episode_run)
        outcome = reply.outcome or outcome
        if reply.stop_reason != "tool_use":
            return outcome
        use = next(b for b in reply.content if b["type"] == "tool_use")
        out = skill_md if "SKILL.md" in use["input"]["command"] else "ok"
        messages += [{"role": "assistant", "content": reply.content},
                     {"role": "user", "content": [{"type": "tool_result",
                                                   "tool_use_id": use["id"], "content": out}]}]
    return outcome


@pytest.mark.slow
def test_the_simulator_solves_more_with_the_working_target_skill_and_not_otherwise() -> None:
    from gate.agents._builtin import skills_block

    task = load_suite(REPO / "tasks").get(RATE_TASK)
    by_name = {s.name: s for s in load_skills(BUNDLED_SKILLS)}
    target_md = (BUNDLED_SKILLS / "context-offloading" / "SKILL.md").read_text()
    n = 300

    def rate(system: str, skill_md: str) -> float:
        model = SimModel([task], seed=11)  # the same episodes under every condition (paired)
        outcomes = [_episode(model, task, system, f"{RATE_TASK}-r{e}", skill_md)
                    for e in range(n)]
        return sum(o == "solve" for o in outcomes) / n

    control = rate("You are an engineer.", "")
    target = rate("You are an engineer.\n" + skills_block([by_name["context-offloading"]]),
                  target_md)
    negative = rate("You are an engineer.\n" + skills_block([by_name["git-commit-messages"]]),
                    "")
    broken = rate("You are an engineer.\n" + skills_block([by_name["context-offloading"]]),
                  target_md.replace("# Context offloading", f"{NO_EFFECT_MARKER}\n# Context"))
    assert 0.7 < control < 0.9  # sonnet on a medium task
    assert target > control + 0.1 and target > 0.9
    assert negative == control  # an irrelevant skill is never read and changes nothing
    assert broken == control  # a skill marked no-effect is read, and helps nothing


def test_a_working_skill_cuts_the_turns_of_a_solved_episode() -> None:
    from gate.agents._builtin import skills_block

    task = load_suite(REPO / "tasks").get(RATE_TASK)
    skill = next(s for s in load_skills(BUNDLED_SKILLS) if s.name == "context-offloading")
    target_md = (BUNDLED_SKILLS / "context-offloading" / "SKILL.md").read_text()
    def turns(system: str, run: str) -> int:
        model = SimModel([task], seed=11)
        messages: list[dict[str, Any]] = [{"role": "user", "content": task.prompt}]
        for turn in range(40):
            reply = model.reply({"model": "claude-sonnet-5-5", "system": system,
                                 "messages": messages, "tools": [BASH_TOOL]}, run=run)
            if reply.stop_reason != "tool_use":
                assert reply.outcome == "solve"
                return turn + 1
            use = reply.content[-1]
            out = target_md if "SKILL.md" in use["input"]["command"] else "ok"
            messages += [{"role": "assistant", "content": reply.content},
                         {"role": "user", "content": [{"type": "tool_result",
                                                       "tool_use_id": use["id"],
                                                       "content": out}]}]
        raise AssertionError("no final answer")

    solved = next(e for e in range(50) if decide_outcome(11, "claude-sonnet-5-5", task.id,
                                                          task.difficulty, e) == "solve")
    run = f"{RATE_TASK}-r{solved}"
    assert turns(skills_block([skill]), run) < turns("plain", run)


def test_the_repositorys_gate_toml_has_the_skills_and_its_baseline_measured_them() -> None:
    """`gate run --condition control --condition target` works on the bundled suite as it is
    (docs/skills.md), and the committed baseline is of this very agent, skills included."""
    from gate.agents import agent_kind
    from gate.core.fingerprint import fingerprint, fingerprint_parts
    from gate.core.results import load_results

    cfg = load_config(REPO / "gate.toml")
    assert cfg.agent.skills is not None and cfg.path(cfg.agent.skills).resolve() == \
        BUNDLED_SKILLS.resolve()
    assert os.path.isdir(BUNDLED_SKILLS)
    parts = fingerprint_parts(cfg, agent_kind(cfg.agent.kind))
    assert "skills" in parts
    base = load_results(REPO / "baseline.json", "baseline")
    assert base.agent.fingerprint == fingerprint(parts, cfg.agent.kind)


@pytest.mark.docker
@pytest.mark.slow
def test_a_harbor_tasks_container_gets_exactly_its_conditions_skills(
        engine: None, tmp_path: Path) -> None:
    from tests.helpers.harbor import harbor_task

    task = load_task(harbor_task(tmp_path / "tasks", "h"))
    skills = load_skills(BUNDLED_SKILLS)
    provider = make_provider("docker", SandboxOptions(base_dir=tmp_path / "ws"))
    with provider:
        for condition, want in [("control", []),
                                ("target", [".claude/skills/context-offloading/SKILL.md",
                                            ".claude/skills/context-offloading/scripts/"
                                            "offload.sh"])]:
            agent = _Lister(BUNDLED_SKILLS, home=True)  # where Harbor puts them
            picked = [s for s in skills if s.name == "context-offloading"] \
                if condition == "target" else []
            res = run_one(task, 0, agent, provider=provider,
                          options=RunOptions(condition=condition, skills=picked))
            assert res.status == "failed", res.reason  # the verifier ran: reward 0
            said = agent.said[0].split()
            assert [f for f in said if f.startswith(".claude")] == want
            assert "HOST-SKILLS-VISIBLE" not in said and "WORKDIR-CLAUDE" not in said
            if want:
                assert "EXECUTABLE" in said and "WRITABLE" in said


def test_the_skills_block_escapes_a_descriptions_markup_characters(tmp_path: Path) -> None:
    from gate.agents._builtin import skills_block

    write_skill(tmp_path / "skills", "demo",
                front="name: demo\ndescription: \"Use when a < b & b > c, it's fine\"\n")
    block = skills_block(load_skills(tmp_path / "skills"))
    assert "<description>Use when a &lt; b &amp; b &gt; c, it's fine</description>" in block
    assert block.count("<skill>") == 1 and "</available_skills>" in block
