"""`gate run --condition`: each (task, condition, replication) a run, interleaved, through the
real CLI on the simulator (docs/skills.md)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from gate.core.results import journal_path, load_results
from gate.execution.runner import Arm, RunOptions, condition_plan
from tests.helpers import ROOT as REPO
from tests.helpers.process import gate
from tests.helpers.suites import RATE, bundled_config, write_task

PLAIN = "fix-version-compare"  # no metadata.json: a negative control (control and full only)


def _files(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())


@pytest.mark.slow  # runs `gate` as a subprocess
def test_run_conditions_end_to_end_with_the_workspaces_they_had(tmp_path: Path) -> None:
    cfg = bundled_config(tmp_path)
    ws = tmp_path / "ws"
    ws.mkdir()
    out = tmp_path / "r.json"
    p = gate("run", "--config", cfg, "--sim", "-k", "1", "-j", "2", "--keep-workspaces",
             "--condition", "control", "--condition", "target", "--condition", "negative",
             "--task", RATE, "--task", PLAIN, "-o", out, env={"TMPDIR": str(ws)})
    assert p.returncode in (0, 1), p.stderr
    assert "Traceback" not in p.stderr
    res = load_results(out)
    assert sorted(r.key for r in res.runs) == sorted([
        (RATE, "control", 0), (RATE, "target", 0), (RATE, "negative", 0), (PLAIN, "control", 0)])
    assert res.schedule is not None and res.schedule.conditions == ["control", "target",
                                                                    "negative"]
    extra = res.model_extra or {}
    # the negative control runs only control (and full): the others are skipped, and listed
    assert extra["skipped_conditions"] == {PLAIN: ["target", "negative"]}
    assert f"task {PLAIN}: conditions target, negative do not apply" in p.stderr
    assert extra["conditions"]["target"]["skills"] == {RATE: ["context-offloading"]}
    assert extra["conditions"]["control"]["skills"] == {RATE: [], PLAIN: []}
    # a condition's run is named by it: its own transcript, its own simulator draws
    assert {Path(r.transcript or "").name for r in res.runs if r.task == RATE} == {
        f"{RATE}-{c}-r0.jsonl" for c in ("control", "target", "negative")}

    def workspace(task: str, condition: str) -> Path:
        found = list(ws.glob(f"gate-{task}-{condition}-r0-*/work"))
        assert len(found) == 1, found
        return found[0]

    # a control workspace has no skill files; a target one only the target skill's
    assert not (workspace(RATE, "control") / ".claude").exists()
    assert not (workspace(PLAIN, "control") / ".claude").exists()
    skills = REPO / "skills"
    target = workspace(RATE, "target") / ".claude"
    assert _files(target) == [f"skills/context-offloading/{f}"
                              for f in _files(skills / "context-offloading")]
    negative = workspace(RATE, "negative") / ".claude"
    assert _files(negative) == [f"skills/git-commit-messages/{f}"
                                for f in _files(skills / "git-commit-messages")]


@pytest.mark.slow  # runs `gate` as a subprocess
def test_an_unknown_condition_is_exit_2_naming_it(tmp_path: Path) -> None:
    cfg = bundled_config(tmp_path, '[conditions.offload-only]\nskills = ["context-offloading"]\n')
    p = gate("run", "--config", cfg, "--sim", "-k", "1", "--task", RATE,
             "--condition", "control", "--condition", "targt", "-o", tmp_path / "r.json")
    assert p.returncode == 2, p.stderr
    assert "unknown condition 'targt'" in p.stderr and "offload-only" in p.stderr, p.stderr
    assert "Traceback" not in p.stderr
    assert not (tmp_path / "r.json").exists()
    # a condition that applies to none of the tasks measures nothing: exit 2 too
    p = gate("run", "--config", cfg, "--sim", "-k", "1", "--task", PLAIN,
             "--condition", "target", "-o", tmp_path / "r.json")
    assert p.returncode == 2 and "applies to none of the selected tasks" in p.stderr, p.stderr


@pytest.mark.slow  # runs `gate` as a subprocess
def test_a_named_condition_overlays_other_agent_settings(tmp_path: Path) -> None:
    cfg = bundled_config(tmp_path, '[conditions.short]\nskills = ["context-offloading"]\n'
                                   '[conditions.short.agent]\nmax_turns = 2\n')
    out = tmp_path / "r.json"
    p = gate("run", "--config", cfg, "--sim", "-k", "1", "--task", RATE, "--no-transcripts",
             "--condition", "control", "--condition", "short", "-o", out)
    assert p.returncode in (0, 1), p.stderr
    res = load_results(out)
    runs = {r.condition: r for r in res.runs}
    assert runs["short"].turns <= 2 < runs["control"].turns  # the overlay's turn cap
    rec = (res.model_extra or {})["conditions"]
    assert rec["short"]["overlay"] == ["max_turns"]
    assert rec["short"]["skills"] == {RATE: ["context-offloading"]}
    assert rec["short"]["agent_fingerprint"] != rec["control"]["agent_fingerprint"]
    assert rec["control"]["agent_fingerprint"] == res.agent.fingerprint
    # an overlay may not change the agent's kind: one line naming the field
    bad = bundled_config(tmp_path, '[conditions.other]\n[conditions.other.agent]\n'
                                   'kind = "oracle"\n')
    p = gate("run", "--config", bad, "--sim", "--condition", "other", "-o", out)
    assert p.returncode == 2 and "conditions.other.agent" in p.stderr, p.stderr


def _tasks(n: int, tmp_path: Path) -> list:
    from gate.core.tasks import load_task

    return [load_task(write_task(tmp_path, f"t{i}", verify="true\n")) for i in range(n)]


def test_the_plan_interleaves_conditions_and_balances_which_goes_first(tmp_path: Path) -> None:
    tasks = _tasks(3, tmp_path)
    arms = [Arm(c, None, RunOptions(condition=c)) for c in ("a", "b", "c")]  # type: ignore
    work = condition_plan(tasks, 3, lambda t: arms, first=0)
    assert len(work) == 27
    # the conditions of each (task, replication) run next to each other
    for i in range(0, 27, 3):
        block = work[i:i + 3]
        assert len({(t.id, r) for t, r, _ in block}) == 1
        assert sorted(a.name for _, _, a in block) == ["a", "b", "c"]
    # replication-major, like the plan without conditions
    assert [r for _, r, _ in work] == sorted(r for _, r, _ in work)
    # each condition goes first (and last) equally often: 3 of the 9 blocks each
    firsts = [work[i][2].name for i in range(0, 27, 3)]
    lasts = [work[i + 2][2].name for i in range(0, 27, 3)]
    assert {c: firsts.count(c) for c in "abc"} == {"a": 3, "b": 3, "c": 3}
    assert {c: lasts.count(c) for c in "abc"} == {"a": 3, "b": 3, "c": 3}
    # per task, too: across its replications each condition leads once
    for task in tasks:
        lead = [a.name for k, (t, _, a) in enumerate(work) if t is task and k % 3 == 0]
        assert sorted(lead) == ["a", "b", "c"]
    # a task a condition does not apply to simply has fewer runs
    only = condition_plan(tasks, 1, lambda t: arms[:1] if t is tasks[0] else arms)
    assert [(t.id, a.name) for t, _, a in only][:1] == [("t0", "a")] and len(only) == 7


@pytest.mark.slow
def test_resume_with_conditions_finishes_the_plan_and_refuses_other_conditions(
        tmp_path: Path) -> None:
    cfg = bundled_config(tmp_path)
    args = ["run", "--config", cfg, "--sim", "-k", "2", "-j", "1", "--no-transcripts",
            "--task", RATE, "--task", PLAIN, "--condition", "control", "--condition", "target"]
    full = tmp_path / "full.json"
    p = gate(*args, "-o", full)
    assert p.returncode in (0, 1), p.stderr
    out = tmp_path / "r.json"
    # as if killed after two runs: the journal keeps its header and two runs (the journal
    # names no output file, so the whole run's, cut short, is the killed run's)
    journal = journal_path(out)
    lines = journal_path(full).read_text().splitlines(keepends=True)
    journal.write_text("".join(lines[:3]))
    p = gate(*args, "-o", out, "--resume")
    assert p.returncode in (0, 1), p.stderr
    assert "resuming: 2 runs kept from the journal, 4 to run" in p.stderr, p.stderr

    def outcomes(path: Path) -> dict:
        return {(r["task"], r["condition"], r["replication"]): (r["status"], r["turns"])
                for r in json.loads(path.read_text())["runs"]}

    assert outcomes(out) == outcomes(full) and len(outcomes(out)) == 6
    p = gate("run", "--config", cfg, "--sim", "-k", "2", "-j", "1", "--no-transcripts",
             "--task", RATE, "--task", PLAIN, "--condition", "control", "-o", out, "--resume")
    assert p.returncode == 2 and "cannot resume: not the same conditions" in p.stderr, p.stderr


def _journal_keys(path: Path) -> list[tuple[str, str | None, int]]:
    lines = path.read_text().splitlines()
    return [(o["run"]["task"], o["run"]["condition"], o["run"]["replication"])
            for o in map(json.loads, lines[1:]) if o.get("type") == "run"]


@pytest.mark.slow
def test_a_conditions_run_killed_midway_resumes_with_no_run_lost_or_repeated(
        tmp_path: Path) -> None:
    """The conditions are arms of one session: a real SIGKILL halfway through, then
    ``--resume``, ends with each (task, condition, replication) exactly once, the killed
    run's runs kept, and the outcomes of the run that was never interrupted."""
    import subprocess
    import sys
    import time

    cfg = bundled_config(tmp_path)
    args = ["run", "--config", cfg, "--sim", "--seed", "5", "-k", "2", "-j", "1",
            "--no-transcripts", "--task", RATE, "--task", PLAIN,
            "--condition", "control", "--condition", "target"]
    full = tmp_path / "full.json"
    p = gate(*args, "-o", full)
    assert p.returncode in (0, 1), p.stderr
    expected = sorted(_journal_keys(journal_path(full)))
    assert len(expected) == 6  # RATE: control and target; PLAIN: control only; twice each

    out = tmp_path / "r.json"
    journal = journal_path(out)
    proc = subprocess.Popen([sys.executable, "-m", "gate", *map(str, args), "-o", str(out)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and proc.poll() is None:
        if journal.exists() and len(_journal_keys(journal)) >= 2:
            break
        time.sleep(0.02)
    proc.kill()  # SIGKILL: nothing is tidied up
    proc.wait(timeout=30)
    landed = _journal_keys(journal)
    assert 2 <= len(landed) < 6, landed  # killed halfway
    left = load_results(out)
    assert left.interrupted is not None and "incomplete" in left.interrupted.reason

    p = gate(*args, "-o", out, "--resume")
    assert p.returncode in (0, 1), p.stderr
    assert f"resuming: {len(landed)} runs kept from the journal, {6 - len(landed)} to run" \
        in p.stderr, p.stderr
    journaled = _journal_keys(journal)
    assert sorted(journaled) == expected  # none lost, none twice
    assert journaled[:len(landed)] == landed  # the killed run's runs kept, not redone
    done = load_results(out)
    assert done.interrupted is None
    assert sorted(r.key for r in done.runs) == expected

    def outcomes(path: Path) -> dict:
        return {(r["task"], r["condition"], r["replication"]):
                (r["status"], r["turns"], r["usage"], r["cost_usd"])
                for r in json.loads(path.read_text())["runs"]}

    assert outcomes(out) == outcomes(full)


def _probe_run(tmp_path: Path, sandbox: str) -> dict[str, list[str]]:
    """`gate run --agent oracle --condition control --condition target` on a task whose
    solution lists the workspace's skills and probes the repository's skills/ folder by its
    absolute path; what each condition's run saw."""
    host_skill = tmp_path / "skills" / "context-offloading" / "SKILL.md"  # [agent].skills
    write_task(tmp_path / "tasks", "probe", verify="test -s seen.txt\n",
               solve=("find .claude -type f 2>/dev/null | sort > seen.txt\n"
                      f"if test -e '{host_skill}'; then echo HOST-SKILLS-VISIBLE >> seen.txt; "
                      "fi\necho done >> seen.txt\n"),
               extra={"metadata.json": json.dumps({"target_skill": "context-offloading",
                                                   "irrelevant_skill": "git-commit-messages"})})
    image = os.environ.get("GATE_TEST_IMAGE", "gate-test-base:bookworm")
    cfg = tmp_path / "gate.toml"
    shutil.copytree(REPO / "skills", tmp_path / "skills")  # [agent] paths: gate.toml's folder
    cfg.write_text('[agent]\nkind = "oracle"\nskills = "skills"\n'
                   f'[suite]\ntasks = "{tmp_path / "tasks"}"\nsandbox = "{sandbox}"\n'
                   f'image = "{image}"\n')
    ws = tmp_path / "ws"
    ws.mkdir()
    p = gate("run", "--config", cfg, "-k", "1", "--keep-workspaces", "--no-transcripts",
             "--condition", "control", "--condition", "target", "-o", tmp_path / "r.json",
             env={"TMPDIR": str(ws)})
    assert p.returncode == 0, p.stderr
    seen = {}
    for condition in ("control", "target"):
        (found,) = ws.glob(f"gate-probe-{condition}-r0-*/work/seen.txt")
        seen[condition] = found.read_text().split()
    return seen


@pytest.mark.slow  # runs `gate` as a subprocess
def test_local_sandbox_conditions_get_their_skills_but_cannot_hide_the_repository(
        tmp_path: Path) -> None:
    seen = _probe_run(tmp_path, "local")
    assert not any(f.startswith(".claude") for f in seen["control"])
    assert ".claude/skills/context-offloading/SKILL.md" in seen["target"]
    assert not any("git-commit-messages" in f for f in seen["target"])
    # documented (docs/skills.md): the local sandbox runs as the gate's user, so an agent can
    # read the checkout's skills/ by its absolute path, whatever its condition
    assert "HOST-SKILLS-VISIBLE" in seen["control"]


@pytest.mark.docker
@pytest.mark.slow
def test_docker_sandbox_conditions_cannot_reach_the_repositorys_skills(
        engine: None, tmp_path: Path) -> None:
    seen = _probe_run(tmp_path, "docker")
    assert not any(f.startswith(".claude") for f in seen["control"])
    assert ".claude/skills/context-offloading/SKILL.md" in seen["target"]
    assert not any("git-commit-messages" in f for f in seen["target"])
    # only the workspace is mounted: the repository's skills/ is not there, in any condition
    assert "HOST-SKILLS-VISIBLE" not in seen["control"] + seen["target"]
    assert seen["control"][-1] == "done"  # the probe ran to its end


@pytest.mark.slow  # runs `gate` as a subprocess
def test_without_a_condition_every_run_gets_every_configured_skill(tmp_path: Path) -> None:
    cfg = bundled_config(tmp_path)
    ws = tmp_path / "ws"
    ws.mkdir()
    out = tmp_path / "r.json"
    p = gate("run", "--config", cfg, "--sim", "-k", "1", "--keep-workspaces",
             "--no-transcripts", "--task", PLAIN, "-o", out, env={"TMPDIR": str(ws)})
    assert p.returncode in (0, 1), p.stderr
    res = load_results(out)
    assert [r.condition for r in res.runs] == [None]
    assert (res.model_extra or {})["skills"] == ["context-offloading", "git-commit-messages"]
    (work,) = ws.glob(f"gate-{PLAIN}-r0-*/work")
    assert sorted(p.name for p in (work / ".claude" / "skills").iterdir()) == [
        "context-offloading", "git-commit-messages"]


@pytest.mark.slow
def test_shards_of_a_conditions_run_merge_into_the_whole_run(tmp_path: Path) -> None:
    cfg = bundled_config(tmp_path)
    args = ["run", "--config", cfg, "--sim", "-k", "1", "--no-transcripts", "--task", RATE,
            "--task", PLAIN, "--condition", "control", "--condition", "target"]
    parts = []
    for i in (1, 2):
        part = tmp_path / f"s{i}.json"
        p = gate(*args, "--shard", f"{i}/2", "-o", part)
        assert p.returncode in (0, 1), p.stderr
        parts.append(part)
    merged = tmp_path / "m.json"
    # one shard holds only the negative control (control runs only): still the same run
    p = gate("merge", merged, *parts)
    assert p.returncode == 0, p.stderr
    res = load_results(merged)
    assert sorted(r.key for r in res.runs) == sorted([
        (RATE, "control", 0), (RATE, "target", 0), (PLAIN, "control", 0)])
    extra = res.model_extra or {}
    assert extra["conditions"]["control"]["skills"] == {RATE: [], PLAIN: []}
    assert extra["skipped_conditions"] == {PLAIN: ["target"]}
    p = gate("compare", merged, "--conditions", "control,target")
    assert p.returncode == 0 and "target vs control on 1 task" in p.stdout, p.stderr


@pytest.mark.slow  # runs `gate` as a subprocess
def test_a_run_of_conditions_only_against_a_plain_baseline_says_what_to_do(
        tmp_path: Path) -> None:
    """The baseline gate compares the runs with no condition: a run that holds none is told so,
    with what to do, not left with "0 of N tasks comparable (this run: no run)"."""
    cfg = bundled_config(tmp_path)
    base, pr = tmp_path / "base.json", tmp_path / "pr.json"
    tasks = ("--task", RATE, "--task", PLAIN)
    p = gate("run", "--config", cfg, "--sim", "-k", "1", "--no-transcripts", *tasks, "-o", base)
    assert p.returncode in (0, 1), p.stderr
    p = gate("run", "--config", cfg, "--sim", "-k", "1", "--no-transcripts", *tasks,
             "--condition", "control", "--condition", "target", "-o", pr)
    assert p.returncode in (0, 1), p.stderr
    p = gate("compare", "--config", cfg, base, pr)
    assert p.returncode == 3, p.stdout + p.stderr
    assert "Traceback" not in p.stderr
    headline = p.stdout.splitlines()[0]
    assert headline == (
        "Inconclusive: this run holds only skill-condition runs (control, target): the baseline "
        "gate compares runs with no condition; run without --condition, or compare the "
        "conditions with each other (gate compare RESULTS --conditions control,target; "
        "docs/skills.md)"), p.stdout
    assert p.stdout.splitlines()[1] == "Why: this run holds only skill-condition runs", p.stdout
    assert "no run" not in p.stdout and "comparable (need" not in p.stdout, p.stdout
    # the other way round: a baseline of conditions only is named as the baseline
    p = gate("compare", "--config", cfg, pr, base)
    assert p.returncode == 3, p.stdout + p.stderr
    assert p.stdout.startswith("Inconclusive: the baseline holds only skill-condition runs "
                               "(control, target):"), p.stdout
    # both: said of both
    p = gate("compare", "--config", cfg, pr, pr)
    assert "Traceback" not in p.stderr
    assert p.stdout.startswith("Inconclusive: this run and the baseline hold only "
                               "skill-condition runs (control, target):"), p.stdout
