from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from gate.cli import main
from gate.results import load_results


def gate(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """The real console entry point in a subprocess, as a user runs it."""
    return subprocess.run([sys.executable, "-m", "gate", *args], capture_output=True, text=True,
                          cwd=cwd, timeout=120)


@pytest.mark.slow
def test_validate_names_false_positive_and_unsolvable(make_task, suite_dir: Path) -> None:
    make_task("sound")
    make_task("always-passes", verify="exit 0\n")
    make_task("unsolvable", solve="echo wrong > hello.txt\n")
    (make_task("no-verify") / "verify.sh").unlink()
    p = gate("validate", "--tasks", str(suite_dir))
    assert p.returncode == 1, p.stderr
    lines = {ln.split()[0]: ln for ln in p.stdout.splitlines() if ln.strip()}
    assert "false positive" in lines["always-passes"]
    assert "not solvable as written" in lines["unsolvable"]
    assert "missing verify.sh" in lines["no-verify"]
    assert lines["sound"].rstrip().endswith("ok")
    assert "1 sound, 3 broken" in p.stdout


@pytest.mark.slow
def test_validate_all_sound_exits_zero(make_task, suite_dir: Path) -> None:
    make_task("a")
    make_task("b", starting={"x.txt": "1\n"})
    p = gate("validate", "--tasks", str(suite_dir))
    assert p.returncode == 0, p.stdout + p.stderr
    assert "2 sound, 0 broken" in p.stdout


@pytest.mark.slow
def test_run_oracle_writes_valid_results(make_task, suite_dir: Path, tmp_path: Path) -> None:
    make_task("a")
    make_task("b", verify="exit 1\n")
    out = tmp_path / "out" / "results.json"
    p = gate("run", "--tasks", str(suite_dir), "--agent", "oracle", "-k", "2", "-j", "2",
             "-o", str(out))
    assert p.returncode == 0, p.stderr
    r = load_results(out)
    assert r.model == "oracle (no model)" and r.agent.kind == "oracle"
    assert sorted((x.task, x.replication, x.status) for x in r.runs) == [
        ("a", 0, "passed"), ("a", 1, "passed"), ("b", 0, "failed"), ("b", 1, "failed")]
    assert r.summary.total == 4 and r.summary.passed == 2 and r.summary.pass_rate == 0.5
    assert set(r.suite.tasks) == {"a", "b"}
    assert (out.parent / "results.transcripts" / "a-r0.jsonl").exists()
    assert not list(out.parent.glob(".results.json.*.tmp"))


@pytest.mark.slow
def test_bad_config_is_one_line_exit_2(tmp_path: Path) -> None:
    cfg = tmp_path / "gate.toml"
    cfg.write_text("[suite]\nreplications = 0\n")
    p = gate("run", "--config", str(cfg), "--agent", "oracle")
    assert p.returncode == 2
    assert p.stderr.strip().count("\n") == 0 and "Traceback" not in p.stderr
    assert "suite.replications" in p.stderr and str(cfg) in p.stderr
    cfg.write_text("[suite\n")
    p = gate("run", "--config", str(cfg))
    assert p.returncode == 2 and "not valid TOML" in p.stderr


def test_missing_suite_dir_exit_2() -> None:
    r = CliRunner().invoke(main, ["validate", "--tasks", "/nonexistent/suite"])
    assert r.exit_code == 2
    assert "task suite directory not found" in r.output


@pytest.mark.slow
def test_validate_empty_suite_is_one_line_exit_2(suite_dir: Path) -> None:
    """No task at all is not "0 sound, 0 broken" and a pass: it is bad input."""
    (suite_dir / ".hidden").mkdir(parents=True)  # not a task: ignored like _private
    p = gate("validate", "--tasks", str(suite_dir))
    assert p.returncode == 2, p.stdout + p.stderr
    assert p.stdout == ""
    (line,) = p.stderr.strip().splitlines()
    assert line.startswith("gate: error: ") and "no task found" in line
    assert str(suite_dir) in line and "Traceback" not in p.stderr


@pytest.mark.slow
def test_validate_suite_of_only_broken_tasks_lists_them(make_task, suite_dir: Path) -> None:
    (make_task("no-verify") / "verify.sh").unlink()
    p = gate("validate", "--tasks", str(suite_dir))
    assert p.returncode == 1, p.stdout + p.stderr
    assert "missing verify.sh" in p.stdout and "0 sound, 1 broken" in p.stdout


@pytest.mark.slow
def test_unknown_config_key_named(tmp_path: Path) -> None:
    cfg = tmp_path / "gate.toml"
    cfg.write_text(json.dumps({}).replace("{}", "[agent]\nmodle = 'x'\n"))
    p = gate("run", "--config", str(cfg), "--agent", "oracle")
    assert p.returncode == 2 and "agent.modle" in p.stderr
