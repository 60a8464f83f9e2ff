"""Adoption from an empty repository, as a new user would try it, through the real CLI.

``gate init``, a simulator run, a baseline, then: an unchanged agent passes (exit 0), the
example task collapsing blocks (exit 1), a timestamp in the system prompt is never headlined as
a pass, the issue's 3-run comparison says it could not have detected anything (exit 3), and a
simulator baseline against a run through the API (``gate sim serve`` as the base URL, a dummy
key) is inconclusive (exit 3).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers.process import gate as run_gate
from tests.helpers.process import user_env

pytestmark = pytest.mark.slow


def gate(cwd: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return run_gate(*args, cwd=cwd, base=user_env(**env))


def compare(repo: Path, baseline: str, results: str) -> tuple[int, dict[str, object]]:
    p = gate(repo, "compare", baseline, results, "--format", "json")
    assert p.returncode in (0, 1, 3), p.stderr
    return p.returncode, json.loads(p.stdout)


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``gate init`` in an empty repository, a simulator run promoted to a baseline."""
    repo = tmp_path_factory.mktemp("adopt") / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True, env=user_env())
    assert gate(repo, "init").returncode == 0
    run = gate(repo, "run", "--sim", "--seed", "1", "-o", "sim-base.json")
    assert run.returncode == 0, run.stderr
    b = gate(repo, "baseline", "sim-base.json", "--baseline", "sim-baseline.json")
    assert b.returncode == 0, b.stderr
    assert "these are the simulator's runs" in b.stdout
    assert "uncommitted changes" in b.stdout  # nothing is committed yet
    return repo


def _edit(path: Path, old: str, new: str) -> Iterator[None]:
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))
    try:
        yield
    finally:
        path.write_text(text)


def test_an_unchanged_agent_passes(repo: Path) -> None:
    assert gate(repo, "run", "--sim", "--seed", "2", "-o", "same.json").returncode == 0
    code, c = compare(repo, "sim-baseline.json", "same.json")
    assert code == 0 and c["verdict"] == "pass"
    assert c["resolution"]["detectable"] is True  # type: ignore[index]
    assert "uncommitted changes" in " ".join(c["notes"])  # type: ignore[arg-type]


def test_the_example_task_collapsing_blocks(repo: Path) -> None:
    for _ in _edit(repo / "gate.toml", "max_turns = 30", "max_turns = 1"):
        assert gate(repo, "run", "--sim", "--seed", "3", "-o", "collapse.json").returncode == 0
    code, c = compare(repo, "sim-baseline.json", "collapse.json")
    assert code == 1 and c["verdict"] == "regression"
    assert str(c["headline"]).startswith("Regression: pass rate 100.0 % → 0.0 %")


def test_a_timestamp_in_the_system_prompt_is_never_a_pass(repo: Path) -> None:
    prompt = repo / "agent/system.md"
    first = prompt.read_text().splitlines()[0]
    for _ in _edit(prompt, first, first + " It is {{ now }}."):
        assert gate(repo, "run", "--sim", "--seed", "4", "-o", "now.json").returncode == 0
    code, c = compare(repo, "sim-baseline.json", "now.json")
    assert code != 0 and not str(c["headline"]).startswith("No regression")
    assert code == 1 and {m["name"] for m in c["metrics"] if m["blocks"]} >= {  # type: ignore[index, union-attr]
        "cost", "cache_hit_rate"}


def test_three_runs_against_three_say_they_could_not_have_detected_it(repo: Path) -> None:
    """The issue's own comparison: one task, 3 v 3, a collapse. Exit 3, never a pass."""
    assert gate(repo, "run", "--sim", "-k", "3", "--seed", "5", "-o", "b3.json").returncode == 0
    assert gate(repo, "baseline", "b3.json", "--baseline", "baseline3.json").returncode == 0
    for _ in _edit(repo / "gate.toml", "max_turns = 30", "max_turns = 1"):
        assert gate(repo, "run", "--sim", "-k", "3", "--seed", "6", "-o", "c3.json"
                    ).returncode == 0
    code, c = compare(repo, "baseline3.json", "c3.json")
    assert code == 3 and c["verdict"] == "inconclusive"
    assert "could not have detected a regression" in str(c["headline"])
    assert "≥ 6 runs per task" in str(c["headline"])
    text = gate(repo, "compare", "baseline3.json", "c3.json", "--format", "markdown")
    assert text.returncode == 3 and "could not have detected a regression" in text.stdout


def test_a_simulator_baseline_against_a_run_through_the_api_is_inconclusive(repo: Path) -> None:
    server = subprocess.Popen([sys.executable, "-m", "gate", "sim", "serve", "--port", "0",
                               "--tasks", "tasks"], cwd=repo, env=user_env(),
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        assert server.stdout is not None
        url = None
        for line in server.stdout:
            if (m := re.search(r"(http://127\.0\.0\.1:\d+)", line)):
                url = m.group(1)
                break
        assert url, "the simulator did not say where it listens"
        run = gate(repo, "run", "-o", "api.json", ANTHROPIC_BASE_URL=url,
                   ANTHROPIC_API_KEY="dummy-key")
        assert run.returncode == 0, run.stderr
    finally:
        server.terminate()
        server.wait(timeout=30)
    assert "simulator" not in json.loads((repo / "api.json").read_text())["model"]
    code, c = compare(repo, "sim-baseline.json", "api.json")
    assert code == 3 and c["verdict"] == "inconclusive"
    assert "a simulated yardstick never judges a real run" in str(c["headline"])
