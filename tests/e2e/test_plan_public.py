"""The plan is public and checked, through the real CLI (gate/compare/_plancheck.py).

A real ``gate run --sim`` of three bundled tasks (4 runs each), cut to the runs the plan gives
from the bundled baseline.json and the plan recorded (tests/helpers/planned.py): ``gate
compare`` judges it and every view (the comment, the text, the terminal, ``gate report``'s
page) says how the runs were spread. A copy whose plan was edited to give more runs to a task
the PR passed, and one missing a planned run without a record of why, are refused: exit 2,
one line naming the file and the field. The same missing run listed in
``interrupted.missing`` is judged; the run without a plan is judged as before.
"""

from __future__ import annotations

import html
import json
import os
import pty
import select
import subprocess
import sys
from pathlib import Path

import pytest

from gate.core.results import Interruption, MissingRun, Results, load_results, write_results
from tests.helpers import ROOT
from tests.helpers.planned import write_planned
from tests.helpers.process import gate
from tests.helpers.simruns import sim_run

pytestmark = pytest.mark.slow

#: the bundled baseline's 9 runs a task: passed 9, 8 and 4 (the last gets the fewest runs)
TASKS = ("fix-version-compare", "fix-slugify-whitespace", "robust-env-parser")
BASELINE = ROOT / "baseline.json"
#: how every view's spread line starts (the bands' words and runs are the rule's)
LEAD = "Runs per task by the plan (by-pass-rate v"


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The real run (4 runs a task, the plan's most) and its planned copy, planned.json."""
    tmp = tmp_path_factory.mktemp("plan")
    proc = sim_run(tmp, "pr", 1, tasks=TASKS, k=4)
    out, err = proc.communicate(timeout=280)
    assert proc.returncode in (0, 1, 3), out + err
    write_planned(tmp / "pr.json", BASELINE, tmp / "planned.json")
    return tmp


def _compare(tmp: Path, name: str, *args: str) -> subprocess.CompletedProcess[str]:
    return gate("compare", "--config", ROOT / "gate.toml", BASELINE, tmp / name, *args,
                cwd=tmp, env={"COLUMNS": "400"})


def _refused(p: subprocess.CompletedProcess[str], name: str) -> str:
    assert p.returncode == 2, p.stdout + p.stderr
    assert "Traceback" not in p.stderr
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and name in lines[0], p.stderr
    return lines[0]


def _write(tmp: Path, name: str, res: Results) -> None:
    write_results(tmp / name, res)


def test_a_plan_edited_to_give_more_runs_to_a_task_the_pr_passed_is_refused(run: Path) -> None:
    full, planned = load_results(run / "pr.json"), load_results(run / "planned.json")
    assert planned.plan is not None
    looks = {t: p.looks[0] for t, p in planned.plan.tasks.items()}
    assert max(looks.values()) == 4 and looks["robust-env-parser"] < 4, looks
    # the task the plan gave fewest runs: give it all four and keep the ones the PR passed
    task, n = "robust-env-parser", looks["robust-env-parser"]
    passed = sum(1 for r in full.runs if r.task == task and r.status == "passed")
    assert passed >= 1, "the simulated PR passed none of the task's runs"
    tasks = {**planned.plan.tasks, task: planned.plan.tasks[task].model_copy(
        update={"looks": [4]})}
    runs = [r for r in planned.runs if r.task != task] + [r for r in full.runs if r.task == task]
    _write(run, "edited.json", planned.model_copy(update={
        "runs": runs, "plan": planned.plan.model_copy(update={"tasks": tasks})}))
    line = _refused(_compare(run, "edited.json"), "edited.json")
    assert (f"plan.tasks.{task}.looks: 4 recorded, the baseline gives {n} (passed 4 of 9"
            in line), line
    # the same runs with the plan left as it was: runs beyond it
    _write(run, "beyond.json", planned.model_copy(update={"runs": runs}))
    line = _refused(_compare(run, "beyond.json"), "beyond.json")
    assert f"replication: robust-env-parser #{n} is beyond the plan" in line, line


def test_a_planned_run_missing_is_refused_unless_the_file_says_why(run: Path) -> None:
    planned = load_results(run / "planned.json")
    gone = next(r for r in planned.runs if r.task == "fix-slugify-whitespace")
    runs = [r for r in planned.runs if r is not gone]
    _write(run, "missing.json", planned.model_copy(update={"runs": runs}))
    line = _refused(_compare(run, "missing.json"), "missing.json")
    assert (f"plan.tasks.fix-slugify-whitespace: planned run {gone.key} (look 1) is missing, "
            "and the file does not say why") in line, line
    stopped = planned.model_copy(update={"runs": runs, "interrupted": Interruption(
        reason="budget: --max-cost reached",
        missing=[MissingRun(task=gone.task, replication=gone.replication)])})
    _write(run, "stopped.json", stopped)
    p = _compare(run, "stopped.json", "--format", "json")
    assert p.returncode in (0, 1, 3), p.stdout + p.stderr
    assert json.loads(p.stdout)["plan"]["runs_in_look"] == [len(planned.runs)]


def test_the_run_without_a_plan_is_judged_as_before(run: Path) -> None:
    p = _compare(run, "pr.json", "--format", "json")
    assert p.returncode in (0, 1, 3), p.stdout + p.stderr
    assert json.loads(p.stdout)["plan"] is None
    p = _compare(run, "pr.json", "--format", "markdown")
    assert "by the plan" not in p.stdout


def _terminal(tmp: Path, name: str) -> str:
    """``gate compare`` on a terminal (rich's view): what it printed."""
    master, slave = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "gate", "compare", "--config",
                             str(ROOT / "gate.toml"), str(BASELINE), str(tmp / name)],
                            cwd=tmp, stdout=slave, stderr=subprocess.PIPE,
                            env={**os.environ, "COLUMNS": "400", "TERM": "xterm"})
    os.close(slave)
    chunks: list[bytes] = []
    while True:
        ready, _, _ = select.select([master], [], [], 60)
        if not ready:
            break
        try:
            chunk = os.read(master, 65536)
        except OSError:
            break
        if not chunk:
            break
        chunks.append(chunk)
    proc.wait(timeout=60)
    os.close(master)
    assert proc.stderr is not None
    err = proc.stderr.read().decode()
    proc.stderr.close()
    assert proc.returncode in (0, 1, 3), err
    return b"".join(chunks).decode(errors="replace")


def test_every_view_says_how_the_runs_were_spread(run: Path) -> None:
    tests = "The pass-rate tests condition on the plan"
    planned = load_results(run / "planned.json")
    assert planned.plan is not None
    p = _compare(run, "planned.json")  # not a terminal: the plain text
    assert p.returncode in (0, 1, 3), p.stdout + p.stderr
    spread = next(line for line in p.stdout.splitlines() if line.startswith(LEAD))
    # per band: tasks × runs, the runs of the look; the same line in every view
    n = len(planned.runs)
    assert spread.endswith(f"; {n} runs in look 1."), spread
    for t in planned.plan.tasks.values():
        assert f" × {t.looks[0]}" in spread and t.basis.split(": ")[1] not in spread, spread
    assert p.stdout.count(LEAD) == 1 and tests in p.stdout, p.stdout
    p = _compare(run, "planned.json", "--format", "markdown")
    body = p.stdout
    version = planned.plan.version
    assert (f"<details><summary>Runs: {n} runs planned (by-pass-rate v{version})</summary>"
            in body)
    section = body.split("<summary>Runs:", 1)[1].split("</details>", 1)[0]
    assert html.unescape(section).count(spread) == 1 and tests in section, section
    assert LEAD not in body.split("<details>", 1)[0]  # never on the first screen
    screen = " ".join(_terminal(run, "planned.json").split())
    assert screen.count(spread) == 1 and tests in screen, screen
    page = run / "report.html"
    p = gate("report", run / "planned.json", "--baseline", BASELINE, "--config",
             ROOT / "gate.toml", "--html", page, cwd=run)
    assert p.returncode == 0, p.stdout + p.stderr
    text = " ".join(html.unescape(page.read_text()).split())
    assert text.count(spread) == 1 and tests in text
    robust = planned.plan.tasks["robust-env-parser"]
    assert (f"<td>robust-env-parser</td><td>{robust.looks[0]}</td><td>{robust.basis}</td>"
            in text)
