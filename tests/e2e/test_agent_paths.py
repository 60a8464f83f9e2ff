"""``[agent]`` paths (``install``, ``system_prompt``, ``skills``, and a condition's overlay of
one) are the repository's own files: relative to gate.toml's folder and inside it, symlinks
resolved. An absolute path, ``..``, ``~`` or a symlink out is exit 2 naming the file and the
key, through ``gate run`` and ``gate validate``; a symlink inside still works (issue 38,
item 4: ``install = "~/.docker/config.json"`` ran the runner's registry login as a script)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers.process import gate, user_env
from tests.helpers.suites import write_task

TOKEN = "ghp_" + "Outside0Repo" * 3  # in a file outside the repository


def _repo(tmp_path: Path, agent: str, extra: str = "") -> Path:
    """A repository (``repo/``: gate.toml, one task) beside a folder it must not reach
    (``outside/``: a secret file, a prompt, a skills folder)."""
    outside = tmp_path / "outside"
    (outside / "skills" / "leak").mkdir(parents=True)
    (outside / "config.json").write_text(json.dumps({"token": TOKEN}))
    (outside / "prompt.md").write_text(f"You are {TOKEN}.\n")
    (outside / "skills" / "leak" / "SKILL.md").write_text(
        f"---\nname: leak\ndescription: {TOKEN}\n---\n")
    repo = tmp_path / "repo"
    write_task(repo / "tasks", "hello")
    (repo / "gate.toml").write_text(f"[agent]\n{agent}\n[suite]\ntasks = \"tasks\"\n"
                                    f"replications = 1\n{extra}")
    return repo


#: (the [agent] lines, the key named, links to make in the repository: name → target)
OUT = [
    ('kind = "command"\ncommand = "true"\ninstall = "/etc/hostname"', "agent.install", {}),
    ('kind = "command"\ncommand = "true"\ninstall = "~/.docker/config.json"', "agent.install",
     {}),
    ('kind = "command"\ncommand = "true"\ninstall = "../outside/config.json"', "agent.install",
     {}),
    ('kind = "command"\ncommand = "true"\ninstall = "agent/install.sh"', "agent.install",
     {"agent/install.sh": "outside/config.json"}),  # a symlink out
    ('system_prompt = "/etc/hostname"', "agent.system_prompt", {}),
    ('system_prompt = "docs/../../outside/prompt.md"', "agent.system_prompt", {}),
    ('system_prompt = "prompts/prompt.md"', "agent.system_prompt",
     {"prompts": "outside"}),  # a folder linked out
    ('skills = "~"', "agent.skills", {}),
    ('skills = "skills"', "agent.skills", {"skills": "outside/skills"}),
    ('kind = "builtin"', "conditions.short.agent.system_prompt",
     {"short.md": "outside/prompt.md"}),
]


@pytest.mark.slow
@pytest.mark.parametrize(("agent", "key", "links"), OUT, ids=[
    "install-absolute", "install-home", "install-dotdot", "install-symlink",
    "prompt-absolute", "prompt-dotdot", "prompt-folder-symlink", "skills-home",
    "skills-symlink", "condition-prompt-symlink"])
def test_an_agent_path_out_of_the_repository_is_exit_2_naming_the_key(
        tmp_path: Path, agent: str, key: str, links: dict[str, str]) -> None:
    extra = ('[conditions.short.agent]\nsystem_prompt = "short.md"\n'
             if key.startswith("conditions") else "")
    repo = _repo(tmp_path, agent, extra)
    for name, target in links.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).symlink_to(tmp_path / target)
    cfg = repo / "gate.toml"
    for args in (("run", "--sim", "-o", repo / "r.json"), ("validate",)):
        p = gate(*args, "--config", cfg, cwd=repo, base=user_env())
        assert p.returncode == 2, (args, p.stdout, p.stderr)
        lines = p.stderr.splitlines()
        assert len(lines) == 1 and "Traceback" not in p.stderr, p.stderr
        assert lines[0].startswith(f"gate: error: {cfg}: {key}: "), lines[0]
        assert TOKEN not in p.stderr + p.stdout
    assert not (repo / "r.json").exists()


@pytest.mark.slow
def test_symlinks_inside_the_repository_still_work(tmp_path: Path) -> None:
    repo = _repo(tmp_path, 'kind = "builtin"\nsystem_prompt = "agent.md"\nskills = "skills"\n')
    (repo / "lib" / "skills" / "tidy").mkdir(parents=True)
    (repo / "lib" / "skills" / "tidy" / "SKILL.md").write_text(
        "---\nname: tidy\ndescription: Keep the workspace tidy.\n---\nTidy up.\n")
    (repo / "lib" / "prompt.md").write_text("Solve {{ task_id }} in {{ workdir }}.\n")
    (repo / "agent.md").symlink_to("lib/prompt.md")  # relative, inside
    (repo / "skills").symlink_to(repo / "lib" / "skills")  # absolute, inside
    cfg = repo / "gate.toml"
    assert gate("validate", "--config", cfg, cwd=repo, base=user_env()).returncode == 0
    p = gate("run", "--sim", "--config", cfg, "-o", repo / "r.json", cwd=repo,
             base=user_env())
    assert p.returncode in (0, 1), p.stderr  # the simulated model may fail the task
    agent = json.loads((repo / "r.json").read_text())["agent"]
    assert "skills" in agent["parts"] and agent["values"]["prompt"]["characters"] == len(
        (repo / "lib" / "prompt.md").read_text())
