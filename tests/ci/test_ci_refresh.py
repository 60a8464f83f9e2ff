"""Main's refresh against real git: a merge that lands while the suite runs, a branch that
keeps moving, a newer agent configuration that landed meanwhile, and a protected branch.

Through the real ``gate ci`` (mode main) on a clone of a bare "origin". What happens on origin
meanwhile is real git too: the oracle agent's helper (called by every task during the suite)
merges a pull request on origin, or a ``git`` wrapper first on PATH moves origin right before
each of the gate's pushes (deterministic: every push races a merge), or origin's
``pre-receive`` hook refuses the push with GitHub's own GH006 message.
"""

from __future__ import annotations

import json
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.ci import (
    TOKEN,
    Project,
    _project,
    make_baseline,
    refresh,
    set_max_turns,
    sh,
)
from tests.helpers.process import user_env

pytestmark = pytest.mark.slow

GH006 = ("error: GH006: Protected branch update failed for refs/heads/main.\n"
         "error: Changes must be made through a pull request.\n")


def origin(project: Project, *args: str) -> str:
    return sh(project.tmp, "git", "--git-dir", str(project.origin), *args).strip()


def runs_in(project: Project, rev: str) -> int:
    return len(json.loads(origin(project, "show", rev))["runs"])


def executable(path: Path, text: str) -> Path:
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return path


def merge_script(project: Project, name: str, change: str) -> str:
    """Shell that merges a pull request (a branch with ``change``, merged --no-ff) on origin's
    main, as a maintainer's merge button would."""
    work = project.tmp / name
    git = f'git -c user.name=maintainer -c user.email=m@example.com -C "{work}"'
    return (f'rm -rf "{work}" && git clone -q "file://{project.origin}" "{work}" && '
            f'{git} checkout -q -b pr && (cd "{work}" && {change}) && {git} add -A && '
            f'{git} commit -q -m "the PR" && {git} checkout -q main && '
            f'{git} merge -q --no-ff -m "Merge pull request #8" pr && '
            f'{git} push -q origin main')


def on_push_wrapper(project: Project, hook: str) -> dict[str, str]:
    """A ``git`` first on PATH that runs ``hook`` before every ``git push``, then real git."""
    real = shutil.which("git")
    assert real
    bin_dir = project.tmp / "wrapper-bin"
    bin_dir.mkdir(exist_ok=True)
    clean = user_env()["PATH"]  # the hook's own git is the real one
    executable(bin_dir / "on-push.sh", f'#!/bin/sh\nset -e\nexport PATH="{clean}"\n{hook}\n')
    executable(bin_dir / "git", f'#!/bin/sh\nif [ "$1" = push ]; then "{bin_dir}/on-push.sh" '
                                f'>&2; fi\nexec "{real}" "$@"\n')
    return {"PATH": f"{bin_dir}:{user_env()['PATH']}"}


# ----- the refresh survives a merge ---------------------------------------------------------

def test_a_merge_during_the_suite_is_kept_and_the_baseline_repooled_onto_it(
        project: Project) -> None:
    """The first task to run merges a PR on origin (which also brings a history line, as a
    refresh of its own would): the gate's push is refused, it fetches the new tip, pools this
    run onto the tip's baseline and history, commits on top of the merge and pushes."""
    main = project.clone("main-ci")
    before = runs_in(project, "main:baseline.json")
    line = json.dumps({"created_at": "2026-11-30T00:00:00Z", "fingerprint": "x",
                       "pass_rate": 1.0, "commit": "meanwhile"})
    helper = executable(project.tmp / "merging-helper.sh", (
        'echo "$1" > out.txt\n'
        f'if mkdir "{project.tmp}/merged.lock" 2>/dev/null; then\n'
        + merge_script(project, "merger", f"echo merged > MERGED.md && echo '{line}' "
                                          ">> gate-history.jsonl") + " >&2\nfi\n"))
    run = refresh(project, main, store="commit", env={"AGENT_HELPER": str(helper)})
    assert run.code == 0, run.stderr
    assert (project.tmp / "merged.lock").is_dir()  # the merge did land during the suite
    assert "main moved on while the suite ran" in run.stderr
    assert run.outputs["refresh"] == "committed"
    tip = origin(project, "rev-parse", "main")
    assert tip == run.outputs["baseline_commit"]
    parents = origin(project, "log", "-1", "--format=%P", "main").split()
    assert origin(project, "log", "-1", "--format=%s", parents[0]) == "Merge pull request #8"
    assert origin(project, "show", "main:MERGED.md") == "merged"  # the merge is kept
    assert origin(project, "log", "-1", "--format=%an", "main") == "github-actions[bot]"
    assert runs_in(project, "main:baseline.json") == 2 * before  # pooled, same agent
    history = origin(project, "show", "main:gate-history.jsonl").splitlines()
    assert len(history) == 2
    assert json.loads(history[0]).get("commit") == "meanwhile"  # the tip's line, then ours
    run.no_secrets(project.gh)


def test_a_branch_that_keeps_moving_leaves_the_files_as_an_artifact(project: Project) -> None:
    """Every push races another merge: after the bounded retries the gate warns, leaves the
    pooled files in the workspace for an upload step, and exits 0; nothing is lost or forced."""
    main = project.clone("main-ci")
    before = runs_in(project, "main:baseline.json")
    count = project.tmp / "merges"
    env = on_push_wrapper(project, f'echo x >> "{count}"\n'
                          + merge_script(project, "merger", f'date +%N > "merge-$(wc -l < '
                                                            f'"{count}")"'))
    run = refresh(project, main, store="commit", env=env)
    assert run.code == 0, run.stderr
    assert len(count.read_text().splitlines()) == 4  # the first push and 3 re-pools
    assert run.outputs["refresh"] == "artifact" and run.outputs["baseline_commit"] == ""
    assert "moved on 4 times" in run.stdout  # the ::warning:: annotation
    assert origin(project, "log", "-1", "--format=%s", "main") == "Merge pull request #8"
    assert "github-actions[bot]" not in origin(project, "log", "--format=%an", "main")
    kept = Path(run.outputs["baseline_path"])
    assert len(json.loads(kept.read_text())["runs"]) == 2 * before
    assert Path(run.outputs["history_path"]).read_text().count("\n") == 1
    assert "artifact" in run.summary


def test_a_newer_agent_configuration_that_landed_meanwhile_keeps_its_baseline(
        sim_project: Project) -> None:
    """While main's refresh of commit C runs, a change of the agent (C → N) lands with its own
    refreshed baseline. C is older (an ancestor of N): its run must not replace N's baseline."""
    project = sim_project
    main = project.clone("main-ci")
    newer = project.clone("newer")
    set_max_turns(newer, 9)
    sh(newer, "git", "commit", "-q", "-am", "agent: max_turns 9")
    make_baseline(newer, sim=True)  # a real run of N's configuration, recording commit N
    sh(newer, "git", "commit", "-q", "-am", "gate: refresh baseline.json from N")
    fp_new = json.loads((newer / "baseline.json").read_text())["agent"]["fingerprint"]
    fp_old = json.loads((main / "baseline.json").read_text())["agent"]["fingerprint"]
    assert fp_new != fp_old
    landed = sh(newer, "git", "rev-parse", "HEAD").strip()
    env = on_push_wrapper(project, f'if [ ! -e "{project.tmp}/landed" ]; then touch '
                          f'"{project.tmp}/landed"; git -C "{newer}" push -q origin main; fi')
    run = refresh(project, main, "--sim", store="commit", env={**env, "ANTHROPIC_API_KEY": ""})
    assert run.code == 0, run.stderr
    assert run.outputs["refresh"] == "superseded"
    assert origin(project, "rev-parse", "main") == landed  # N's baseline stands
    assert "another agent configuration" in run.stdout and "is not newer" in run.stdout
    assert "another agent configuration" in run.summary


def test_a_newer_configuration_replaces_an_older_ones_late_refresh(sim_project: Project) -> None:
    """The converse: C changed the agent; while its refresh runs, a late refresh of the older
    configuration (from C's parent) lands. C is newer, so its run starts the new baseline."""
    project = sim_project
    late = project.clone("late")
    make_baseline(late, sim=True)  # another run of the old configuration, from the seed commit
    sh(late, "git", "commit", "-q", "-am", "gate: a late refresh of the old configuration")
    main = project.clone("main-ci")
    set_max_turns(main, 9)
    sh(main, "git", "commit", "-q", "-am", "agent: max_turns 9")
    sh(main, "git", "push", "-q", "origin", "main")
    sh(late, "git", "pull", "-q", "--rebase", "origin", "main")  # lands on top of C
    env = on_push_wrapper(project, f'if [ ! -e "{project.tmp}/landed" ]; then touch '
                          f'"{project.tmp}/landed"; git -C "{late}" push -q origin main; fi')
    run = refresh(project, main, "--sim", store="commit", env={**env, "ANTHROPIC_API_KEY": ""})
    assert run.code == 0, run.stderr
    assert run.outputs["refresh"] == "committed", run.stderr
    assert "this newer configuration replaces it" in run.stderr
    pushed = json.loads(origin(project, "show", "main:baseline.json"))
    fp = json.loads((main / "results.json").read_text())["agent"]["fingerprint"]
    assert pushed["agent"]["fingerprint"] == fp and len(pushed["runs"]) == 9
    assert origin(project, "log", "-1", "--format=%s", "main^") == \
        "gate: a late refresh of the old configuration"


# ----- a protected branch is named as such --------------------------------------------------

def protect_main(project: Project) -> None:
    """Origin refuses any update of main as GitHub does for a protected branch (GH006)."""
    script = "".join(f"echo '{line}' >&2\n" for line in GH006.splitlines())
    executable(project.origin / "hooks" / "pre-receive",
               '#!/bin/sh\nwhile read old new ref; do\n'
               '  if [ "$ref" = refs/heads/main ]; then\n'
               f'{script}    exit 1\n  fi\ndone\nexit 0\n')


def test_a_protected_branch_is_named_with_what_to_do(project: Project) -> None:
    protect_main(project)
    main = project.clone("main-ci")
    before = origin(project, "rev-parse", "main")
    run = refresh(project, main, store="commit")
    assert run.code == 2, run.stderr
    assert "main is a protected branch" in run.stderr
    assert "GH006: Protected branch update failed" in run.stderr
    assert 'baseline_refresh = "branch"' in run.stderr and "bypass" in run.stderr
    assert "moved on" not in run.stderr
    assert origin(project, "rev-parse", "main") == before
    # the pooled files are there for the documented upload step
    assert run.outputs["refresh"] == "artifact"
    assert len(json.loads(Path(run.outputs["baseline_path"]).read_text())["runs"]) == 18
    assert Path(run.outputs["history_path"]).read_text().count("\n") == 1


# ----- a data branch ------------------------------------------------------------------------

DATA = "agent-gate-data"


def test_the_data_branch_holds_the_baseline_and_prs_read_it_from_there(
        project: Project) -> None:
    """`baseline-refresh: branch`: the first refresh creates the orphan data branch (seeded
    from main's committed baseline, so no depth is lost), main stays untouched and may be
    protected; a PR is judged against the data branch's baseline, with its trend."""
    protect_main(project)  # a protected main is no obstacle: the data branch is not main
    main = project.clone("main-ci")
    main_tip = origin(project, "rev-parse", "main")
    seed_runs = runs_in(project, "main:baseline.json")
    for _ in range(2):
        run = refresh(project, main, store="branch")
        assert run.code == 0, run.stderr
        assert run.outputs["refresh"] == "committed"
        assert run.outputs["baseline_commit"] == origin(project, "rev-parse", DATA)
    assert origin(project, "rev-parse", "main") == main_tip
    assert origin(project, "rev-list", "--count", DATA) == "2"  # an orphan: its own history
    assert origin(project, "ls-tree", "-r", "--name-only", DATA).split() == [
        ".nojekyll", "badge.svg", "main/baseline.json", "main/gate-history.jsonl",
        "reports/main/index.html"]  # and the published pages (test_ci_pages.py)
    assert runs_in(project, f"{DATA}:main/baseline.json") == 3 * seed_runs
    assert "has no baseline.json yet" not in run.stderr  # the second read the data branch
    assert f"`{DATA}`" in run.summary

    # a PR: the data branch's baseline (not main's committed one) judges it
    with (project.tmp / "seed" / "gate.toml").open("a") as fh:
        fh.write('\n[ci]\nbaseline_refresh = "branch"\n')
    seed = project.tmp / "seed"
    sh(seed, "git", "rm", "-q", "baseline.json")
    sh(seed, "git", "commit", "-q", "-am", "the baseline lives on the data branch")
    (project.origin / "hooks" / "pre-receive").unlink()
    sh(seed, "git", "push", "-q", "origin", "main")
    ci = project.pr_branch("feature", lambda w: (w / "agent" / "solve.sh").write_text(
        'echo "nope" > out.txt\n'))
    pr = project.gate_ci(ci)
    assert pr.code == 1, pr.stderr  # a regression, not "no baseline" (exit 3)
    body = pr.summary
    assert f"Baseline from `{DATA} (main/)`: {3 * seed_runs} runs over 3 tasks pooled from" \
        in body
    assert "```mermaid" in body  # main's trend, from the data branch's history

    # locally, `gate compare --base-ref` reads the same data branch (as this clone knows it)
    local = subprocess.run(
        [sys.executable, "-m", "gate", "compare", "--base-ref", "origin/main", "results.json",
         "--format", "json"], cwd=ci, capture_output=True, text=True, check=False, timeout=240,
        env={**user_env(), "AGENT_HELPER": str(ci / "agent" / "solve.sh")})
    assert local.returncode == 1, local.stderr
    assert json.loads(local.stdout)["verdict"] == "regression"


def test_two_main_runs_racing_on_the_data_branch_both_land(project: Project) -> None:
    """The data branch moves too (another refresh pushed meanwhile): re-pooled onto it."""
    main = project.clone("main-ci")
    other = project.clone("other-ci")
    first = refresh(project, other, store="branch", env={
        "GITHUB_RUN_ID": "1"})
    assert first.code == 0, first.stderr
    landed = origin(project, "rev-parse", DATA)
    # the race, made deterministic: drop the data branch the main-ci run fetched before its
    # suite, and let the other refresh land right before main-ci's first push
    sh(project.tmp, "git", "--git-dir", str(project.origin), "update-ref", "-d",
       f"refs/heads/{DATA}")
    env = on_push_wrapper(project, f'if [ ! -e "{project.tmp}/landed" ]; then touch '
                          f'"{project.tmp}/landed"; git --git-dir "{project.origin}" '
                          f'update-ref refs/heads/{DATA} {landed}; fi')
    run = refresh(project, main, store="branch", env=env)
    assert run.code == 0, run.stderr
    assert f"the data branch {DATA} moved on while the suite ran" in run.stderr
    assert origin(project, "rev-parse", f"{DATA}^") == landed  # on top of the other run
    history = origin(project, "show", f"{DATA}:main/gate-history.jsonl").splitlines()
    assert len(history) == 2


# ----- a fallback baseline, its age and depth -----------------------------------------------

def test_a_pr_into_a_branch_without_a_baseline_uses_the_default_branchs(
        project: Project) -> None:
    seed = project.tmp / "seed"
    sh(seed, "git", "checkout", "-q", "-b", "release")
    sh(seed, "git", "rm", "-q", "baseline.json")
    sh(seed, "git", "commit", "-q", "-m", "release: no baseline")
    sh(seed, "git", "push", "-q", "origin", "release")
    # main's baseline, 60 days old (a real run, its dates moved back)
    main = project.clone("main-old")
    data = json.loads((main / "baseline.json").read_text())
    old = "2026-09-01T00:00:00Z"
    data["created_at"] = old
    for r in data["runs"]:
        r["created_at"] = old
    (main / "baseline.json").write_text(json.dumps(data))
    sh(main, "git", "commit", "-q", "-am", "an old baseline")
    sh(main, "git", "push", "-q", "origin", "main")

    work = project.clone("rel-author", "release")
    sh(work, "git", "checkout", "-q", "-b", "rel-fix")
    (work / "README.md").write_text("x\n")
    sh(work, "git", "add", "-A")
    sh(work, "git", "commit", "-q", "-m", "fix")
    sh(work, "git", "push", "-q", "origin", "rel-fix")
    ci = project.clone("rel-ci", "rel-fix", depth=1)
    event = project.event(ci)
    payload = json.loads(event.read_text())
    payload["pull_request"]["base"]["ref"] = "release"
    event.write_text(json.dumps(payload))
    run = project.gate_ci(ci, event_path=event)
    assert run.code == 0, run.stderr
    body = run.summary
    assert "`release` has no baseline of its own: this PR is judged against `main`'s" in body
    assert "Baseline from `main`: 9 runs over 3 tasks pooled from 1 refresh" in body
    assert "2026-09-01" in body and "**Stale:** older than 30 days" in body


def test_no_git_with_the_token_after_a_suite_that_changed_the_git_configuration(
        tmp_path: Path) -> None:
    """With a data branch the refresh fetches again after the suite, with the token: a hook
    or config planted by the suite stops it before that fetch, not only before the push."""
    from tests.helpers.git_http import GitOverHTTP, _clone

    for project in _project(tmp_path, sim=False):
        with GitOverHTTP(project.origin.parent, TOKEN) as server:
            main = _clone(server, project, "main-ci", "main")
            cloned = len(server.authorized)
            hostile = executable(tmp_path / "hostile.sh", (
                'echo "$1" > out.txt\n'
                f'mkdir -p {main}/.git/hooks\n'
                f"printf '#!/bin/sh\\ncat > /dev/null\\n' > {main}/.git/hooks/pre-push\n"))
            run = refresh(project, main, store="branch",
                          env={"GITHUB_SERVER_URL": server.url, "AGENT_HELPER": str(hostile)})
            assert (main / ".git" / "hooks" / "pre-push").exists()
            assert run.code == 3, run.stderr
            assert "git configuration changed while the suite ran" in run.stderr
            # the one fetch with the token is the data branch's, before the suite
            assert len([r for r in server.authorized[cloned:] if "info/refs" in r]) == 1


@pytest.mark.skipif(sys.platform != "linux", reason="Linux's /proc")
def test_no_push_with_the_token_while_a_process_of_a_run_is_alive(project: Project) -> None:
    """A process of a run that escaped its group and its cgroup (it still carries this gate's
    scope) is alive when main's refresh would push: the token is never handed to git then;
    the job says so (exit 3) and main is untouched."""
    import os
    import signal

    from gate.sandbox._contain import SCOPE, SCOPE_VAR

    main = project.clone("main-ci")
    tip = origin(project, "rev-parse", "main")
    stray = subprocess.Popen(["sleep", "120"], start_new_session=True,
                             env={SCOPE_VAR: SCOPE, "PATH": os.environ["PATH"]})
    try:
        run = refresh(project, main, store="commit")
    finally:
        os.kill(stray.pid, signal.SIGKILL)
        stray.wait()
    assert run.code == 3, run.stderr
    assert f"process {stray.pid}" in run.stderr + run.summary
    assert origin(project, "rev-parse", "main") == tip
