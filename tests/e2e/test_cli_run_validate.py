from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from gate.cli import main
from gate.core.results import load_results
from tests.helpers.process import gate


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


def _validate(monkeypatch: pytest.MonkeyPatch, where: Path, suite: Path) -> Any:
    monkeypatch.chdir(where)  # no gate.toml here: the defaults
    return CliRunner().invoke(main, ["validate", "--tasks", str(suite)])


def test_validate_prints_reasons_as_text_never_markup(
        make_task, suite_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A reason quoting `[suite].pull` or `[/tmp/out]` is printed as written: Rich markup
    would drop the first and fail with a traceback on the second (a closing tag)."""
    make_task("brackets", solve="echo 'set [suite].pull, see [/tmp/out] and [bold]x' >&2\n"
                                "exit 1\n")
    r = _validate(monkeypatch, tmp_path, suite_dir)
    assert r.exception is None or isinstance(r.exception, SystemExit), r.output
    assert r.exit_code == 1, r.output
    (row,) = [ln for ln in r.output.splitlines() if ln.startswith("brackets")]
    assert "BROKEN: task not solvable as written" in row
    assert "set [suite].pull, see [/tmp/out] and [bold]x" in row
    assert "0 sound, 1 broken" in r.output


def test_validate_prints_a_long_reasons_further_lines_under_the_table(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A builder's own error lines (a reason of several lines): the first in the table, the
    rest below it, indented, as text."""
    from gate.cli._validate import print_checks
    from gate.execution.validate import TaskCheck

    print_checks([TaskCheck("t", "error", "error", "cannot build: step 3/5\n"
                            "E: Unable to locate package [nosuch]\nexit code: 100")])
    out = capsys.readouterr().out
    (row,) = [ln for ln in out.splitlines() if ln.startswith("t ")]
    assert row.rstrip().endswith("BROKEN: cannot build: step 3/5")
    assert "t:\n    E: Unable to locate package [nosuch]\n    exit code: 100\n" in out


def test_a_task_without_an_oracle_is_checked_untouched_only_not_broken(
        make_task, suite_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The effectiveness layout ships no reference solutions: such a suite can pass validate,
    and says what was not checked. A false positive without an oracle is still broken."""
    make_task("no-oracle", solve=None)
    make_task("sound")
    r = _validate(monkeypatch, tmp_path, suite_dir)
    assert r.exit_code == 0, r.output
    (row,) = [ln for ln in r.output.splitlines() if ln.startswith("no-oracle")]
    assert row.split()[1:3] == ["fails", "missing"]
    assert row.rstrip().endswith("ok (no oracle: verify checked only for failing untouched)")
    assert "2 sound (1 without an oracle), 0 broken" in r.output
    make_task("passes-anyway", solve=None, verify="exit 0\n")
    r = _validate(monkeypatch, tmp_path, suite_dir)
    assert r.exit_code == 1, r.output
    assert "BROKEN: verify passes without any work" in r.output


def test_unhonoured_notes_leave_out_empty_keys_and_harbors_own_defaults(tmp_path: Path) -> None:
    """A key left empty or at Harbor's default asks for nothing (nearly every real task sets
    `storage_mb = 10240`, TB2 `storage = "10G"`); noting it on every task hid the keys that
    matter. One rule (gate/formats/_harbor_schema.py) for `gate validate`'s notes and
    `gate run`'s."""
    from gate.core.tasks import load_task

    def task(toml: str) -> Any:
        d = tmp_path / f"t{len(list(tmp_path.iterdir()))}"
        for rel, body in {"instruction.md": "Do it.\n", "environment/Dockerfile": "FROM x\n",
                          "tests/test.sh": "true\n", "task.toml": toml}.items():
            (d / rel).parent.mkdir(parents=True, exist_ok=True)
            (d / rel).write_text(body)
        return load_task(d)

    noted = task('something_else = ["/app/out.txt"]\nempty_list = []\n[environment]\n'
                 'storage_mb = 10240\nmcp_servers = []\nsomething_new = ""\n'
                 'gpu_types = ["H100"]\n[verifier]\nbrand_new = {}\n').unhonoured
    assert noted == ["environment.gpu_types", "something_else"]
    # a healthcheck is run and artifacts are kept, not listed (tests/sandbox/test_harbor_parity)
    assert task('artifacts = ["/app/out.txt"]\n[environment.healthcheck]\ncommand = "true"\n'
                ).unhonoured == []
    # a storage size changes no reward (Harbor's docker environment ignores it too)
    assert task("[environment]\nstorage_mb = 20480\n").unhonoured == []
    assert task('[environment]\nstorage = "10G"\n').unhonoured == []


@pytest.mark.docker
def test_validate_shows_the_builders_own_error_lines(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A task whose image does not build: its row says so, and the builder's own lines
    (here a step's output holding `[/tmp/out]`) follow the table, as text."""
    from tests.helpers.docker import IMAGE, engine_problem

    if why := engine_problem():
        pytest.fail(why) if os.environ.get("GATE_REQUIRE_DOCKER") == "1" else pytest.skip(why)
    d = tmp_path / "suite" / "no-build"
    files = {"instruction.md": "Do it.\n", "tests/test.sh": "true\n",
             "solution/solve.sh": "true\n",
             "environment/Dockerfile": f"FROM {IMAGE}\n"
                                       "RUN echo 'wrote [/tmp/out] partly' && exit 3\n"}
    for rel, body in files.items():
        (d / rel).parent.mkdir(parents=True, exist_ok=True)
        (d / rel).write_text(body)
    r = _validate(monkeypatch, tmp_path, tmp_path / "suite")
    assert r.exit_code == 1, r.output
    (row,) = [ln for ln in r.output.splitlines() if ln.startswith("no-build ")]
    assert "BROKEN: untouched workspace:" in row and "cannot build the image of no-build" in row
    below = r.output.split("no-build:\n", 1)[1]
    assert "    wrote [/tmp/out] partly" in below
