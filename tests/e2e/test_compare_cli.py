"""``gate compare`` from the outside: formats, exit codes, one-line errors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from gate.cli import main
from gate.compare._synthetic import reference_rates, synthetic_results
from gate.core.results import TaskInfo, write_results

RATES = reference_rates()


@pytest.fixture()
def files(tmp_path: Path) -> dict[str, Path]:
    rng = np.random.default_rng(0)
    paths = {name: tmp_path / f"{name}.json" for name in
             ("base", "same", "broken", "changed", "unrelated")}
    base = synthetic_results(RATES, 20, rng)
    write_results(paths["base"], base)
    write_results(paths["same"], synthetic_results(RATES, 5, rng))
    write_results(paths["broken"], synthetic_results([0.0] * 15, 5, rng))
    changed = synthetic_results(RATES, 5, rng, digests="new")
    write_results(paths["changed"], changed)
    unrelated = synthetic_results(RATES, 5, rng)
    unrelated = unrelated.model_copy(update={
        "suite": unrelated.suite.model_copy(update={"tasks": {
            f"other-{t}": TaskInfo(digest="o") for t in unrelated.suite.tasks}}),
        "runs": [r.model_copy(update={"task": f"other-{r.task}"}) for r in unrelated.runs]})
    write_results(paths["unrelated"], unrelated)
    (tmp_path / "gate.toml").write_text("[gate]\npermutations = 999\npower_simulations = 50\n")
    paths["config"] = tmp_path / "gate.toml"
    return paths


def _run(*args: str | Path) -> tuple[int, str, str]:
    res = CliRunner().invoke(main, [str(a) for a in args])
    return res.exit_code, res.stdout, res.stderr


def test_pass_and_regression_exit_codes(files: dict[str, Path]) -> None:
    code, out, _ = _run("compare", files["base"], files["same"], "--config", files["config"])
    assert code == 0 and out.startswith("No regression: ")
    code, out, _ = _run("compare", files["base"], files["broken"], "--config", files["config"])
    assert code == 1 and out.startswith("Regression: ")


def test_nothing_comparable_exits_3(files: dict[str, Path]) -> None:
    code, out, _ = _run("compare", files["base"], files["changed"], "--config", files["config"])
    assert code == 3 and out.startswith("Inconclusive: ")


def test_json_and_markdown_formats(files: dict[str, Path]) -> None:
    code, out, _ = _run("compare", files["base"], files["broken"], "--format", "json",
                        "--config", files["config"])
    data = json.loads(out)
    assert code == 1 and data["verdict"] == "regression" and data["exit_code"] == 1
    assert {m["name"] for m in data["metrics"]} == {"pass_rate", "turns", "cost",
                                                    "cache_hit_rate", "duration"}
    code, out, _ = _run("compare", files["base"], files["same"], "--format", "markdown",
                        "--run-url", "https://ci.example/run/1", "--config", files["config"])
    assert code == 0 and out.startswith("### ✅ agent-gate: no regression")
    assert "[CI run](https://ci.example/run/1)" in out


def _one_line_error(code: int, out: str, err: str, expected: int) -> None:
    assert code == expected
    assert out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("gate: error: ")
    assert "Traceback" not in err


def test_bad_inputs_are_one_line_errors(files: dict[str, Path], tmp_path: Path) -> None:
    good = files["base"].read_text()
    cases = {
        "truncated.json": good[: len(good) // 2],
        "notjson.json": "hello",
        "array.json": "[1, 2]",
        "schema.json": json.dumps({**json.loads(good), "schema_version": 2}),
        "missing.json": json.dumps({k: v for k, v in json.loads(good).items() if k != "suite"}),
        "badrun.json": json.dumps({**json.loads(good), "runs": [{"task": "t00"}]}),
    }
    for name, text in cases.items():
        (tmp_path / name).write_text(text)
        code, out, err = _run("compare", files["base"], tmp_path / name)
        _one_line_error(code, out, err, 2)
        assert name in err
    code, out, err = _run("compare", files["base"], tmp_path / "nope.json")
    _one_line_error(code, out, err, 2)  # a missing RESULTS file is bad input
    assert "nope.json: results file not found" in err
    code, out, err = _run("compare", files["base"], files["unrelated"])
    _one_line_error(code, out, err, 2)
    assert "unrelated suites" in err
    (tmp_path / "bad.toml").write_text("[gate]\nalpha = 7\n")
    code, out, err = _run("compare", files["base"], files["same"],
                          "--config", tmp_path / "bad.toml")
    _one_line_error(code, out, err, 2)


def test_missing_baseline_is_unmeasurable_exit_3(files: dict[str, Path], tmp_path: Path) -> None:
    """DESIGN: a missing baseline for the suite is exit 3 (unmeasurable), never bad input."""
    code, out, err = _run("compare", tmp_path / "nope.json", files["same"],
                          "--config", files["config"])
    _one_line_error(code, out, err, 3)
    assert "nope.json: baseline not found" in err
    # both missing: the RESULTS argument is wrong, and that is said first
    code, out, err = _run("compare", tmp_path / "nope.json", tmp_path / "gone.json")
    _one_line_error(code, out, err, 2)
    assert "gone.json" in err
    # a baseline that exists but is broken is still bad input
    (tmp_path / "broken-baseline.json").write_text("{")
    code, out, err = _run("compare", tmp_path / "broken-baseline.json", files["same"])
    _one_line_error(code, out, err, 2)


@pytest.mark.slow
def test_real_process_plain_text_and_exit_code(files: dict[str, Path]) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "gate", "compare", str(files["base"]), str(files["broken"]),
         "--config", str(files["config"])], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1, proc.stderr
    assert proc.stdout.startswith("Regression: ") and "\x1b[" not in proc.stdout


def test_terminal_view_never_parses_untrusted_text_as_markup(
        files: dict[str, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    import io

    from rich.console import Console

    from gate.cli import _compare
    from gate.compare import compare
    from gate.core.config import GateSettings
    from gate.core.results import load_results, summarize

    buf = io.StringIO()
    monkeypatch.setattr(_compare, "console",
                        lambda: Console(file=buf, force_terminal=True, width=100))
    base = load_results(files["base"])
    cand = load_results(files["broken"])
    evil = "[/bold][link=https://x]t00[/]"
    runs = [r.model_copy(update={"task": evil if r.task == "t00" else r.task,
                                 "reason": "[red]boom[/oops]"}) for r in cand.runs]
    tasks = {(evil if t == "t00" else t): i for t, i in cand.suite.tasks.items()}
    cand = cand.model_copy(update={"runs": runs, "summary": summarize(runs),
                                   "suite": cand.suite.model_copy(update={"tasks": tasks})})
    _compare._rich_report(compare(base, cand, GateSettings(permutations=999,
                                                           power_simulations=0)))
    out = buf.getvalue()
    assert "Regression: " in out and "[/bold][link=https://x]t00[/]" in out


def test_a_task_with_no_valid_run_in_one_arm_is_never_under_no_regression(
        tmp_path: Path) -> None:
    """The issue's numbers: 6 tasks, 6 runs each, all passing in the baseline; in the PR one
    task's 6 runs are all infra errors (0 → 6 of 36: 17 % is under the 20 % limit, and
    Fisher's one-sided p = 0.012 is over 0.01). That task cannot be compared; the verdict used
    to be "No regression" (exit 0). Now inconclusive (exit 3), naming the task."""
    rng = np.random.default_rng(1)
    base = synthetic_results([1.0] * 6, 6, rng)
    pr = synthetic_results([1.0] * 6, 6, rng)
    pr = pr.model_copy(update={"runs": [
        r.model_copy(update={"status": "error", "reason": "infra: model API failed"})
        if r.task == "t03" else r for r in pr.runs]})
    write_results(tmp_path / "base.json", base)
    write_results(tmp_path / "pr.json", pr)
    (tmp_path / "gate.toml").write_text("[gate]\npermutations = 999\npower_simulations = 0\n")
    code, out, _ = _run("compare", tmp_path / "base.json", tmp_path / "pr.json",
                        "--format", "json", "--config", tmp_path / "gate.toml")
    data = json.loads(out)
    assert (code, data["verdict"]) == (3, "inconclusive"), data["headline"]
    assert data["infra"]["candidate_rate"] == pytest.approx(6 / 36)
    assert "no valid run in one arm" in data["headline"]
    assert "t03 (this run: 6 infra errors, no valid run)" in data["headline"]
