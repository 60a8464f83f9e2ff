"""Progress of a run: live on a terminal, plain periodic lines and GitHub log groups in CI, a
summary table at the end either way (gate/cli/_progress.py)."""

from __future__ import annotations

import io
import os
import pty
import re
import select
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from gate.cli._progress import Progress
from gate.core.results import RunResult
from tests.helpers.ci import write_sim_suite


def _run(i: int, status: str = "passed", task: str | None = None) -> RunResult:
    return RunResult.model_validate({
        "task": task or f"task-{i % 7}", "replication": i // 7, "status": status,
        "reason": None if status == "passed" else "verify exited 1", "turns": 3,
        "usage": {"input_tokens": 1000, "output_tokens": 500,
                  "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0},
        "cost_usd": 0.01, "duration_s": 1.0, "notes": None})


def _feed(p: Progress, n: int, failing: frozenset[int] = frozenset()) -> None:
    p.on_start(SimpleNamespace(runs=[]), n)  # type: ignore[arg-type]
    for i in range(n):
        p.on_result(_run(i, "failed" if i in failing else "passed"))


def _status_lines(text: str) -> list[str]:
    return [ln for ln in text.splitlines() if re.match(r"agent-gate: \d+/\d+ runs", ln)]


def test_ci_lines_come_per_10_percent_and_the_runs_fold_into_groups() -> None:
    out = io.StringIO()
    p = Progress(out, live=False, github=True, interval=1e9)
    _feed(p, 100, failing=frozenset({5, 50}))
    text = out.getvalue()
    lines = _status_lines(text)
    assert len(lines) == 10, lines  # one per 10 %, the last at 100 %
    assert lines[-1].startswith("agent-gate: 100/100 runs (100%): 98 passed, 2 failed")
    assert "150.0k tokens" in lines[-1] and "$1.0000" in lines[-1]
    assert "ETA" in lines[0] and "ETA" not in lines[-1]
    # every run line is inside a group; groups never nest and all are closed
    depth = 0
    for ln in text.splitlines():
        if ln.startswith("::group::"):
            assert depth == 0
            depth += 1
        elif ln == "::endgroup::":
            assert depth == 1
            depth -= 1
        elif ln.startswith(("PASS ", "FAIL ")):
            assert depth == 1, ln
        elif ln in lines:
            assert depth == 0, ln
    assert depth == 0
    assert sum(ln.startswith(("PASS ", "FAIL ")) for ln in text.splitlines()) == 100
    # the table came right after the last run, and comes once
    assert text.count("agent-gate: summary") == 1
    p.finish()
    assert out.getvalue().count("agent-gate: summary") == 1
    table = text.split("agent-gate: summary")[1]
    assert re.search(r"task-5 .*│\s+14 │\s+13 │\s+1 │", table), table
    assert re.search(r"all .*│\s+100 │\s+98 │\s+2 │", table), table


def test_a_reason_cannot_forge_a_log_line() -> None:
    """A failure's reason quotes the task's output (the PR's): it stays on its run's line."""
    out = io.StringIO()
    p = Progress(out, live=False, github=True, interval=1e9)
    p.on_start(SimpleNamespace(runs=[]), 1)  # type: ignore[arg-type]
    bad = _run(0, "failed").model_copy(
        update={"reason": "verify exited 1: \n::endgroup::\n::error::forged\x1b[2J"})
    p.on_result(bad)
    lines = out.getvalue().splitlines()
    assert not any(ln.startswith("::error") for ln in lines)
    assert lines.count("::endgroup::") == 1 and "\x1b" not in out.getvalue()
    assert "verify exited 1: \\n::endgroup::\\n::error::forged\\x1b[2J" in out.getvalue()


def test_plain_ci_logs_show_failures_and_periodic_lines_only() -> None:
    out = io.StringIO()
    p = Progress(out, live=False, github=False, interval=1e9)
    _feed(p, 30, failing=frozenset({3}))
    text = out.getvalue()
    assert "::group::" not in text and "PASS " not in text
    assert [ln for ln in text.splitlines() if ln.startswith("FAIL ")] == \
        ["FAIL task-3 #0 (3 turns, $0.0100, 1.0s)  verify exited 1"]
    assert len(_status_lines(text)) == 10


def test_slow_runs_get_a_line_every_interval_and_no_more(monkeypatch: pytest.MonkeyPatch
                                                          ) -> None:
    """A line when 10 % more runs landed or ``interval`` seconds passed since the last line:
    300 of 1,000 runs, one a second, a 30 s interval → lines at 30, 60, 90 s (time), run 100
    (10 %), 130, 160, 190 s, run 200, 230, 260, 290 s, run 300."""
    now = [0.0]
    monkeypatch.setattr("gate.cli._progress.time.monotonic", lambda: now[0])
    out = io.StringIO()
    p = Progress(out, live=False, github=False, interval=30.0)
    p.on_start(SimpleNamespace(runs=[]), 1000)  # type: ignore[arg-type]
    for i in range(300):
        now[0] += 1.0
        p.on_result(_run(i))
    lines = _status_lines(out.getvalue())
    assert [int(re.match(r"agent-gate: (\d+)/", ln).group(1)) for ln in lines] == \
        [30, 60, 90, 100, 130, 160, 190, 200, 230, 260, 290, 300]  # type: ignore[union-attr]
    assert "elapsed 5m00s" in lines[-1] and "ETA 11m40s" in lines[-1]


def test_the_live_display_redraws_in_place_on_a_terminal() -> None:
    out = io.StringIO()
    p = Progress(out, live=True)
    _feed(p, 9, failing=frozenset({2}))
    text = out.getvalue()
    assert "\x1b[" in text  # drawn with terminal control sequences
    assert "9/9" in text and "8 pass" in text and "1 fail" in text and "ETA" in text
    assert "FAIL task-2 #0" in text and "agent-gate: summary" in text
    assert not _status_lines(text)  # no CI lines on a terminal


# ----- through the real CLI -----------------------------------------------------------------

def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("GITHUB_", "GATE_", "ANTHROPIC_")) and k != "CI"}
    return {**env, **extra}


@pytest.fixture
def suite(tmp_path: Path) -> Path:
    write_sim_suite(tmp_path)
    return tmp_path


@pytest.mark.slow
def test_gate_run_in_github_actions_groups_and_summarises(suite: Path) -> None:
    p = subprocess.run([sys.executable, "-m", "gate", "run", "--sim", "--no-transcripts"],
                       cwd=suite, capture_output=True, text=True, timeout=300,
                       env=_env(CI="true", GITHUB_ACTIONS="true"))
    assert p.returncode == 0, p.stderr
    err = p.stderr
    assert err.count("::group::") == err.count("::endgroup::") >= 1
    assert "agent-gate: 9 runs" in err
    assert "agent-gate: 9/9 runs (100%): 9 passed, 0 failed, 0 errors" in err
    assert sum(ln.startswith("PASS ") for ln in err.splitlines()) == 9
    summary = err.split("agent-gate: summary")[1]
    for task in ("alpha", "beta", "gamma"):
        assert re.search(rf"{task} .*│\s+3 │\s+3 │", summary), summary
    assert "\x1b[" not in err  # plain text in a log


@pytest.mark.slow
def test_gate_run_on_a_terminal_shows_the_live_display(suite: Path) -> None:
    """stderr is a pseudo-terminal, outside CI: rich's live display, then the table."""
    master, slave = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "gate", "run", "--sim", "--no-transcripts"],
                            cwd=suite, stdout=subprocess.PIPE, stderr=slave,
                            env=_env(TERM="xterm-256color", COLUMNS="160"))
    os.close(slave)
    chunks: list[bytes] = []
    while True:
        ready, _, _ = select.select([master], [], [], 120)
        assert ready, "no output for 120 s"
        try:
            data = os.read(master, 65536)
        except OSError:  # the child closed its end
            break
        if not data:
            break
        chunks.append(data)
    assert proc.wait(timeout=60) == 0
    os.close(master)
    text = b"".join(chunks).decode("utf-8", "replace")
    assert "\x1b[?25l" in text  # the live display hides the cursor while it redraws
    assert "9/9" in text and "9 pass" in text
    assert "agent-gate: summary" in text
    assert "::group::" not in text and not _status_lines(text)
