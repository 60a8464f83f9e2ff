"""On a pull request only the agent is under test: the tasks, [suite], [gate], [ci], the
baseline and the history are the base branch's. A PR that loosens its own check, edits a
verify script or deletes a task is still judged by main's yardstick, and is told so.

Through the real ``gate ci`` against the fake GitHub, and ``gate run/compare --base-ref``.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from gate.core.results import load_results
from tests.helpers.ci import (
    PR,
    Project,
    _break_agent,
    _marker_comments,
    gate_in_process,
    sh,
)

pytestmark = pytest.mark.slow


def _loosen(work: Path) -> None:
    """Everything a PR author could write to let a broken agent through."""
    toml = (work / "gate.toml").read_text()
    toml = toml.replace("replications = 3", "replications = 1")
    toml = toml.replace('[gate]\n', '[gate]\nalpha = 1e-300\nblock_on = []\n'
                        'min_comparable = 0.01\n')
    (work / "gate.toml").write_text(toml + '\n[ci]\nfail_on_regression = false\n'
                                    'accept_label = ""\n')


def test_a_pr_cannot_loosen_its_own_gate(project: Project) -> None:
    def cheat(work: Path) -> None:
        _break_agent(work)
        _loosen(work)
        # a history where main "always fails" would let the drift guard excuse anything
        fp = json.loads((work / "baseline.json").read_text())["agent"]["fingerprint"]
        (work / "gate-history.jsonl").write_text("".join(
            json.dumps({"created_at": f"2026-11-{i + 1:02d}T00:00:00Z", "pass_rate": 0.0,
                        "verdict": "regression", "fingerprint": fp}) + "\n"
            for i in range(12)))

    ci = project.pr_branch("loosen", cheat)
    run = project.gate_ci(ci)
    assert run.code == 1, run.stderr
    assert run.outputs["verdict"] == "regression"
    results = load_results(ci / "results.json")
    # main's settings, not the PR's replications = 1: sequential looks (the default), the
    # first look of 2 runs per task already blocks
    assert results.schedule is not None and results.schedule.sequential == [2]
    assert len(results.runs) == 6
    (comment,) = _marker_comments(project.gh)
    body = comment["body"]
    assert "This PR changes what measures it" in body
    for line in ("`[gate].alpha`: 0.01 → 1e-300", "`[suite].replications`: 3 → 1",
                 "`[ci].fail_on_regression`: true → false", "`[gate].block_on`"):
        assert line in body, line
    assert "apply after the merge" in body
    assert "gate-history.jsonl: edited by this PR" in body


def test_edited_verify_and_deleted_task_are_judged_with_the_base_copies(
        project: Project) -> None:
    def cheat(work: Path) -> None:
        _break_agent(work)
        (work / "tasks" / "alpha" / "verify.sh").write_text("exit 0\n")  # always passes
        sh(work, "git", "rm", "-rq", "tasks/beta")

    ci = project.pr_branch("hide", cheat)
    run = project.gate_ci(ci)
    assert run.code == 1, run.stderr
    results = load_results(ci / "results.json")
    assert {r.task for r in results.runs} == {"alpha", "beta", "gamma"}
    assert all(r.status == "failed" for r in results.runs)  # main's verify.sh judged them
    (comment,) = _marker_comments(project.gh)
    body = comment["body"]
    assert "task alpha: changed by this PR" in body
    assert "false positive" in body  # the PR's alpha was validated with its oracle
    assert "task beta: removed by this PR (still gated here)" in body


def test_added_task_is_validated_and_not_gated_until_merged(project: Project) -> None:
    def add(work: Path) -> None:
        d = work / "tasks" / "delta"
        (d / "solution").mkdir(parents=True)
        (d / "task.md").write_text("Write `delta` into out.txt.\n")
        (d / "verify.sh").write_text("set -eu\ngrep -qx delta out.txt\n")
        (d / "solution" / "solve.sh").write_text("echo delta > out.txt\n")
        wf = work / ".github" / "workflows"
        wf.mkdir(parents=True)
        (wf / "agent-gate.yml").write_text("on: pull_request\n")

    ci = project.pr_branch("add", add)
    run = project.gate_ci(ci)
    assert run.code == 0, run.stderr
    results = load_results(ci / "results.json")
    assert "delta" not in {r.task for r in results.runs}
    (comment,) = _marker_comments(project.gh)
    body = comment["body"]
    assert "task delta: added by this PR (not gated until merged); sound with its oracle" \
        in body
    assert "workflow .github/workflows/agent-gate.yml: changed" in body
    assert "inputs come from the PR's own workflow file" in body


def test_a_harmless_pr_changes_no_yardstick(project: Project) -> None:
    ci = project.pr_branch("docs", lambda w: (w / "README.md").write_text("# agent\n"))
    run = project.gate_ci(ci)
    assert run.code == 0, run.stderr
    (comment,) = _marker_comments(project.gh)
    assert "changes what measures it" not in comment["body"]


def test_untrusted_values_in_the_yardstick_lines_are_escaped(project: Project) -> None:
    def sneaky(work: Path) -> None:
        toml = (work / "gate.toml").read_text().replace(
            'baseline = "baseline.json"', 'baseline = "@everyone <img src=x> [a](http://e)"')
        (work / "gate.toml").write_text(toml)

    ci = project.pr_branch("sneaky", sneaky)
    run = project.gate_ci(ci)
    assert run.code == 0, run.stderr  # judged against main's baseline.json
    (comment,) = _marker_comments(project.gh)
    body = comment["body"]
    assert "`[gate].baseline`" in body
    assert "@everyone" not in body and "<img" not in body
    assert "\\[a\\](" in body  # brackets escaped: no link


def _gate(cwd: Path, *args: str, helper: Path) -> subprocess.CompletedProcess[str]:
    """``gate *args`` in ``cwd`` as a developer runs it (no Actions environment), in-process."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("GITHUB_", "GATE_", "ANTHROPIC_"))}
    code, out, err = gate_in_process(list(args), cwd, {**env, "AGENT_HELPER": str(helper)})
    return subprocess.CompletedProcess(list(args), code, out, err)


def test_local_base_ref_judges_as_ci_does(project: Project) -> None:
    """`gate run --base-ref` + `gate compare --base-ref` in the PR's checkout: the same
    verdict as `gate ci`, with the same yardstick (a loosened gate.toml changes nothing)."""
    def cheat(work: Path) -> None:
        _break_agent(work)
        _loosen(work)

    ci = project.pr_branch("local", cheat)
    helper = ci / "agent" / "solve.sh"
    ran = _gate(ci, "run", "--base-ref", "origin/main", "-o", "local.json", helper=helper)
    assert ran.returncode == 0, ran.stderr
    assert "yardstick: [gate].alpha: 0.01 → 1e-300" in ran.stderr
    local = load_results(ci / "local.json")
    assert len(local.runs) == 9  # main's replications

    judged = _gate(ci, "compare", "--base-ref", "origin/main", "local.json", "--format",
                   "json", helper=helper)
    assert judged.returncode == 1, judged.stderr
    assert json.loads(judged.stdout)["verdict"] == "regression"
    assert "yardstick: [ci].fail_on_regression: true → false" in judged.stderr

    # without --base-ref, the loosened gate.toml would let it through
    sh(ci, "git", "show", "origin/main:baseline.json")
    (ci / "main-baseline.json").write_text(sh(ci, "git", "show", "origin/main:baseline.json"))
    loose = _gate(ci, "compare", "main-baseline.json", "local.json", helper=helper)
    assert loose.returncode == 0, loose.stdout

    ci_run = project.gate_ci(ci)
    assert ci_run.code == judged.returncode
    assert PR in project.gh.comments


def test_base_ref_that_does_not_exist_is_bad_input(project: Project) -> None:
    ci = project.pr_branch("nobase", lambda w: (w / "README.md").write_text("x\n"))
    res = _gate(ci, "compare", "--base-ref", "origin/nope", "x.json", helper=ci)
    assert res.returncode == 2
    assert "--base-ref origin/nope: no such commit or branch" in res.stderr
    assert "Traceback" not in res.stderr
    res = _gate(ci, "compare", "--base-ref", "origin/main", helper=ci)
    assert res.returncode == 2 and "one argument, RESULTS" in res.stderr


_AUDIT = '''
import json, os, sys
_log = os.environ.get("AUDIT_LOG_PATH")
if _log:
    _fd = os.open(_log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    _pid = os.getpid()

    def _hook(event, args):
        if os.getpid() != _pid:
            return
        if event == "import":
            line = ["import", args[0]]
        elif event == "open" and isinstance(args[0], (str, bytes)):
            mode = args[1] if args[1] is not None else ("r" if args[2] & 3 == 0 else "w")
            line = ["open", os.fsdecode(args[0]), mode]
        elif event == "subprocess.Popen":
            line = ["exec", " ".join(map(os.fsdecode, args[1] or []))]
        else:
            return
        os.write(_fd, (json.dumps([_pid, *line]) + "\\n").encode())

    sys.addaudithook(_hook)
'''


def test_nothing_the_verdict_depends_on_is_read_after_the_suite(project: Project,
                                                                tmp_path: Path) -> None:
    """The agent under test runs as the gate's user: during the suite it can rewrite the
    checkout (``.git`` included) and the gate's own files. So once the suite has run, the gate
    runs no git, imports no module and opens no file of its own package, and of the checkout
    only the PR's added task (validated with its oracle, a line of the comment): the
    yardstick, the code that judges and the templates that tell are all in memory before the
    agent starts (the rest of the same-user reach is in docs/github.md's threat model)."""
    hook = tmp_path / "audit"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(_AUDIT)
    log = tmp_path / "audit.jsonl"

    def break_and_add(work: Path) -> None:
        _break_agent(work)
        d = work / "tasks" / "delta"
        (d / "solution").mkdir(parents=True)
        (d / "task.md").write_text("Write `delta` into out.txt.\n")
        (d / "verify.sh").write_text("set -eu\ngrep -qx delta out.txt\n")
        (d / "solution" / "solve.sh").write_text("echo delta > out.txt\n")

    ci = project.pr_branch("feature", break_and_add)
    run = project.gate_ci(ci, process=True, env={  # the audit hook is the process's
        "AUDIT_LOG_PATH": str(log),
        "PYTHONPATH": os.pathsep.join(filter(None, [str(hook), os.environ.get("PYTHONPATH")])),
    })
    assert run.code == 1, run.stderr
    assert "sound with its oracle" in _marker_comments(project.gh)[0]["body"]
    events = [json.loads(line) for line in log.read_text().splitlines()]
    gate_pid = events[-1][0]  # the gate's own pid (its events come last)
    mine = [e[1:] for e in events if e[0] == gate_pid]
    # the suite ends with its last write of results.json
    end = max(i for i, e in enumerate(mine) if e[0] == "open" and "/.results.json." in e[1])
    assert any(e[0] == "exec" and "verify.sh" in e[1] for e in mine[:end])
    import gate

    package = str(Path(gate.__file__).resolve().parent)
    after = mine[end + 1:]
    # git by its program's name: a path like ~/git/venv/bin/python is not git
    assert not [e for e in after if e[0] == "exec" and Path(e[1].split(" ")[0]).name == "git"]
    assert not [e for e in after if e[0] == "import"]
    assert not [e for e in after if e[0] == "open" and e[1].startswith(package)]
    assert not [e for e in after if e[0] == "open" and e[1].startswith(str(ci))
                and not e[1].startswith(str(ci / "tasks" / "delta"))
                and "r" in e[2] and "+" not in e[2]]


def test_a_pr_cannot_price_away_its_own_cost(sim_project: Project) -> None:
    """``[agent.prices]`` sits under the agent but measures cost: a PR that makes its agent
    spend more and prices its model at 0 is judged with the base's prices, and told so."""
    def pricier_but_free(work: Path) -> None:
        (work / "prompt.md").write_text("Think out loud about every step first. " * 1500)
        toml = (work / "gate.toml").read_text().replace(
            "max_turns = 10\n", 'max_turns = 10\nsystem_prompt = "prompt.md"\n')
        (work / "gate.toml").write_text(
            toml + '\n[agent.prices."claude-sonnet-5-5"]\ninput = 0\noutput = 0\n'
            'cache_write_5m = 0\ncache_write_1h = 0\ncache_read = 0\n')

    ci = sim_project.pr_branch("free", pricier_but_free)
    run = sim_project.gate_ci(ci, "--sim", env={"ANTHROPIC_API_KEY": ""})
    assert run.code == 1, run.stdout + run.stderr
    assert run.outputs["verdict"] == "regression" and float(run.outputs["cost_usd"]) > 0
    (comment,) = _marker_comments(sim_project.gh)
    assert "`[agent].prices`: {} →" in comment["body"]


def test_a_pr_cannot_swap_gate_toml_for_a_link_to_a_file_the_base_lacks(
        project: Project) -> None:
    """``gate.toml`` as a symlink to the PR's own ``loose.toml``: the base's ``gate.toml`` is
    still the yardstick (not the defaults, as for a path the base does not have)."""
    def link(work: Path) -> None:
        _break_agent(work)
        toml = (work / "gate.toml").read_text()
        (work / "gate.toml").unlink()
        (work / "loose.toml").write_text(toml + '\n[ci]\nfail_on_regression = false\n')
        (work / "gate.toml").symlink_to("loose.toml")

    # the base's own gate.toml is stricter than the defaults: fail_on_regression is the
    # default (true), so make the base's stricter in a way the defaults are not
    seed = project.clone("tighten")
    toml = (seed / "gate.toml").read_text().replace(
        '[gate]\n', '[gate]\nblock_on = ["pass_rate"]\n')
    (seed / "gate.toml").write_text(toml)
    sh(seed, "git", "commit", "-qam", "tighten")
    sh(seed, "git", "push", "-q", "origin", "main")

    ci = project.pr_branch("link", link)
    run = project.gate_ci(ci)
    assert run.code == 1, run.stdout + run.stderr
    body = _marker_comments(project.gh)[0]["body"]
    assert "`[ci].fail_on_regression`: true → false" in body
    assert "`[gate].block_on`" not in body  # the base's block_on, not the defaults'


def test_only_the_base_branch_turns_a_tasks_tamper_check_off(project: Project) -> None:
    """[suite].tamper_exempt turns the tamper check off for a task: a PR that lists its own
    tasks is told of the change and runs as main says; main's list is one line of the
    comment."""
    def exempt(work: Path) -> None:
        toml = (work / "gate.toml").read_text()
        (work / "gate.toml").write_text(toml.replace(
            "[suite]\n", '[suite]\ntamper_exempt = ["alpha"]\n'))

    run = project.gate_ci(project.pr_branch("exempt", exempt))
    assert run.code == 0, run.stderr
    (comment,) = _marker_comments(project.gh)
    assert "`[suite].tamper_exempt`: \\[\\] → \\[&quot;alpha&quot;\\]" in comment["body"]
    assert "Tamper check off" not in comment["body"]
    main = project.clone("main-exempts")
    exempt(main)
    sh(main, "git", "commit", "-qam", "alpha's verifier is checked by hand")
    sh(main, "git", "push", "-q", "origin", "main")
    run = project.gate_ci(project.pr_branch("plain", lambda work: (
        work / "NOTES.md").write_text("a change\n")))
    assert run.code == 0, run.stderr
    body = _marker_comments(project.gh)[0]["body"]
    assert "🔓 Tamper check off (`[suite].tamper_exempt`: " in body and "`alpha`." in body


def test_only_the_base_branch_leaves_a_tasks_reward_unprotected(project: Project) -> None:
    """[suite].reward_unprotected lets the agent's services run into a task's verifier: a PR
    that lists its own tasks is told of the change and runs as main says; main's list is one
    line of the comment."""
    def grant(work: Path) -> None:
        toml = (work / "gate.toml").read_text()
        (work / "gate.toml").write_text(toml.replace(
            "[suite]\n", '[suite]\nreward_unprotected = ["alpha"]\n'))

    run = project.gate_ci(project.pr_branch("grant", grant))
    assert run.code == 0, run.stderr
    (comment,) = _marker_comments(project.gh)
    assert "`[suite].reward_unprotected`: \\[\\] → \\[&quot;alpha&quot;\\]" in comment["body"]
    assert "Reward unprotected" not in comment["body"]
    main = project.clone("main-grants")
    grant(main)
    sh(main, "git", "commit", "-qam", "alpha's verifier needs the agent's server")
    sh(main, "git", "push", "-q", "origin", "main")
    run = project.gate_ci(project.pr_branch("plain", lambda work: (
        work / "NOTES.md").write_text("a change\n")))
    assert run.code == 0, run.stderr
    body = _marker_comments(project.gh)[0]["body"]
    assert ("🔓 Reward unprotected (`[suite].reward_unprotected`: their verifier needs a "
            "service the agent started, which keeps running into it): `alpha`.") in body
