"""Suite health through the real CLI (gate/compare/_health.py): ``gate validate`` on a suite and
its baseline, ``gate compare`` (terminal and markdown) and ``gate report`` (HTML) name the task
that failed every baseline run, and the one whose latest refresh disagrees with its history,
once each, with why; the middling task never."""

from __future__ import annotations

import html
from pathlib import Path

import numpy as np
import pytest

from gate.compare._synthetic import synthetic_results
from gate.core.results import Results, TaskInfo, write_results
from gate.pool.baseline import promote
from tests.helpers.process import gate

TASKS = ("t00", "t01", "t02")  # steady, always failing, middling
ALWAYS = "t01: failed all 20 valid baseline runs: it carries no signal on pass rate"
SHIFTED = "t00: disagrees with its own history: passed 0 of 5 in the latest refresh"


def _baseline(tmp: Path, digests: dict[str, str]) -> Path:
    """A pooled baseline of four refreshes of five runs: t00 passed every run of the first
    three and none of the latest, t01 never passed, t02 half the time."""
    baseline: Results | None = None
    for i in range(4):
        rates = [1.0 if i < 3 else 0.0, 0.0, 0.5]
        res = synthetic_results(rates, 5, np.random.default_rng(i), commit=f"{i + 1:x}" * 40,
                                created_at=f"2026-11-{10 + i:02d}T00:00:00Z")
        res = res.model_copy(update={"suite": res.suite.model_copy(update={
            "tasks": {t: TaskInfo(digest=digests.get(t, f"d{t}")) for t in TASKS}})})
        baseline, _ = promote(res, baseline, pool_size=20)
    assert baseline is not None
    path = tmp / "baseline.json"
    write_results(path, baseline)
    return path


def _candidate(tmp: Path, baseline: Path) -> Path:
    from gate.core.results import load_results

    base = load_results(baseline)
    res = synthetic_results([0.0, 0.0, 0.5], 5, np.random.default_rng(42),
                            created_at="2026-12-01T00:00:00Z")
    res = res.model_copy(update={"suite": base.suite})
    path = tmp / "results.json"
    write_results(path, res)
    return path


@pytest.mark.slow
def test_validate_names_the_unhealthy_tasks_once_with_why(make_task, suite_dir: Path,
                                                          tmp_path: Path) -> None:
    for t in TASKS:
        make_task(t)
    path = _baseline(tmp_path, {})
    p = gate("validate", "--tasks", suite_dir, "--baseline", path)
    assert p.returncode == 0, p.stdout + p.stderr  # advice, never a broken task
    out = p.stdout
    assert out.count(ALWAYS) == 1 and out.count(SHIFTED) == 1, out
    assert "t02: failed all" not in out and "t02: disagrees" not in out
    assert "drop" not in out and "remove" not in out
    assert "Suite health, from the baseline (never part of the verdict):" in out
    assert out.rstrip().splitlines()[-1] == ("3 sound, 0 broken; 2 tasks to look at "
                                            "(suite health)")
    # a named baseline that is not there is bad input: one line, exit 2
    p = gate("validate", "--tasks", suite_dir, "--baseline", tmp_path / "none.json")
    assert p.returncode == 2 and "none.json" in p.stderr and "Traceback" not in p.stderr


@pytest.mark.slow
def test_compare_and_report_name_them_once(tmp_path: Path) -> None:
    baseline = _baseline(tmp_path, {})
    results = _candidate(tmp_path, baseline)
    for fmt in ("text", "markdown"):
        p = gate("compare", baseline, results, "--format", fmt, cwd=tmp_path,
                 env={"COLUMNS": "400"})
        assert p.returncode in (0, 1, 3), p.stdout + p.stderr
        flat = " ".join(p.stdout.split())
        assert flat.count(ALWAYS) == 1 and flat.count(SHIFTED) == 1, p.stdout
        assert "t02: failed all" not in flat and "t02: disagrees" not in flat
    p = gate("compare", baseline, results, cwd=tmp_path, env={"COLUMNS": "400"})  # the terminal
    flat = " ".join(p.stdout.split())
    assert flat.count(ALWAYS) == 1 and flat.count(SHIFTED) == 1, p.stdout
    page = tmp_path / "report.html"
    p = gate("report", results, "--baseline", baseline, "--html", page, cwd=tmp_path)
    assert p.returncode == 0, p.stdout + p.stderr
    text = " ".join(html.unescape(page.read_text()).split())
    assert text.count(ALWAYS) == 1 and text.count(SHIFTED) == 1
    assert "t02: failed all" not in text and "t02: disagrees" not in text
