"""Issue 9, item 11: an interrupted run says so, and can never become the baseline."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from gate.compare._synthetic import reference_rates, synthetic_results
from gate.core.results import load_results, write_results
from tests.helpers.process import gate

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_sigterm_mid_run_marks_the_file_and_gate_baseline_refuses_it(
        make_task, suite_dir: Path, tmp_path: Path) -> None:
    for name in ("a", "b", "c"):
        make_task(name)
    started = tmp_path / "b-started"
    cfg = tmp_path / "gate.toml"
    # a finishes at once; b hangs until the gate is stopped
    cfg.write_text(
        '[agent]\nkind = "command"\n'
        f'command = "if [ \\"$GATE_TASK_ID\\" = b ]; then touch {started}; sleep 120; fi; '
        'echo hi > hello.txt"\n'
        f'[suite]\ntasks = "{suite_dir}"\n')
    out = tmp_path / "r.json"
    proc = subprocess.Popen([sys.executable, "-m", "gate", "run", "--config", str(cfg), "--sim",
                             "-k", "2", "-j", "1", "-o", str(out)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while not started.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert started.exists(), "task b never started"
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err

    data = json.loads(out.read_text())
    assert [(r["task"], r["replication"]) for r in data["runs"]] == [("a", 0)]
    assert "SIGTERM" in data["interrupted"]["reason"]
    # the plan is replication-major: a#0 landed, b#0 was running, the rest never started
    assert data["interrupted"]["missing"] == [
        {"task": t, "replication": r, "condition": None} for t, r in
        (("b", 0), ("c", 0), ("a", 1), ("b", 1), ("c", 1))]

    # gate baseline refuses it, and writes nothing
    target = tmp_path / "baseline.json"
    p = gate("baseline", out, "--baseline", target)
    assert p.returncode == 2, p.stdout + p.stderr
    assert "interrupted" in p.stderr and "5 planned runs missing" in p.stderr
    assert "cannot become the baseline" in p.stderr and "Traceback" not in p.stderr
    assert not target.exists()

    # gate compare reads it, shows what was measured, and is inconclusive (exit 3)
    complete = {k: v for k, v in data.items() if k != "interrupted"}
    complete["runs"] = [{**data["runs"][0], "task": t, "replication": r}
                        for t in ("a", "b", "c") for r in range(4)]
    full = tmp_path / "full.json"
    full.write_text(json.dumps(complete))
    p = gate("compare", full, out)
    assert p.returncode == 3, p.stdout + p.stderr
    assert "Inconclusive: the candidate run was interrupted" in p.stdout

    # the same file without the field (as files written before it existed) promotes fine
    old = tmp_path / "old.json"
    old.write_text(json.dumps({k: v for k, v in data.items() if k != "interrupted"}))
    p = gate("baseline", old, "--baseline", target)
    assert p.returncode == 0, p.stdout + p.stderr
    assert load_results(target).interrupted is None


def test_old_files_without_the_field_still_load(tmp_path: Path) -> None:
    raw = json.loads((REPO / "baseline.json").read_text())
    raw.pop("interrupted", None)  # as files written before the field was
    old = tmp_path / "old.json"
    old.write_text(json.dumps(raw))
    assert load_results(old).interrupted is None


def test_an_interrupted_candidate_never_passes_or_blocks(tmp_path: Path) -> None:
    """Missing runs are not missing at random (the long runs were in flight): no verdict."""
    from click.testing import CliRunner

    from gate.cli import main

    rng = np.random.default_rng(1)
    rates = reference_rates()
    base, same, broken = (tmp_path / f"{n}.json" for n in ("base", "same", "broken"))
    write_results(base, synthetic_results(rates, 20, rng))
    write_results(same, synthetic_results(rates, 5, rng))
    write_results(broken, synthetic_results([0.0] * 15, 5, rng))
    (tmp_path / "gate.toml").write_text("[gate]\npermutations = 999\npower_simulations = 0\n")
    stopped = {"reason": "interrupted: Ctrl-C or SIGTERM",
               "missing": [{"task": "t00", "replication": 5}]}
    for path, whole_verdict in ((same, 0), (broken, 1)):
        args = ["compare", str(base), str(path), "--config", str(tmp_path / "gate.toml")]
        assert CliRunner().invoke(main, args).exit_code == whole_verdict
        path.write_text(json.dumps({**json.loads(path.read_text()), "interrupted": stopped}))
        res = CliRunner().invoke(main, args)
        assert res.exit_code == 3, res.output
        assert res.stdout.startswith("Inconclusive: the candidate run was interrupted "
                                     "(interrupted: Ctrl-C or SIGTERM) with 1 planned run "
                                     "missing")
        assert ("would block: pass rate" in res.stdout) == (whole_verdict == 1)
    # an interrupted file as the baseline: the same
    res = CliRunner().invoke(main, ["compare", str(broken), str(base)])
    assert res.exit_code == 3 and "the baseline run was interrupted" in res.stdout


def test_the_library_refuses_too() -> None:
    """``promote`` itself (what ``gate ci`` calls on main), not only the CLI's file check."""
    import pytest

    from gate.core.results import Interruption
    from gate.errors import BadInput
    from gate.pool.baseline import promote

    res = synthetic_results(reference_rates(3), 2, np.random.default_rng(0))
    res.interrupted = Interruption(reason="interrupted: Ctrl-C or SIGTERM", missing=[])
    with pytest.raises(BadInput, match="cannot become the baseline"):
        promote(res, None)
