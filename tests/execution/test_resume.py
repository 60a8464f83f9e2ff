"""Issue 13, crash safety: runs are journaled as they land; a SIGKILLed run is marked
incomplete, cannot be promoted, and `gate run --resume` finishes it without redoing a run."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gate.core.results import journal_path, load_results, read_journal
from gate.sim._model import EPISODE_STRIDE, SimModel
from tests.helpers.process import gate
from tests.helpers.suites import BASH_TOOL, tiny_suite

TASKS = ("build-report", "count-lines", "turn-mode-on")


def _config(tmp_path: Path) -> Path:
    tasks = tiny_suite(tmp_path / "suite")
    cfg = tmp_path / "gate.toml"
    cfg.write_text(f'[agent]\nkind = "builtin"\n[suite]\ntasks = "{tasks}"\n')
    return cfg


def _journal_runs(path: Path) -> list[tuple[str, int]]:
    lines = path.read_text().splitlines()
    return [(o["run"]["task"], o["run"]["replication"])
            for o in map(json.loads, lines[1:])]


def _outcome(run: dict) -> tuple:  # what must not depend on the kill: outcome and usage
    return run["status"], run["turns"], run["usage"], run["cost_usd"], run["reason"]


@pytest.mark.slow
def test_sigkill_then_resume_ends_with_exactly_the_uninterrupted_runs(tmp_path: Path) -> None:
    cfg = _config(tmp_path)
    # 3 tasks x k = 2: six runs, killed once half of them landed (k = 3 took half as long again
    # for the same check)
    args = ["run", "--config", cfg, "--sim", "--seed", "7", "-k", "2", "-j", "1",
            "--no-transcripts"]
    full = tmp_path / "full.json"
    p = gate(*args, "-o", full)
    assert p.returncode in (0, 1), p.stderr
    expected = {(t, r) for t in TASKS for r in range(2)}
    total = len(expected)

    out = tmp_path / "r.json"
    journal = journal_path(out)
    assert journal.name == "r.journal.jsonl"
    proc = subprocess.Popen([sys.executable, "-m", "gate", *map(str, args), "-o", str(out)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if journal.exists() and len(_journal_runs(journal)) >= total // 2:
            break
        time.sleep(0.02)
    proc.kill()  # SIGKILL: no handler runs, nothing is tidied up
    proc.wait(timeout=30)
    landed = _journal_runs(journal)
    assert total // 2 <= len(landed) < total, landed  # killed halfway

    # the file the killed run left is marked incomplete: never promoted
    left = load_results(out)
    assert left.interrupted is not None and "incomplete" in left.interrupted.reason
    target = tmp_path / "baseline.json"
    p = gate("baseline", out, "--baseline", target)
    assert p.returncode == 2 and "cannot become the baseline" in p.stderr, p.stderr
    assert not target.exists()

    p = gate(*args, "-o", out, "--resume")
    assert p.returncode in (0, 1), p.stderr
    assert f"resuming: {len(landed)} runs kept from the journal, {total - len(landed)} to run" \
        in p.stderr
    # no run done twice, none missing: the journal holds each exactly once
    journaled = _journal_runs(journal)
    assert sorted(journaled) == sorted(expected) and len(journaled) == total
    assert journaled[:len(landed)] == landed  # the killed run's runs were kept, not redone
    done = load_results(out)
    assert done.interrupted is None
    assert sorted((r.task, r.replication) for r in done.runs) == sorted(expected)
    # the zero-latency simulator at -j 1: the same outcomes and measured usage as the
    # uninterrupted run with the same seed (each run's randomness is drawn from its name)
    def outcomes(path: Path) -> dict[tuple[str, int], tuple]:
        return {(r["task"], r["replication"]): _outcome(r)
                for r in json.loads(path.read_text())["runs"]}

    want, got = outcomes(full), outcomes(out)
    assert got == want
    # and the resumed file promotes
    p = gate("baseline", out, "--baseline", target)
    assert p.returncode == 0, p.stderr


@pytest.mark.slow
def test_resume_refuses_another_seed_naming_it(tmp_path: Path) -> None:
    cfg = _config(tmp_path)
    out = tmp_path / "r.json"
    base = ["run", "--config", cfg, "--sim", "-k", "1", "-j", "1", "--no-transcripts",
            "--task", "turn-mode-on", "-o", out]
    p = gate(*base, "--seed", "1")
    assert p.returncode in (0, 1), p.stderr
    before = journal_path(out).read_text()
    p = gate(*base, "--seed", "2", "--resume")
    assert p.returncode == 2, p.stderr
    assert "cannot resume: not the same seed (the killed run: 1, this one: 2)" in p.stderr
    assert "Traceback" not in p.stderr
    assert journal_path(out).read_text() == before  # nothing touched
    p = gate(*base, "--seed", "1", "-k", "2", "--resume")
    assert p.returncode == 2 and "cannot resume: not the same replications" in p.stderr, p.stderr
    # a finished run resumes to itself: nothing is run again
    p = gate(*base, "--seed", "1", "--resume")
    assert p.returncode in (0, 1) and "1 runs kept from the journal, 0 to run" in p.stderr


@pytest.mark.slow
def test_resume_without_a_journal_is_exit_2(tmp_path: Path) -> None:
    cfg = _config(tmp_path)
    p = gate("run", "--config", cfg, "--sim", "--resume", "-o", tmp_path / "none.json")
    assert p.returncode == 2 and "no journal to resume from" in p.stderr, p.stderr


def test_a_torn_last_journal_line_is_dropped(tmp_path: Path) -> None:
    j = tmp_path / "r.journal.jsonl"
    run = {"task": "a", "replication": 0, "status": "passed", "reason": None, "turns": 1,
           "usage": {"input_tokens": 1, "output_tokens": 1, "cache_creation_input_tokens": 0,
                     "cache_read_input_tokens": 0}, "cost_usd": 0.1, "duration_s": 1.0,
           "notes": None}
    j.write_text(json.dumps({"type": "header", "identity": {}}) + "\n"
                 + json.dumps({"type": "run", "run": run}) + "\n"
                 + json.dumps({"type": "run", "run": run}) + "\n"  # the same run twice
                 + json.dumps({"type": "run", "run": {**run, "task": "b"}})[:40])  # SIGKILL
    header, runs = read_journal(j)
    assert header["identity"] == {} and [r.key for r in runs] == [("a", None, 0)]


def test_simulated_outcomes_do_not_depend_on_which_runs_came_before(tmp_path: Path) -> None:
    """The episode (and so the outcome) of a run named by the meter is its replication,
    whatever conversations the simulator served before."""
    from gate.core.tasks import load_suite

    suite = load_suite(tiny_suite(tmp_path / "suite"))
    task = next(t for t in suite.tasks if t.id == "build-report")
    request = {"model": "claude-sonnet-5-5", "max_tokens": 100,
               "tools": [BASH_TOOL],
               "messages": [{"role": "user", "content": task.prompt}]}
    fresh = SimModel(suite.tasks, seed=3)
    busy = SimModel(suite.tasks, seed=3)
    for rep in (0, 1, 3, 4):  # other runs of the same task first
        busy.reply(request, run=f"build-report-r{rep}")
    assert busy.reply(request, run="build-report-r2").episode == \
        fresh.reply(request, run="build-report-r2").episode == 2
    # a second conversation within one run is another episode, still its own
    assert busy.reply(request, run="build-report-r2").episode == 2 + EPISODE_STRIDE
    # unnamed clients (gate sim serve) still count episodes up
    anon = SimModel(suite.tasks, seed=3)
    assert [anon.reply(request).episode for _ in range(3)] == [0, 1, 2]


def test_resuming_after_a_torn_line_appends_on_a_line_of_its_own(tmp_path: Path) -> None:
    from gate.core.results import Journal, RunResult

    j = tmp_path / "r.journal.jsonl"
    run = RunResult.model_validate({
        "task": "a", "replication": 0, "status": "passed", "reason": None, "turns": 1,
        "usage": {"input_tokens": 1, "output_tokens": 1, "cache_creation_input_tokens": 0,
                  "cache_read_input_tokens": 0}, "cost_usd": 0.1, "duration_s": 1.0,
        "notes": None})
    Journal(j, {"identity": {"seed": 1}}, [run]).close()
    with j.open("a") as fh:
        fh.write('{"type":"run","run":{"task":"b"')  # SIGKILL mid-write
    journal = Journal(j, {}, resume=True)
    journal.append(run.model_copy(update={"task": "c"}))
    journal.close()
    header, runs = read_journal(j)
    assert header["identity"] == {"seed": 1} and [r.task for r in runs] == ["a", "c"]
