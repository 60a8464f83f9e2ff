"""Run duration is a metric of the comparison, added as one row of gate/core/metrics.py: real runs
(``gate run``), then ``gate compare --format json``, the comment (markdown) and the HTML
report. It is reported with its change, interval and test, never gates, stays off the
comment's first screen, and a results file that does not record it still compares."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers.ci import GOOD_HELPER, write_sim_suite, write_suite
from tests.helpers.process import gate

pytestmark = pytest.mark.slow


def _run(root: Path, out: str, *extra: str) -> Path:
    p = gate("run", "--config", root / "gate.toml", "-k", "3", "-j", "3", "-o", root / out,
             *extra, cwd=root)
    assert p.returncode == 0, p.stdout + p.stderr
    return root / out


def _compare(root: Path, base: Path, pr: Path, fmt: str) -> tuple[int, str]:
    p = gate("compare", base, pr, "--format", fmt, "--config", root / "gate.toml", cwd=root)
    assert p.returncode in (0, 1, 3), p.stdout + p.stderr
    return p.returncode, p.stdout


def _metric(out: str, name: str) -> dict[str, object]:
    return next(m for m in json.loads(out)["metrics"] if m["name"] == name)


@pytest.fixture(scope="module")
def sim_runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    """Two runs of a three-task suite under the simulator (3 replications each)."""
    root = tmp_path_factory.mktemp("sim")
    write_sim_suite(root)
    return root, _run(root, "base.json", "--sim"), _run(root, "pr.json", "--sim", "--seed", "5")


def test_duration_is_in_the_json_the_report_and_the_comments_details(
        sim_runs: tuple[Path, Path, Path]) -> None:
    root, base, pr = sim_runs
    _, out = _compare(root, base, pr, "json")
    d = _metric(out, "duration")
    assert d["label"] == "duration per run"
    assert isinstance(d["baseline"], float) and d["baseline"] > 0
    assert isinstance(d["candidate"], float) and d["candidate"] > 0
    assert d["delta"] == pytest.approx(d["candidate"] / d["baseline"] - 1, rel=1e-6)
    assert isinstance(d["ci_low"], float) and isinstance(d["ci_high"], float)
    assert d["ci_low"] <= d["delta"] <= d["ci_high"] and d["ci_level"] == 0.95
    assert d["p_value"] is not None and set(d["p_values"]) == {"aggregate", "equal_weight"}
    assert d["margin"] is None and d["gating"] is False and d["blocks"] is False

    _, md = _compare(root, base, pr, "markdown")
    first, _, details = md.partition("<details>")
    assert "duration" not in first  # the first screen keeps its four metrics
    row = next(ln for ln in details.splitlines() if ln.startswith("| duration per run |"))
    assert " s | " in row and "95 % CI" in row and " · p " in row, row
    assert row.rstrip().endswith(("reported, not gating |", "regression (not gating) |")), row

    html = root / "report.html"
    p = gate("report", pr, "--baseline", base, "--html", html, "--config", root / "gate.toml",
             cwd=root)
    assert p.returncode == 0, p.stdout + p.stderr
    page = html.read_text()
    assert '<th scope="row">Duration per task-run</th>' in page
    assert "95 % CI" in page.split('<th scope="row">Duration per task-run</th>', 1)[1][:600]


def test_a_results_file_without_durations_still_compares(
        sim_runs: tuple[Path, Path, Path]) -> None:
    """A file written before runs recorded their wall time: the metric is not available, says
    so, and every other metric is what it was."""
    root, base, pr = sim_runs
    old = json.loads(base.read_text())
    for run in old["runs"]:
        del run["duration_s"]
    old["summary"].pop("duration_s", None)
    old_path = root / "old.json"
    old_path.write_text(json.dumps(old))
    code_new, out_new = _compare(root, base, pr, "json")
    code_old, out_old = _compare(root, old_path, pr, "json")
    assert code_old == code_new
    d = _metric(out_old, "duration")
    assert d["verdict"] == "n/a" and d["baseline"] is None and d["delta"] is None
    assert "not available" in str(d["note"])
    for name in ("pass_rate", "turns", "cost", "cache_hit_rate"):
        assert _metric(out_old, name) == _metric(out_new, name), name
    _, md = _compare(root, old_path, pr, "markdown")
    assert "| duration per run | n/a | n/a | not available" in md
    p = gate("report", pr, "--baseline", old_path, "--html", root / "old.html", cwd=root)
    assert p.returncode == 0, p.stdout + p.stderr


def test_a_slower_agent_is_reported_and_never_blocks(tmp_path: Path) -> None:
    """Every run of the PR's agent takes a second longer: the duration's test sees it (a
    regression, not gating) and the verdict is still a pass."""
    write_suite(tmp_path)
    base = _run(tmp_path, "base.json")
    (tmp_path / "agent" / "solve.sh").write_text("sleep 1\n" + GOOD_HELPER)
    pr = _run(tmp_path, "pr.json")
    code, out = _compare(tmp_path, base, pr, "json")
    d = _metric(out, "duration")
    assert isinstance(d["delta"], float) and d["delta"] > 0.5
    assert d["significant"] is True and d["verdict"] == "regression"
    assert d["blocks"] is False and d["gating"] is False
    assert code == 0 and json.loads(out)["verdict"] == "pass"


def test_block_on_cannot_name_the_duration(tmp_path: Path) -> None:
    write_suite(tmp_path, toml_extra='block_on = ["pass_rate", "duration"]\n')
    p = gate("compare", tmp_path / "a.json", tmp_path / "b.json", "--config",
             tmp_path / "gate.toml", cwd=tmp_path)
    assert p.returncode == 2, p.stdout + p.stderr
    assert "Traceback" not in p.stderr
    line = p.stderr.strip().splitlines()[-1]
    assert "gate.toml" in line and "block_on" in line and "never gating" in line, line
