"""The issue's case through the real CLI: ``{{ now }}`` in a short prompt on a four-task suite,
on the simulator. At 3 runs per task against a 3-run baseline its cost rose +48 % (p = 0.097)
and its cache-hit rate fell 77.7 % → 0 % (p = 0.0019, over the 0.0015 it blocks at): before
the unclear rule (gate/compare/_unclear.py) every row read "ok", "No regression", exit 0. Now
it is blocked or "⚠️ unclear" with the runs per task that would settle it; the unchanged agent
still passes (exit 0)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.helpers import ROOT
from tests.helpers.process import gate, user_env

pytestmark = pytest.mark.slow

#: two tasks whose short runs cache nothing on a short prompt, two whose longer runs do
TASKS = ("add-dry-run-flag", "export-percentile", "notes-store-refactor", "robust-env-parser")
SHORT = "You are a careful software engineer. Fix the task, then stop.\n"
TOML = """[agent]
kind = "builtin"
model = "claude-sonnet-5-5"
system_prompt = "agent/system.md"
tools = ["bash", "read_file", "write_file", "edit_file"]
max_turns = 30
max_tokens = 4096
cache = "5m"

[suite]
tasks = "tasks"
replications = 3
jobs = 4

[gate]
baseline = "baseline.json"
"""


def _run(repo: Path, out: str, seed: int) -> None:
    p = gate("run", "--sim", "--seed", str(seed), "-o", out, cwd=repo, base=user_env())
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]


def test_a_timestamp_on_four_tasks_is_blocked_or_unclear_never_no_regression(
        tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / "agent").mkdir(parents=True)
    for t in TASKS:
        shutil.copytree(ROOT / "tasks" / t, repo / "tasks" / t)
    (repo / "gate.toml").write_text(TOML)
    prompt = repo / "agent" / "system.md"
    prompt.write_text(SHORT)
    _run(repo, "base.json", 0)
    p = gate("baseline", "base.json", "--baseline", "baseline.json", cwd=repo, base=user_env())
    assert p.returncode == 0, p.stderr

    _run(repo, "same.json", 1)
    same = gate("compare", "baseline.json", "same.json", cwd=repo, base=user_env())
    assert same.returncode == 0, same.stdout + same.stderr  # the unchanged agent passes
    assert "Regression" not in same.stdout.splitlines()[0]

    prompt.write_text("Current time: {{ now }}\n" + SHORT)
    _run(repo, "now.json", 1)
    now = gate("compare", "baseline.json", "now.json", cwd=repo, base=user_env())
    headline = now.stdout.splitlines()[0]
    assert not headline.startswith("No regression"), now.stdout
    # the prompt changed, which the simulator cannot read: its pass rate is not judged, and
    # [ci] sim_unjudged's default makes that exit 3 (gate/compare/_simjudge.py); what it does
    # measure, cost and caching, blocks (1) or reads unclear with the runs that settle it
    assert now.returncode in (1, 3), now.stdout + now.stderr
    if now.returncode == 3:  # not blocked: unclear, and what would settle it
        assert headline.startswith("Not judged by the simulator: "), now.stdout
        assert "runs per task in both arms would settle it" in headline
        assert "[unclear]" in now.stdout
    md = gate("compare", "baseline.json", "now.json", "--format", "markdown", cwd=repo,
              base=user_env())
    assert "⚠️ unclear" in md.stdout or "❌ regression" in md.stdout, md.stdout
    doc = json.loads(gate("compare", "baseline.json", "now.json", "--format", "json",
                          cwd=repo, base=user_env()).stdout)
    assert doc["verdict"] == "regression" or doc["resolution"]["unclear"], doc["headline"]
