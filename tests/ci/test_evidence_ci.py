"""The comment's evidence through the real ``gate ci``: main's refresh keeps traces next to the
baseline (on the data branch), and a PR's comment shows where its runs part ways with main's.

The built-in agent runs against the simulator, whose behaviour responds to the agent's
configuration: a timestamp in the system prompt changes the prompt's prefix on every request
(no cache hits), and a system prompt that points the agent at a skill file makes it read that
file first — for the one task whose target skill it is — so it runs out of turns.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from gate.core.config import load_config
from gate.core.traces import parse_sidecar
from gate.execution.run import RunRequest, run_suite
from tests.helpers.ci import (
    REPO,
    TOKEN,
    WORDS,
    Project,
    _marker_comments,
    push_event,
    set_max_turns,
    sh,
)
from tests.helpers.fake_github import FakeGitHub

pytestmark = pytest.mark.slow

MAX_TURNS = 4  # the easy tasks take exactly 4 requests in the simulator
# the bundled agent's prompt: long enough to be cached (short prompts never are)
SYSTEM = (Path(__file__).resolve().parents[2] / "agent" / "system.md").read_text()


def _suite(root: Path, max_turns: int = MAX_TURNS) -> None:
    """Answer-style tasks (verify reads the final message too); ``alpha``'s target skill is
    ``alpha-helper``, which the suite does not ship."""
    for word in WORDS:
        d = root / "tasks" / word
        (d / "solution").mkdir(parents=True)
        (d / "task.md").write_text(f"Write `{word}` into out.txt, then answer with the word.\n")
        (d / "task.toml").write_text('difficulty = "easy"\n')
        (d / "verify.sh").write_text(f"set -eu\ngrep -qx {word} out.txt\n"
                                     f"grep -q {word} .runner/final.txt\n")
        (d / "solution" / "solve.sh").write_text(f"echo {word} > out.txt\ncat out.txt\n")
    (root / "tasks" / "alpha" / "metadata.json").write_text(
        json.dumps({"target_skill": "alpha-helper"}))
    (root / "agent").mkdir()
    (root / "agent" / "system.md").write_text(SYSTEM)
    (root / "gate.toml").write_text(
        f'[agent]\nkind = "builtin"\nmodel = "claude-sonnet-5-5"\nmax_turns = {max_turns}\n'
        'system_prompt = "agent/system.md"\n\n'
        '[suite]\ntasks = "tasks"\nreplications = 3\njobs = 3\n\n'
        '[gate]\nbaseline = "baseline.json"\nsequential = false\n\n'
        '[ci]\nbaseline_refresh = "branch"\n')
    (root / ".gitignore").write_text("results.json\n*.transcripts/\ngate-report.md\n")


@pytest.fixture
def refreshed(tmp_path: Path) -> Iterator[Project]:
    """main with a committed baseline, then one real refresh (a push to main) that pools a
    fresh run into it on the data branch, with the traces sidecar next to it."""
    origin = tmp_path / "origin.git"
    sh(tmp_path, "git", "init", "-q", "--bare", "-b", "main", str(origin))
    seed = tmp_path / "seed"
    seed.mkdir()
    sh(seed, "git", "init", "-q", "-b", "main")
    _suite(seed)
    run_suite(RunRequest(config=load_config(seed / "gate.toml"), output=seed / "baseline.json",
                         transcripts=False, sim=True))
    sh(seed, "git", "add", "-A")
    sh(seed, "git", "commit", "-q", "-m", "suite and baseline")
    sh(seed, "git", "remote", "add", "origin", f"file://{origin}")
    sh(seed, "git", "push", "-q", "origin", "main")
    with FakeGitHub(REPO, token=TOKEN) as gh:
        project = Project(tmp_path, origin, gh)
        main = project.clone("main-refresh")
        run = project.gate_ci(main, "--sim", event="push", event_path=push_event(main),
                              ref="refs/heads/main", env={"ANTHROPIC_API_KEY": ""})
        assert run.code == 0, run.stderr
        assert run.outputs["refresh"] == "committed", run.stdout
        yield project


def _data_file(project: Project, rel: str) -> str:
    check = project.clone(f"data-{len(list(project.tmp.iterdir()))}", "agent-gate-data")
    return (check / rel).read_text()


def test_refresh_keeps_redacted_bounded_traces_next_to_the_baseline(refreshed: Project) -> None:
    baseline = json.loads(_data_file(refreshed, "main/baseline.json"))
    assert "turns" in baseline["runs"][0] and "steps" not in json.dumps(baseline)
    traces = parse_sidecar(_data_file(refreshed, "main/baseline.traces.jsonl"))
    # the refresh's own runs (the seed baseline's had no transcripts), 3 per task
    assert sorted(t.task for t in traces) == sorted([w for w in WORDS for _ in range(3)])
    refreshes = {r["refresh"] for r in baseline["runs"]}
    assert len(refreshes) == 2 and {t.refresh for t in traces} < refreshes
    t = traces[0]
    assert t.turns and t.turns[0].calls[0].name == "bash"
    assert all(c.result is None for turn in t.turns for c in turn.calls)  # no tool output
    assert t.steps()[0] == "bash ls" and t.steps()[-1] == "(final answer)"
    text = _data_file(refreshed, "main/baseline.traces.jsonl")
    assert TOKEN not in text and "sk-" not in text


def test_a_timestamp_in_the_system_prompt_shows_where_the_cache_stops_working(
        refreshed: Project) -> None:
    def timestamp(work: Path) -> None:
        (work / "agent" / "system.md").write_text("Current time: {{ now }}\n" + SYSTEM)

    ci = refreshed.pr_branch("timestamp", timestamp)
    run = refreshed.gate_ci(ci, "--sim", env={"ANTHROPIC_API_KEY": ""})
    (comment,) = _marker_comments(refreshed.gh)
    body = comment["body"]
    assert run.outputs["verdict"] == "regression", body
    assert "<details><summary>Evidence: what the runs did" in body
    assert "cache-hit rate regressed: the tasks that moved most" in body
    assert "**Cache writes on every turn from turn 1:** the prompt's prefix changes " \
           "between requests" in body
    # main's runs read the prefix from turn 1 (another run wrote it): so they part there
    assert ("They part at turn 1: the baseline's runs wrote 0 and read 1,089 tokens; this "
            "PR's runs wrote 1,101 and read 0.") in body
    # the moves are the same: the difference is in the tokens
    assert "follow the baseline's common path (4 steps) all the way" in body
    assert "| turn | baseline: input · cache write · cache read · output | this PR |" in body
    # the HTML report shows the baseline's runs as the traces kept next to the baseline
    page = Path(run.outputs["html_report_path"]).read_text()
    # (the refresh's 3 runs of each of 3 tasks; the seed baseline's runs kept no trace)
    assert page.count("the run's trace, as main's refresh kept it") == 9
    assert page.count("no trace kept for this run") == 9
    assert "calls bash" in page


def test_a_prompt_that_breaks_a_task_names_the_step_where_the_runs_part(
        refreshed: Project) -> None:
    def skill_first(work: Path) -> None:
        (work / "agent" / "system.md").write_text(
            SYSTEM + "\nBefore any task, read skills/alpha-helper/SKILL.md with the shell.\n")

    ci = refreshed.pr_branch("skill-first", skill_first)
    run = refreshed.gate_ci(ci, "--sim", env={"ANTHROPIC_API_KEY": ""})
    # a prompt change on the simulator: its pass rate is not judged (exit 3 by [ci]
    # sim_unjudged's default) unless a measured metric blocks (1); the evidence is there either way
    assert run.code in (1, 3), run.stderr
    (comment,) = _marker_comments(refreshed.gh)
    body = comment["body"]
    assert run.code == 1 or "⚪ not judged by the simulator |" in body, body
    # the PR's runs of alpha are the plan's (its band of the baseline's pass rate)
    shown = re.search(r"\*\*alpha\*\* \([56]/6 → 0/([2-7]) passed\)", body)
    assert shown, body
    # the baseline's passing runs looked first; this PR's read the skill file it was told to
    assert re.search(r"\*\*They part at step 1:\*\* the baseline's runs called `bash` \(`ls`\) "
                     r"\((\d) of \1\); this PR's failing runs called `bash` \(`cat`\) "
                     rf"\({shown.group(1)} of {shown.group(1)}\)\.", body)
    assert "- Baseline: `bash` (`ls`) → `bash` (`echo`) → `bash` (`ls`) → final answer" in body
    assert "max\\_turns (4) reached" in body  # how the PR's run ended, escaped
    assert "turn 4 `bash` ls -la →" in body  # its last tool call and result
    assert "**beta**" not in body  # the tasks the prompt did not break have no evidence


def test_a_same_job_ab_compares_with_the_base_arms_own_runs(fresh: Project) -> None:
    """No baseline anywhere: the base arm ran in this job, and its transcripts are the
    baseline's side of the evidence."""
    ci = fresh.pr_branch("fewer-turns", lambda w: set_max_turns(w, 1))
    run = fresh.gate_ci(ci, "--sim", env={"ANTHROPIC_API_KEY": ""})
    assert run.code == 1, run.stderr
    (comment,) = _marker_comments(fresh.gh)
    body = comment["body"]
    assert "same-job A/B against" in body and "No traces are kept" not in body
    assert re.search(r"\*\*They part at step 2:\*\* the baseline's runs called `bash` "
                     r"\(`echo`\) \((\d) of \1\); this PR's failing runs ended stopped "
                     r"\(3 of 3\)\.", body)
