"""Issue 30, item 10: a number the gate would refuse to read is never written, and a price that
cannot be a price is refused before anything runs.

A verifier's score is held, when a run is recorded, to what every reader of a results file
holds it to (``gate._files.json_problem``): one verifier writing ``9007199254740993`` (past
2^53) fails its own run with the reason, instead of a results file that ``gate compare``,
``gate report`` and ``gate baseline`` then refuse (exit 2), blocking a refresh or a merge.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers.harbor import harbor_task
from tests.helpers.process import gate

PAST_2_53 = 9007199254740993


def _readable_by_every_reader(out: Path, tmp_path: Path) -> None:
    """``gate compare``, ``gate report`` and ``gate baseline`` take the file (not exit 2)."""
    p = gate("compare", out, out)
    assert p.returncode != 2, p.stderr
    p = gate("report", out, "--baseline", out, "--html", tmp_path / "report.html")
    assert p.returncode == 0, p.stderr
    p = gate("baseline", out, "--baseline", tmp_path / "baseline.json")
    assert p.returncode == 0, p.stderr


@pytest.mark.slow
def test_a_score_past_2_53_fails_its_run_and_the_results_stay_readable(
        make_task, suite_dir: Path, tmp_path: Path) -> None:
    make_task("huge-score", verify=(
        "mkdir -p .runner\n"
        f'echo \'{{"reward": {PAST_2_53}, "detail": {{"ok": 1}}}}\' > .runner/score.json\n'
        "grep -qx hi hello.txt\n"))
    make_task("fine")
    out = tmp_path / "r.json"
    p = gate("run", "--tasks", suite_dir, "--agent", "oracle", "-k", "1", "-o", out)
    assert p.returncode == 0, p.stderr
    runs = {r["task"]: r for r in json.loads(out.read_text())["runs"]}
    assert runs["fine"]["status"] == "passed"
    bad = runs["huge-score"]
    assert bad["status"] == "failed" and bad.get("score") is None
    assert bad["reason"].startswith("the verifier's score cannot be recorded: score.reward: "
                                    f"{PAST_2_53} is out of range"), bad["reason"]
    assert "cannot be recorded" in p.stderr  # the run says why as it lands
    _readable_by_every_reader(out, tmp_path)


@pytest.mark.docker
@pytest.mark.slow
@pytest.mark.usefixtures("engine")
def test_a_harbor_reward_past_2_53_fails_its_run_and_the_results_stay_readable(
        tmp_path: Path) -> None:
    suite = tmp_path / "suite"
    harbor_task(suite, "huge-reward", test=(
        "#!/bin/bash\n"
        f"echo '{{\"reward\": {PAST_2_53}}}' > /logs/verifier/reward.json\n"))
    out = tmp_path / "r.json"
    p = gate("run", "--tasks", suite, "--agent", "oracle", "-k", "1", "-o", out)
    assert p.returncode == 0, p.stderr
    run = json.loads(out.read_text())["runs"][0]
    assert run["status"] == "failed", run
    assert "/logs/verifier/reward.json: reward: 9007199254740993 is out of range" \
        in run["reason"], run["reason"]
    _readable_by_every_reader(out, tmp_path)


@pytest.mark.slow
def test_a_price_that_is_no_price_is_exit_2_before_any_run(make_task, suite_dir: Path,
                                                           tmp_path: Path) -> None:
    """``input = 1e308`` is finite, so it passed, and ended in an internal error (a cost of
    inf) after the runs had spent; now it is one line naming the file and the field."""
    ran = tmp_path / "ran"
    make_task("t", setup=f"touch {ran}\n", toml='difficulty = "easy"\n')
    cfg = tmp_path / "gate.toml"
    cfg.write_text('[agent]\nkind = "builtin"\nmodel = "claude-sonnet-5-5"\n'
                   '[agent.prices."claude-sonnet-5-5"]\ninput = 1e308\noutput = 15.0\n'
                   f'[suite]\ntasks = "{suite_dir}"\nreplications = 1\n')
    p = gate("run", "--sim", "--config", cfg, "-o", tmp_path / "r.json")
    assert p.returncode == 2, p.stderr
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in p.stderr, p.stderr
    assert str(cfg) in lines[0] or "gate.toml" in lines[0]
    assert 'agent.prices.claude-sonnet-5-5.input' in lines[0], lines[0]
    assert not ran.exists() and not (tmp_path / "r.json").exists()
