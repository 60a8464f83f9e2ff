"""``gate ci`` end to end: a real git repository (bare origin, main, PR branches), real
``gate run`` baselines, the real CLI in a subprocess, and a fake GitHub REST API on loopback.

The regressions here use the oracle agent: each task's solution calls a shared helper outside
the task directories (``agent/solve.sh``, the checkout's, found through ``$AGENT_HELPER``), so a
PR can break the "agent" without touching a task's digest — the tasks stay comparable (and are
the base branch's anyway), the pass rate drops for real.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from gate.core.results import load_results
from gate.github import MARKER, MARKER_PREFIX
from tests.helpers import ROOT
from tests.helpers.ci import (
    OURS,
    PR,
    REPO,
    TOKEN,
    Project,
    _break_agent,
    _marker_comments,
    _origin,
    make_baseline,
    push_event,
    set_max_turns,
    sh,
    store_baselines,
    touch_agent,
    write_sim_suite,
)
from tests.helpers.fake_github import FakeGitHub
from tests.helpers.process import gate

pytestmark = pytest.mark.slow


# ----- pull requests ------------------------------------------------------------------------

def test_regressed_pr_exits_1_with_one_comment_updated_in_place(project: Project) -> None:
    gh = project.gh
    for i in range(120):  # the gate's comment lands on page 2
        gh.add_comment(PR, f"review chatter {i}")
    ci = project.pr_branch("feature", _break_agent)

    first = project.gate_ci(ci, process=True)  # the pr mode's smoke test: a real process
    assert first.code == 1, first.stderr
    (comment,) = _marker_comments(gh)
    assert first.outputs["verdict"] == "regression"
    assert first.outputs["comment_url"] == comment["html_url"]
    assert first.outputs["comment_id"] == str(comment["id"])
    assert first.outputs["pass_rate"] == "0" and first.outputs["baseline_pass_rate"] == "1"
    # what the comparison could have detected, as outputs (action.yml declares both)
    assert first.outputs["detectable"] in ("true", "false")
    assert first.outputs["resolution"] and first.outputs["resolution"] in first.summary
    assert Path(first.outputs["results_path"]).is_file()
    assert Path(first.outputs["report_path"]).read_text().strip() in comment["body"]
    assert "::error title=agent-gate%3A regression::" in first.stdout
    # the same report goes to the step summary
    assert first.summary.strip() and first.summary.strip()[:200] in comment["body"]
    assert "label" in comment["body"]  # tells a maintainer how to accept it
    first.no_secrets(gh)

    second = project.gate_ci(ci)
    assert second.code == 1
    assert len(_marker_comments(gh)) == 1 and len(gh.comments[PR]) == 121
    # one comment ever created; each run set it to "running" first, then to its verdict
    assert len(gh.calls("POST", "/comments")) == 1
    assert len(gh.calls("PATCH", "/issues/comments/")) == 3
    pages = {r.query.get("page", ["1"])[0] for r in gh.calls("GET", "/comments")}
    assert "2" in pages
    assert second.outputs["comment_id"] == first.outputs["comment_id"]
    # every call carried the token and GitHub's API headers
    assert all(r.headers["authorization"] == f"Bearer {TOKEN}" for r in gh.requests)
    assert all(r.headers["x-github-api-version"] == "2022-11-28" for r in gh.requests)


def test_accept_label_counts_only_from_a_user_with_write_permission(project: Project) -> None:
    """Who added the label comes from the PR's events, their permission from the API: a
    reader's label is ignored, visibly; a maintainer's accepts, and the comment says who."""
    gh = project.gh
    gh.collaborators["alice"] = "maintain"
    gh.label(PR, "gate:accept-regression", by="bob")  # bob can only read
    ci = project.pr_branch("feature", _break_agent)
    ignored = project.gate_ci(ci)  # the payload has no label: the live labels count
    assert ignored.code == 1, ignored.stderr
    assert ignored.outputs["verdict"] == "regression"
    assert ignored.outputs["accepted"] == "false"
    (comment,) = _marker_comments(gh)
    assert "label was added by **bob**, whose role on this repository is read: **ignored**" \
        in comment["body"]
    assert "Regression accepted" not in comment["body"]
    assert "the gate:accept-regression label was added by bob (read): ignored" \
        in ignored.stdout
    assert gh.calls("GET", f"/issues/{PR}/events") and gh.calls("GET", "/collaborators/bob/")

    gh.unlabel(PR, "gate:accept-regression", by="alice")
    gh.label(PR, "gate:accept-regression", by="alice")  # now a maintainer added it
    run = project.gate_ci(ci)
    assert run.code == 0, run.stderr
    assert run.outputs["verdict"] == "regression" and run.outputs["accepted"] == "true"
    (comment,) = _marker_comments(gh)
    assert "**Regression accepted** by **alice** (maintain)" in comment["body"]
    # titled as what it is: accepted, not a blocking regression (the summary too)
    title = "### ☑️ agent-gate: regression accepted"
    assert title in comment["body"].splitlines() and title in run.summary.splitlines()
    assert "### ❌" not in comment["body"] and "### ❌" in ignored.summary
    assert "::warning title=agent-gate%3A regression (not blocking)::" in run.stdout


def test_a_bots_accept_label_is_ignored(project: Project) -> None:
    project.gh.label(PR, "gate:accept-regression", by="github-actions[bot]")
    ci = project.pr_branch("feature", _break_agent)
    run = project.gate_ci(ci)
    assert run.code == 1, run.stderr
    (comment,) = _marker_comments(project.gh)
    assert "**ignored**" in comment["body"]


def test_no_fail_and_no_comment(project: Project) -> None:
    ci = project.pr_branch("feature", _break_agent)
    run = project.gate_ci(ci, "--no-fail", "--no-comment")
    assert run.code == 0, run.stderr
    assert run.outputs["verdict"] == "regression" and run.outputs["comment_url"] == ""
    assert not project.gh.calls("POST") and not project.gh.calls("PATCH")


def test_harmless_pr_exits_0(project: Project) -> None:
    ci = project.pr_branch("docs", lambda w: (w / "README.md").write_text("# agent\n"))
    run = project.gate_ci(ci)
    assert run.code == 0, run.stderr
    assert run.outputs["verdict"] == "pass" and run.outputs["baseline_edited"] == "false"
    (comment,) = _marker_comments(project.gh)
    assert "edits `baseline.json`" not in comment["body"]
    run.no_secrets(project.gh)


def test_pr_that_edits_baseline_is_judged_against_the_base_branch(project: Project) -> None:
    def cheat(work: Path) -> None:
        _break_agent(work)
        make_baseline(work)  # a baseline where everything fails: the PR would "pass" on it

    ci = project.pr_branch("cheat", cheat)
    run = project.gate_ci(ci)
    assert run.code == 1, run.stderr
    assert run.outputs["baseline_edited"] == "true"
    (comment,) = _marker_comments(project.gh)
    assert "This PR edits `baseline.json`" in comment["body"]
    assert "cannot move its own yardstick" in run.summary


def test_shallow_checkout_fetches_the_base_and_asks_github_for_the_files(
        project: Project) -> None:
    project.gh.files[PR] = ["agent/solve.sh", "baseline.json"]
    ci = project.pr_branch("shallow", _break_agent, depth=1)
    assert "origin/main" not in sh(ci, "git", "branch", "-r")
    run = project.gate_ci(ci)
    assert run.code == 1, run.stderr
    assert "origin/main" in sh(ci, "git", "branch", "-r")
    assert project.gh.calls("GET", f"/pulls/{PR}/files")
    assert run.outputs["baseline_edited"] == "true"


def test_missing_baseline_on_the_base_branch_exits_3(project: Project) -> None:
    """With ``[ci] judge = "baseline"``; the default (auto) judges by a same-job A/B instead
    (tests/ci/test_ab.py)."""
    seed = project.tmp / "seed"
    with (seed / "gate.toml").open("a") as fh:
        fh.write('\n[ci]\njudge = "baseline"\n')
    sh(seed, "git", "rm", "-q", "baseline.json")
    sh(seed, "git", "commit", "-q", "-am", "drop baseline")
    sh(seed, "git", "push", "-q", "origin", "main")
    ci = project.pr_branch("feature", lambda w: (w / "README.md").write_text("x\n"))
    run = project.gate_ci(ci)
    assert run.code == 3
    assert "no baseline.json on the base branch main" in run.stderr
    assert run.outputs["verdict"] == "unmeasurable"
    (comment,) = _marker_comments(project.gh)
    assert "unmeasurable" in comment["body"]


def test_fork_pr_without_a_key_exits_3_or_skips(project: Project) -> None:
    def builtin(work: Path) -> None:
        toml = (work / "gate.toml").read_text().replace('kind = "oracle"', 'kind = "builtin"')
        (work / "gate.toml").write_text(toml)

    ci = project.pr_branch("from-fork", builtin)
    event = project.event(ci, head_repo="stranger/agent")
    run = project.gate_ci(ci, event_path=event, env={"ANTHROPIC_API_KEY": ""})
    assert run.code == 3
    assert "comes from the fork stranger/agent" in run.stderr
    assert "no ANTHROPIC_API_KEY" in run.stderr
    assert not project.gh.calls("POST")  # a fork's token cannot comment: not even tried

    skipped = project.gate_ci(ci, "--fork-without-key", "skip", event_path=event,
                              env={"ANTHROPIC_API_KEY": ""})
    assert skipped.code == 0
    assert skipped.outputs["verdict"] == "skipped"
    assert "skipped" in skipped.summary


def test_a_dependabot_pr_without_a_key_gets_advice_that_applies_to_it(
        project: Project) -> None:
    """Dependabot's runs get Dependabot secrets only: the way out is one of those (or
    skipping its PRs), not "push the branch" or the fork pattern, which fit neither."""
    def builtin(work: Path) -> None:
        toml = (work / "gate.toml").read_text().replace('kind = "oracle"', 'kind = "builtin"')
        (work / "gate.toml").write_text(toml)

    ci = project.pr_branch("dependabot/pip/anthropic-9", builtin)
    bot = {"ANTHROPIC_API_KEY": "", "GITHUB_ACTOR": "dependabot[bot]"}
    run = project.gate_ci(ci, env=bot)
    assert run.code == 3 and run.outputs["verdict"] == "unmeasurable"  # never a silent pass
    for text in (run.stderr, run.summary):
        assert "opened by Dependabot" in text and "Dependabot secret" in text
        assert "fork-without-key: skip" in text
        assert "pushing the branch" not in text and "fork PRs" not in text
    skipped = project.gate_ci(ci, "--fork-without-key", "skip", env=bot)
    assert skipped.code == 0 and skipped.outputs["verdict"] == "skipped"
    assert "Dependabot secret" in skipped.summary and "fork PRs" not in skipped.summary


def _bump_an_action(work: Path) -> None:  # what the scaffold's dependabot.yml opens weekly
    wf = work / ".github" / "workflows" / "agent-gate.yml"
    wf.parent.mkdir(parents=True, exist_ok=True)
    wf.write_text("# uses: actions/checkout@<a newer sha>\n")


def test_a_secretless_pr_that_changes_nothing_under_test_is_skipped_and_says_why(
        sim_project: Project) -> None:
    """Dependabot bumping a pinned action, or a fork's docs fix, leaves the agent as the
    baseline measured it (the builtin agent's fingerprint covers all it does): with no key it
    is skipped with the reason, exit 0, whatever fork_without_key says. A change to the agent
    is still unmeasurable without a key (exit 3)."""
    bot = {"ANTHROPIC_API_KEY": "", "GITHUB_ACTOR": "dependabot[bot]"}
    ci = sim_project.pr_branch("dependabot/github_actions/bump", _bump_an_action)
    run = sim_project.gate_ci(ci, env=bot)
    assert run.code == 0 and run.outputs["verdict"] == "skipped", run.stderr
    for text in (run.summary, run.outputs["reason"]):
        assert "Nothing under test changed" in text and "fingerprint" in text, text
    assert "Dependabot secret" not in run.summary  # nothing to add: nothing needed running
    fork = sim_project.pr_branch("docs-from-fork", lambda w: (w / "NOTES.md").write_text("x\n"))
    run = sim_project.gate_ci(fork, event_path=sim_project.event(fork, head_repo="stranger/a"),
                              env={"ANTHROPIC_API_KEY": ""})
    assert run.code == 0 and "Nothing under test changed" in run.summary, run.stderr
    # the agent changed (max_turns): without a key that is never a pass
    changed = sim_project.pr_branch("dependabot/and-the-agent",
                                    lambda w: (_bump_an_action(w), set_max_turns(w, 9)))
    run = sim_project.gate_ci(changed, env=bot)
    assert run.code == 3 and run.outputs["verdict"] == "unmeasurable", run.stderr
    assert "opened by Dependabot" in run.stderr


def test_a_bump_that_changes_the_builtin_agents_code_is_measured_not_skipped(
        tmp_path: Path) -> None:
    """main's baseline was measured by an older gate whose builtin agent ran other code (its
    tools differ by a line): a Dependabot bump of the gate's action brings this release's tool
    loop, so the agent under test is not the baseline's. Without a key that is unmeasurable
    (exit 3), never "Nothing under test changed"."""
    older = tmp_path / "older"
    shutil.copytree(ROOT / "gate", older / "gate", ignore=shutil.ignore_patterns("__pycache__"))
    with (older / "gate" / "agents" / "_tools.py").open("a") as fh:
        fh.write("\n# the tools as an older release shipped them\n")
    seed = tmp_path / "seed"
    seed.mkdir()
    sh(seed, "git", "init", "-q", "-b", "main")
    write_sim_suite(seed)
    by_older = {"PYTHONPATH": str(older)}  # the real CLI, as that release ran it
    for args in (("run", "--sim", "-o", "results.json"), ("baseline", "results.json")):
        p = gate(*args, cwd=seed, env=by_older)
        assert p.returncode == 0, p.stderr
    base = json.loads((seed / "baseline.json").read_text())["agent"]
    with FakeGitHub(REPO, token=TOKEN) as gh:
        project = Project(tmp_path, _origin(tmp_path, seed), gh)
        ci = project.pr_branch("dependabot/github_actions/bump", _bump_an_action)
        bot = {"ANTHROPIC_API_KEY": "", "GITHUB_ACTOR": "dependabot[bot]"}
        run = project.gate_ci(ci, env=bot)
    assert run.code == 3 and run.outputs["verdict"] == "unmeasurable", run.stderr
    assert "Nothing under test changed" not in run.summary + run.stderr
    # it says which change it is: the gate's own agent, to re-run with a key
    assert "The gate's agent changed" in run.stderr and "re-run it with a key" in run.stderr
    from gate.agents import agent_kind
    from gate.core.config import load_config
    from gate.core.fingerprint import fingerprint_parts

    now = fingerprint_parts(load_config(ci / "gate.toml"), agent_kind("builtin"))
    assert now["code"] != base["parts"]["code"]  # the one part that differs: the gate's code
    assert {k: v for k, v in now.items() if k != "code"} == {
        k: v for k, v in base["parts"].items() if k != "code"}


def test_a_pr_with_a_key_that_changes_nothing_under_test_runs_nothing(
        sim_project: Project) -> None:
    """A same-repository PR that leaves a self-contained agent exactly as the baseline measured
    it (a README edit) costs nothing: skipped with the reason, exit 0, no run, and a comment
    an earlier push left (here: a regression) is edited to say so, never left standing."""
    gh = sim_project.gh
    gh.add_comment(PR, f"{OURS}\n### ❌ agent-gate: regression\n\nold verdict",
                   user="github-actions[bot]")
    ci = sim_project.pr_branch("docs", lambda w: (w / "README.md").write_text("hi\n"))
    run = sim_project.gate_ci(ci, "--sim", env={"ANTHROPIC_API_KEY": ""})
    assert run.code == 0 and run.outputs["verdict"] == "skipped", run.stderr
    assert "Nothing under test changed" in run.summary and "nothing was run" in run.summary
    assert not (ci / "results.json").exists()
    (comment,) = _marker_comments(gh)
    assert "skipped" in comment["body"] and "old verdict" not in comment["body"]
    assert "ANTHROPIC_API_KEY" not in comment["body"]  # it had one: not the secretless text


def test_only_an_agent_whose_fingerprint_covers_its_code_counts_as_unchanged() -> None:
    """A command agent's code lives outside the fingerprint (only its command line is in it):
    the same fingerprint is not the same agent, so a secretless PR is never skipped for it."""
    from gate.agents import agent_kind

    assert agent_kind("builtin").self_contained and agent_kind("oracle").self_contained
    assert not agent_kind("command").self_contained


def test_fork_pr_that_needs_no_key_runs_but_does_not_comment(project: Project) -> None:
    ci = project.pr_branch("from-fork", _break_agent)  # the oracle agent needs no key
    event = project.event(ci, head_repo="stranger/agent")
    run = project.gate_ci(ci, event_path=event, env={"ANTHROPIC_API_KEY": ""})
    assert run.code == 1, run.stderr
    assert not project.gh.calls("POST") and not project.gh.calls("PATCH")
    assert "token of a pull request from a fork is read-only" in run.stdout
    assert Path(run.outputs["report_path"]).read_text().strip()  # for the upload


def test_same_repo_pr_without_a_key_says_how_to_add_it(project: Project) -> None:
    ci = project.pr_branch("nokey", lambda w: (w / "README.md").write_text("x\n"))
    run = project.gate_ci(ci, "--agent", "builtin", env={"ANTHROPIC_API_KEY": ""})
    assert run.code == 3
    assert "ANTHROPIC_API_KEY is empty" in run.stderr and "sim: true" in run.stderr


def test_a_read_only_token_never_changes_the_verdict(project: Project) -> None:
    """A same-repo Dependabot PR (or a workflow without pull-requests: write) has a read-only
    token: the comment is refused, a warning says why, the verdict decides the exit."""
    project.gh.default.write = False
    dependabot = {"GITHUB_ACTOR": "dependabot[bot]"}
    ci = project.pr_branch("feature", _break_agent)
    run = project.gate_ci(ci, env=dependabot)
    assert run.code == 1, run.stderr
    assert run.outputs["verdict"] == "regression" and run.outputs["exit_code"] == "1"
    assert run.outputs["comment_url"] == ""
    warning = next(ln for ln in run.stdout.splitlines() if ln.startswith("::warning"))
    assert "the PR comment was not posted (the verdict stands)" in warning
    assert "opened by Dependabot, whose runs get a read-only token unless" in warning
    assert "cannot write comments on PR #7 (403)" in warning
    assert "Resource not accessible by integration" in warning
    assert run.summary  # the report still reached the step summary
    assert not _marker_comments(project.gh)
    run.no_secrets(project.gh)

    harmless = project.pr_branch("docs", lambda w: (w / "README.md").write_text("x\n"))
    ok = project.gate_ci(harmless)  # not Dependabot: the cause named is the permission
    assert ok.code == 0, ok.stderr
    assert ok.outputs["verdict"] == "pass"
    assert "the PR comment was not posted (the verdict stands)" in ok.stdout
    assert "add `pull-requests: write`" in ok.stdout and "Dependabot" in ok.stdout


def test_bad_token_is_a_warning_not_a_verdict(project: Project) -> None:
    ci = project.pr_branch("feature", _break_agent)
    run = project.gate_ci(ci, env={"GITHUB_TOKEN": "ghs_not_the_right_one_123"})
    assert run.code == 1, run.stderr
    assert "rejected the token (401)" in run.stdout
    assert "ghs_not_the_right_one_123" not in run.stderr + run.summary


def test_a_marker_comment_someone_else_wrote_is_left_alone(project: Project) -> None:
    """An outsider pastes the marker: the gate neither edits their comment nor exits 2."""
    gh = project.gh
    planted = gh.add_comment(PR, f"{OURS}\nI am the gate now", user="mallory")
    ci = project.pr_branch("feature", _break_agent)
    for _ in range(2):
        run = project.gate_ci(ci)
        assert run.code == 1, run.stderr
    assert planted["body"] == f"{OURS}\nI am the gate now"
    assert not gh.calls("PATCH", f"/issues/comments/{planted['id']}")
    ours = [c for c in _marker_comments(gh) if c["user"]["login"] == "github-actions[bot]"]
    assert len(ours) == 1 and run.outputs["comment_id"] == str(ours[0]["id"])
    assert not gh.calls("GET", "^/user$")  # the Actions token is never asked who it is
    assert "the one github-actions[bot] wrote" in run.stderr


def test_an_app_token_comments_as_the_configured_login(project: Project) -> None:
    gh = project.gh
    app_token = "ghs_app_installation_token_42"
    gh.add_token(app_token, "gate-app[bot]", installation=True)
    bots = gh.add_comment(PR, f"{MARKER}\nold, by the Actions token", user="github-actions[bot]")
    ci = project.pr_branch("feature", _break_agent)
    env = {"GITHUB_TOKEN": app_token, "GATE_COMMENT_AUTHOR": "gate-app[bot]"}
    for _ in range(2):
        run = project.gate_ci(ci, env=env)
        assert run.code == 1, run.stderr
    assert bots["body"].endswith("old, by the Actions token")
    apps = [c for c in _marker_comments(gh) if c["user"]["login"] == "gate-app[bot]"]
    assert len(apps) == 1 and len(gh.calls("POST", "/comments")) == 1
    bad = project.gate_ci(ci, env={**env, "GATE_COMMENT_AUTHOR": "not a login"})
    assert bad.code == 2 and "comment_author" in bad.stderr


def test_the_failure_comment_escapes_what_the_config_says(project: Project) -> None:
    """An error quoting gate.toml (here a baseline path) is posted from the template,
    escaped: no ping, no HTML, no link, no cross-reference."""
    seed = project.tmp / "seed"
    hostile = "@everyone <img src=x onerror=alert(1)> #12 acme/other#3 www.evil.example"
    toml = (seed / "gate.toml").read_text().replace('baseline = "baseline.json"',
                                                     f'baseline = "{hostile}.json"')
    (seed / "gate.toml").write_text(toml + '\n[ci]\njudge = "baseline"\n')  # no A/B
    sh(seed, "git", "commit", "-qam", "a hostile baseline path")
    sh(seed, "git", "push", "-q", "origin", "main")
    ci = project.pr_branch("feature", lambda w: (w / "README.md").write_text("x\n"))
    run = project.gate_ci(ci)
    assert run.code == 3, run.stderr
    (comment,) = _marker_comments(project.gh)
    for body in (comment["body"], run.summary, Path(run.outputs["report_path"]).read_text()):
        assert "unmeasurable" in body and "on the base branch main" in body
        assert "<img" not in body and "&lt;img src=x onerror=alert(1)&gt;" in body
        assert re.search(r"@everyone|(?<!&)#\d|www\.evil", body) is None
        assert "@\u200deveryone" in body and "#\u200d12" in body and "#\u200d3" in body
        assert "[CI run](https://github.example/acme/agent/actions/runs/4242)" in body


def test_5xx_is_retried(project: Project) -> None:
    project.gh.fail_next("GET", "/comments", 502)
    ci = project.pr_branch("feature", _break_agent)
    run = project.gate_ci(ci)
    assert run.code == 1, run.stderr
    assert len(project.gh.calls("GET", "/comments")) == 2
    assert len(_marker_comments(project.gh)) == 1


def test_github_outage_keeps_the_verdict_and_warns(project: Project) -> None:
    project.gh.fail_next("POST", "/comments", 503, times=20, headers={"retry-after": "0"})
    ci = project.pr_branch("feature", _break_agent)
    run = project.gate_ci(ci)
    assert run.code == 1, run.stderr  # the regression still blocks; the outage does not decide
    assert "::warning title=agent-gate::the PR comment was not posted" in run.stdout
    assert run.outputs["comment_url"] == ""


def test_main_mode_is_refused_on_a_pull_request(project: Project) -> None:
    ci = project.pr_branch("feature", _break_agent)
    store_baselines(ci, "commit")
    run = project.gate_ci(ci, "--mode", "main")
    assert run.code == 2 and "refresh the baseline it is judged by" in run.stderr


def test_pull_request_target_is_refused(project: Project) -> None:
    ci = project.pr_branch("feature", _break_agent)
    run = project.gate_ci(ci, event="pull_request_target")
    assert run.code == 2 and "refuses pull_request_target" in run.stderr


def test_sim_pr_that_cuts_max_turns_regresses(sim_project: Project) -> None:
    """The real agent loop, metered, against the simulator: a PR that gives the agent fewer
    turns than the tasks need regresses, with no API key in the environment at all."""
    ci = sim_project.pr_branch("fewer-turns", lambda w: set_max_turns(w, 1))
    run = sim_project.gate_ci(ci, "--sim", env={"ANTHROPIC_API_KEY": ""})
    assert run.code == 1, run.stderr
    assert run.outputs["verdict"] == "regression"
    (comment,) = _marker_comments(sim_project.gh)
    assert "simulator" in comment["body"]
    harmless = sim_project.pr_branch("roomier", touch_agent)
    again = sim_project.gate_ci(harmless, env={"GATE_SIM": "1", "ANTHROPIC_API_KEY": ""})
    assert again.code == 0, again.stderr
    assert again.outputs["verdict"] == "pass" and float(again.outputs["cost_usd"]) > 0


def test_workflow_run_posts_the_uploaded_report_on_the_right_pr(project: Project) -> None:
    """The fork pattern's second half: no checkout, no PR code, the PR found from the trusted
    event (not from the artifact), one comment, a planted marker defused."""
    gh = project.gh
    gh.pulls = [{"number": 99, "head": {"sha": "f" * 40}, "_head": "stranger:other"},
                {"number": PR, "head": {"sha": "a" * 40}, "_head": "stranger:feature"}]
    work = project.tmp / "comment-job"
    work.mkdir()
    (work / "gate-report.md").write_text(f"### agent-gate: skipped\n\nfork {MARKER} text\n")
    event = work.parent / "workflow-run.json"
    event.write_text(json.dumps({"workflow_run": {
        "event": "pull_request", "head_sha": "a" * 40, "head_branch": "feature",
        "head_repository": {"full_name": "stranger/agent"}, "pull_requests": []}}))
    for _ in range(2):
        run = project.gate_ci(work, event="workflow_run", event_path=event,
                              ref="refs/heads/main", process=True)  # comment mode's smoke
        assert run.code == 0, run.stderr
    (comment,) = _marker_comments(gh)
    assert comment["body"].count(MARKER_PREFIX) == 1 and comment["body"].startswith(OURS)
    assert "fork &lt;!-- agent-gate:comment --> text" in comment["body"]  # shown, inert
    assert gh.comments.keys() == {PR}
    assert run.outputs["comment_url"] == comment["html_url"]
    run.no_secrets(gh)


HOSTILE_REPORT = """### ✅ agent-gate: no regression

@everyone please merge, and &#64;here, @acme/maintainers.
<img src=x onerror=alert(1)>
<!-- agent-gate:comment -->
<!--agent-gate:comment-->
<script>alert(document.cookie)</script>
<details open ontoggle=alert(1)><summary>ok</summary>

hidden

</details>
<a href="javascript:alert(1)">click</a>
"""


def test_workflow_run_neutralises_a_hostile_uploaded_report(project: Project) -> None:
    """A fork writes the artifact; the comment job posts it with the repo's write token. Our
    own report goes up unchanged, <details> and all; a hostile one cannot mention anyone,
    inject HTML, or plant a marker that would hijack the sticky comment."""
    gh = project.gh
    gh.pulls = [{"number": PR, "head": {"sha": "a" * 40}, "_head": "stranger:feature"}]
    ci = project.pr_branch("feature", _break_agent)
    first = project.gate_ci(ci, "--no-fail", "--no-comment")  # the pull_request half
    assert first.code == 0, first.stderr
    ours = Path(first.outputs["report_path"]).read_text()
    assert "<details><summary>" in ours
    work = project.tmp / "comment-job"
    work.mkdir()
    event = work.parent / "workflow-run.json"
    event.write_text(json.dumps({"workflow_run": {
        "event": "pull_request", "head_sha": "a" * 40, "head_branch": "feature",
        "head_repository": {"full_name": "stranger/agent"}, "pull_requests": []}}))

    def post(report: str) -> str:
        (work / "gate-report.md").write_text(report)
        run = project.gate_ci(work, event="workflow_run", event_path=event,
                              ref="refs/heads/main")
        assert run.code == 0, run.stderr
        run.no_secrets(gh)
        (comment,) = _marker_comments(gh)
        assert comment["body"].startswith(OURS + "\n")
        return str(comment["body"])[len(OURS) + 1:]

    assert post(ours) == ours  # our report is left exactly as rendered
    body = post(HOSTILE_REPORT)  # the same comment, edited in place
    assert len(gh.comments[PR]) == 1
    assert "<img" not in body and "&lt;img src=x onerror=alert(1)>" in body
    assert "<script" not in body and "&lt;script>" in body and "&lt;/script>" in body
    assert "<a " not in body and "<details open" not in body
    assert "<!--" not in body and body.count("&lt;!--") == 2  # both marker lookalikes inert
    assert re.search(r"@(everyone|here|acme)", body) is None
    assert "@\u200deveryone" in body and "@\u200dhere" in body  # the entity spelling too
    assert "<summary>ok</summary>" in body and "</details>" in body  # our tags still work


def test_failed_pr_run_still_leaves_a_report_to_upload(project: Project) -> None:
    ci = project.pr_branch("from-fork", lambda w: (w / "README.md").write_text("x\n"))
    event = project.event(ci, head_repo="stranger/agent")
    run = project.gate_ci(ci, "--agent", "builtin", event_path=event,
                          env={"ANTHROPIC_API_KEY": ""})
    assert run.code == 3
    report = Path(run.outputs["report_path"]).read_text()
    assert "unmeasurable" in report and "stranger/agent" in report


def test_dispatch_on_a_branch_checks_against_the_default_branch(project: Project) -> None:
    ci = project.pr_branch("experiment", _break_agent)
    event = ci.parent / "dispatch.json"
    event.write_text(json.dumps({"ref": "refs/heads/experiment", "inputs": {},
                                 "repository": {"full_name": REPO, "default_branch": "main"}}))
    run = project.gate_ci(ci, event="workflow_dispatch", event_path=event,
                          ref="refs/heads/experiment", process=True)  # check mode's smoke
    assert run.code == 1, run.stderr
    assert run.outputs["mode"] == "check" and run.outputs["verdict"] == "regression"
    assert not project.gh.requests  # no PR, no comment
    assert "regression" in run.summary


# ----- main ---------------------------------------------------------------------------------

def test_push_to_main_pools_the_baseline_commits_it_and_feeds_the_trend(
        project: Project) -> None:
    main = project.clone("main-ci")
    before = json.loads((main / "baseline.json").read_text())
    event = push_event(main)
    store_baselines(main, "commit")
    for _ in range(2):
        run = project.gate_ci(main, event="push",
                              event_path=event, ref="refs/heads/main",
                              process=True)  # main mode's smoke test: a real process
        assert run.code == 0, run.stderr
        run.no_secrets(project.gh)
    assert run.outputs["mode"] == "main" and run.outputs["verdict"] == "pass"
    assert run.outputs["baseline_commit"]
    check = project.clone("after-refresh")
    log = sh(check, "git", "log", "--format=%an|%s", "-3")
    assert log.splitlines()[0].startswith("github-actions[bot]|gate: refresh baseline.json")
    after = json.loads((check / "baseline.json").read_text())
    assert len(after["runs"]) == 3 * len(before["runs"])  # pooled: same agent fingerprint
    history = (check / "gate-history.jsonl").read_text().splitlines()
    assert len(history) == 2 and json.loads(history[-1])["verdict"] == "pass"
    assert "baseline refreshed on `main`" in run.summary
    assert not project.gh.requests  # main talks to git, not the REST API

    # a PR now sees main's trend in its comment
    ci = project.pr_branch("feature", _break_agent)
    pr_run = project.gate_ci(ci)
    assert pr_run.code == 1, pr_run.stderr
    (comment,) = _marker_comments(project.gh)
    assert "```mermaid" in comment["body"]


def test_push_to_main_can_leave_the_baseline_as_a_file(project: Project) -> None:
    main = project.clone("main-ci")
    head = sh(main, "git", "rev-parse", "HEAD")
    run = project.gate_ci(main, event="push", event_path=push_event(main),
                          ref="refs/heads/main")
    assert run.code == 0, run.stderr
    assert run.outputs["baseline_commit"] == ""
    assert sh(main, "git", "status", "--porcelain", "baseline.json").startswith(" M")
    assert (main / "gate-history.jsonl").is_file()
    assert sh(project.clone("untouched"), "git", "rev-parse", "HEAD") == head


def test_sequential_pr_run_stops_early_on_a_clear_regression(sim_project: Project) -> None:
    """[gate] sequential = true (on main: the PR's own [gate] does not count): 2 runs per task
    first; a clear regression needs no more."""
    main = sim_project.clone("main-seq")
    with (main / "gate.toml").open("a") as fh:
        fh.write("sequential = true\n")
    sh(main, "git", "commit", "-q", "-am", "sequential PR runs")
    sh(main, "git", "push", "-q", "origin", "main")
    ci = sim_project.pr_branch("seq", lambda w: set_max_turns(w, 1))
    run = sim_project.gate_ci(ci, "--sim", env={"ANTHROPIC_API_KEY": ""})
    assert run.code == 1, run.stderr
    results = load_results(ci / "results.json")
    assert {r.replication for r in results.runs} == {0, 1}  # stopped after the first look
    (comment,) = _marker_comments(sim_project.gh)
    assert "2 runs per task were enough" in comment["body"]


def test_drift_guard_reports_a_pass_rate_regression_main_itself_shows(project: Project) -> None:
    """Main's own A/A checks keep blocking (the provider drifts): a PR no worse than main's
    worst recent run is reported, not blocked."""
    main = project.clone("main-history")
    fp = json.loads((main / "baseline.json").read_text())["agent"]["fingerprint"]
    lines = [{"created_at": f"2026-11-{i + 1:02d}T00:00:00Z", "fingerprint": fp,
              "pass_rate": 0.0 if i == 3 else 1.0,
              "verdict": "regression" if i % 2 else "pass"} for i in range(12)]
    (main / "gate-history.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    sh(main, "git", "add", "gate-history.jsonl")
    sh(main, "git", "commit", "-q", "-m", "history")
    sh(main, "git", "push", "-q", "origin", "main")
    ci = project.pr_branch("drifty", _break_agent)
    run = project.gate_ci(ci)
    assert run.code == 0, run.stderr
    assert run.outputs["verdict"] == "pass"
    (comment,) = _marker_comments(project.gh)
    assert "Drift guard" in comment["body"] and "not blocking" in comment["body"]
