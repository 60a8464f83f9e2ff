"""One judge: ``gate compare`` and ``gate ci`` reach the same verdict from the same files —
the baseline, the results, the base branch's [gate] settings and main's history (the drift
guard) — and a results file's sequential looks are judged at α/2 whoever judges it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from gate.cli import main as gate_main
from gate.compare import judge
from gate.compare._synthetic import reference_rates, synthetic_results
from gate.core.config import GateSettings
from gate.core.results import Results, Schedule, write_results
from tests.helpers.ci import CIRun, Project, _break_agent, _project, sh


def _borderline() -> tuple[Results, Results, GateSettings]:
    """A pass-rate drop whose p-value blocks at α but not at α/2."""
    rates = reference_rates(15)
    rng = np.random.default_rng(4)
    base = synthetic_results(rates, 20, rng)
    pr = synthetic_results([max(0.0, r - 0.4) for r in rates[:6]] + rates[6:], 5, rng)
    return base, pr, GateSettings(alpha=0.003, block_on=["pass_rate"])


def test_sequential_looks_are_judged_at_half_alpha_by_whoever_judges() -> None:
    base, pr, settings = _borderline()
    assert judge(base, pr, settings).verdict == "regression"
    seq = pr.model_copy(update={"schedule": Schedule(replications=5, sequential=[2, 3])})
    c = judge(base, seq, settings)
    assert c.verdict == "pass"
    # a file without a plan ran the two looks before plans: α/2 at its second
    assert c.notes == ["Sequential run, look 2 of 2: the first 2 runs per task were not "
                       "conclusive, so 3 more ran; decided on all 5 (p = 0.00089) at α/2 = "
                       "0.0015; turns, cost and cache-hit rate at metric_alpha/2 = 0.0015."]


def test_gate_compare_judges_a_sequential_file_as_ci_did(tmp_path: Path) -> None:
    base, pr, _ = _borderline()
    seq = pr.model_copy(update={"schedule": Schedule(replications=5, sequential=[2, 3])})
    write_results(tmp_path / "b.json", base)
    write_results(tmp_path / "plain.json", pr)
    write_results(tmp_path / "seq.json", seq)
    (tmp_path / "gate.toml").write_text('[gate]\nalpha = 0.003\nblock_on = ["pass_rate"]\n')
    args = ["compare", str(tmp_path / "b.json"), "--config", str(tmp_path / "gate.toml")]
    plain = CliRunner().invoke(gate_main, [*args, str(tmp_path / "plain.json")])
    assert plain.exit_code == 1, plain.output
    judged = CliRunner().invoke(gate_main, [*args, str(tmp_path / "seq.json"), "--format",
                                            "markdown"])
    assert judged.exit_code == 0, judged.output
    assert ("> Sequential run, look 2 of 2: the first 2 runs per task were not conclusive"
            in judged.output)


# ----- through both real CLIs ---------------------------------------------------------------

def _compare(ci: Path, *args: str) -> tuple[int, dict]:
    p = subprocess.run([sys.executable, "-m", "gate", "compare", *args, "--format", "json"],
                       cwd=ci, capture_output=True, text=True, timeout=120, check=False)
    assert p.returncode in (0, 1), p.stderr
    return p.returncode, json.loads(p.stdout)


def _same_as_ci(project: Project, ci: Path, run: CIRun, history: str | None) -> dict:
    """`gate compare` on the files `gate ci` judged — main's baseline, settings and history,
    and the results it wrote — both from files and with --base-ref: the same answer."""
    main = project.clone(f"main-{run.code}-{history}")
    files = [str(main / "baseline.json"), str(ci / "results.json"),
             "--config", str(main / "gate.toml")]
    if history is not None:
        files += ["--history", str(main / history)]
    code, c = _compare(ci, *files)
    sh(ci, "git", "fetch", "-q", "origin", "main")
    ref_code, ref_c = _compare(ci, "--base-ref", "origin/main", str(ci / "results.json"))
    assert code == ref_code == run.code
    assert c["verdict"] == ref_c["verdict"] == run.outputs["verdict"]
    assert c["headline"] == ref_c["headline"] == run.outputs["headline"]
    assert c["notes"] == ref_c["notes"]
    return c


@pytest.mark.slow
def test_gate_compare_and_gate_ci_reach_the_same_verdict(tmp_path: Path) -> None:
    for project in _project(tmp_path, sim=False):
        ci = project.pr_branch("drifty", _break_agent)

        # no history on main: a plain regression, blocked by both
        run = project.gate_ci(ci)
        assert run.code == 1, run.stderr
        c = _same_as_ci(project, ci, run, None)
        # sequential looks are the default: both judges read them from the results file
        assert c["verdict"] == "regression"
        assert [n for n in c["notes"] if not n.startswith("Sequential run, look ")] == []

        # main's A/A checks keep blocking: the drift guard reports it, in both
        main = project.clone("main-history")
        fp = json.loads((main / "baseline.json").read_text())["agent"]["fingerprint"]
        lines = [{"created_at": f"2026-11-{i + 1:02d}T00:00:00Z", "fingerprint": fp,
                  "pass_rate": 0.0 if i == 3 else 1.0,
                  "verdict": "regression" if i % 2 else "pass"} for i in range(12)]
        (main / "gate-history.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
        sh(main, "git", "add", "gate-history.jsonl")
        sh(main, "git", "commit", "-q", "-m", "history")
        sh(main, "git", "push", "-q", "origin", "main")
        sh(ci, "git", "fetch", "-q", "origin", "main")  # a new CI run checks out afresh
        run = project.gate_ci(ci)
        assert run.code == 0, run.stderr
        c = _same_as_ci(project, ci, run, "gate-history.jsonl")
        assert c["verdict"] == "pass" and c["headline"].startswith("No regression (drift guard)")
        (note,) = [n for n in c["notes"] if not n.startswith("Sequential run, look ")]
        assert note.startswith("Drift guard:") and note in run.summary
