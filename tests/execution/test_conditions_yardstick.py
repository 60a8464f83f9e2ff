"""Conditions and task metadata measure (the base branch's on a PR); skills are the agent under
test (the PR's): `gate run --base-ref REF --condition ...` and the yardstick's join."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from gate.core.config import load_config
from gate.core.results import load_results
from gate.core.skills import load_skills, skills_digest
from gate.execution.yardstick import MEASURING_SECTIONS, open_yardstick
from tests.helpers import ROOT as REPO
from tests.helpers.process import gate
from tests.helpers.suites import RATE


def sh(cwd: Path, *args: str) -> str:
    return subprocess.run(args, cwd=cwd, check=True, capture_output=True, text=True).stdout


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """main: the bundled task with a target skill, the bundled skills, a named condition."""
    root = tmp_path / "repo"
    shutil.copytree(REPO / "tasks" / RATE, root / "tasks" / RATE)
    shutil.copytree(REPO / "skills", root / "skills")
    (root / "gate.toml").write_text(
        '[agent]\nkind = "builtin"\nskills = "skills"\n[suite]\ntasks = "tasks"\n'
        '[conditions.mine]\nskills = ["context-offloading"]\n')
    sh(root, "git", "init", "-q", "-b", "main")
    sh(root, "git", "-c", "user.name=t", "-c", "user.email=t@example.com", "add", ".")
    sh(root, "git", "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qm",
       "main")
    return root


def _pr_edits(root: Path) -> None:
    """A PR that re-points what measures the skill, and edits the skill itself."""
    toml = (root / "gate.toml").read_text().replace('["context-offloading"]',
                                                   '["git-commit-messages"]')
    (root / "gate.toml").write_text(toml)
    meta = root / "tasks" / RATE / "metadata.json"
    data = json.loads(meta.read_text())
    data["target_skill"], data["irrelevant_skill"] = "git-commit-messages", "context-offloading"
    meta.write_text(json.dumps(data))
    skill = root / "skills" / "context-offloading" / "SKILL.md"
    skill.write_text(skill.read_text() + "\nOne more tip from the PR.\n")


def test_conditions_are_measuring_and_joined_from_the_base(repo: Path) -> None:
    assert "conditions" in MEASURING_SECTIONS
    _pr_edits(repo)
    cfg = load_config(repo / "gate.toml")
    with open_yardstick(cfg, root=repo, ref="main") as ys:
        assert ys.config.conditions["mine"].skills == ["context-offloading"]  # the base's
        assert ys.config.agent.skills == "skills"  # the agent's (the PR's) skills folder
        keys = {s.key: (s.base, s.pr) for s in ys.settings}
        assert keys["[conditions].mine"] == (
            {"skills": ["context-offloading"], "description": None, "agent": {}},
            {"skills": ["git-commit-messages"], "description": None, "agent": {}})
        assert [(t.task, t.change) for t in ys.tasks] == [(RATE, "changed")]  # its metadata
        base_meta = json.loads((ys.tasks_dir / RATE / "metadata.json").read_text())
        assert base_meta["target_skill"] == "context-offloading"


@pytest.mark.slow
def test_run_base_ref_measures_the_prs_skills_with_the_bases_conditions(repo: Path) -> None:
    _pr_edits(repo)
    out = repo / "r.json"
    p = gate("run", "--config", repo / "gate.toml", "--base-ref", "main", "--sim", "-k", "1",
             "--no-transcripts", "--condition", "mine", "--condition", "target",
             "--condition", "negative", "-o", out)
    assert p.returncode in (0, 1), p.stderr
    assert "yardstick: [conditions].mine" in p.stderr, p.stderr
    rec = (load_results(out).model_extra or {})["conditions"]
    # the base's condition and the base's metadata.json decide which skill each run gets
    assert rec["mine"]["skills"] == {RATE: ["context-offloading"]}
    assert rec["target"]["skills"] == {RATE: ["context-offloading"]}
    assert rec["negative"]["skills"] == {RATE: ["git-commit-messages"]}
    # ... and the skill they get is the PR's (edited) copy: the agent under test
    pr_skills = {s.name: s for s in load_skills(repo / "skills")}
    assert rec["target"]["skills_digest"][RATE] == skills_digest([pr_skills["context-offloading"]])
    base_copy = REPO / "skills"
    assert rec["target"]["skills_digest"][RATE] != skills_digest(
        [s for s in load_skills(base_copy) if s.name == "context-offloading"])
