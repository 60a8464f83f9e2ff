"""``action.yml``: valid, safe (inputs only through ``env:``), and its steps really work.

The execution test plays the runner's part for a composite action: it installs the package
from ``GITHUB_ACTION_PATH`` into a fresh virtualenv with the step's own command, then runs the
``gate ci`` step with the step's ``env:`` (expressions expanded the way the runner would)
against a real git repository and the fake GitHub API, under the simulator.
"""

from __future__ import annotations

import json
import re
import secrets
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from gate.cli._ci import ci as ci_command
from tests.helpers.action import (
    EXPR,
    Installed,
    _doc_blocks,
    _expand,
    _gate_step_env,
    _prepare_runner,
    _read_file_command,
    _run_setup_steps,
    _run_step,
    _triggers,
    play_after_gate,
)
from tests.helpers.ci import (
    PR,
    REPO,
    TOKEN,
    Project,
    _break_agent,
    _parse_output_file,
    push_event,
    set_max_turns,
    sh,
    store_baselines,
)

ROOT = Path(__file__).resolve().parents[2]
# Inputs that configure the runner rather than gate: allowed outside env.
RUNNER_INPUTS = {"python-version": "with", "working-directory": "working-directory"}


def test_action_is_a_composite_with_described_inputs_and_outputs(action: dict[str, Any]) -> None:
    assert action["runs"]["using"] == "composite"
    assert action["name"] and action["description"]
    for section in ("inputs", "outputs"):
        for name, spec in action[section].items():
            assert spec.get("description"), f"{section}.{name} has no description"
    assert action["inputs"]["github-token"]["default"] == "${{ github.token }}"
    steps = action["runs"]["steps"]
    assert any(str(s.get("uses", "")).startswith("actions/setup-python@") for s in steps)


def test_the_sim_input_says_what_a_prompt_change_exits(action: dict[str, Any]) -> None:
    """A repository trying the gate with no key is told, where it turns the simulator on, why
    a prompt PR gets a failing check and which base-branch setting says so."""
    from gate.core.config import CISettings

    text = " ".join(action["inputs"]["sim"]["description"].split())
    default = CISettings().sim_unjudged
    assert "not judged by the simulator" in text and "exits 3" in text
    assert f'[ci] sim_unjudged = "{default}" (the default)' in text
    assert 'sim_unjudged = "pass" exits 0' in text


def test_no_expression_inside_any_run_script(action: dict[str, Any]) -> None:
    for step in action["runs"]["steps"]:
        if "run" in step:
            assert "${{" not in step["run"], f"expression in the script of {step.get('name')}"
            assert step.get("shell") == "bash"


def test_every_input_reaches_gate_through_env(action: dict[str, Any]) -> None:
    steps = action["runs"]["steps"]
    used_in_env: set[str] = set()
    for step in steps:
        for value in (step.get("env") or {}).values():
            used_in_env |= {m[len("inputs."):] for m in EXPR.findall(str(value))
                            if m.startswith("inputs.")}
    for name in action["inputs"]:
        if name in RUNNER_INPUTS:
            where = RUNNER_INPUTS[name]
            assert any(f"inputs.{name}" in str(s.get(where, "")) for s in steps), name
        else:
            assert name in used_in_env, f"input {name} is not passed through env"


def test_the_gate_step_execs_the_gate_from_its_own_venv(action: dict[str, Any]) -> None:
    """The fast check behind the /proc walk below: the step's shell is replaced by the gate
    (no shell above the suite holds the secrets), and that gate is the one the install step
    put under RUNNER_TEMP, installed from an empty directory, never from the workspace."""
    steps = {s.get("name"): s for s in action["runs"]["steps"]}
    gate_step = steps["Run gate ci"]
    assert gate_step["run"].strip() == 'exec "$RUNNER_TEMP/agent-gate-venv/bin/gate" ci'
    install = steps["Install agent-gate"]["run"].strip().splitlines()
    # the empty directory under RUNNER_TEMP, which the runner clears after the job (/tmp's
    # would stay on a self-hosted runner)
    assert install[0] == 'cd "$(mktemp -d -p "${RUNNER_TEMP:-/tmp}")"'
    assert '"$RUNNER_TEMP/agent-gate-venv"' in install[1]


def test_env_names_are_gate_ci_options(action: dict[str, Any]) -> None:
    """Each GATE_* variable the action sets is read by a real `gate ci` option."""
    steps = [s for s in action["runs"]["steps"] if s.get("id") in ("gate", "post")]
    assert len(steps) == 2
    envvars = {p.envvar for p in ci_command.params if isinstance(p.envvar, str)}
    for step in steps:
        for name in step["env"]:
            if name.startswith("GATE_") and name != "GATE_GITHUB_TOKEN":
                assert name in envvars, f"{name} is not an option of gate ci"


# outputs of a later step than the gate's: the comment is posted after the report's upload
LATER_OUTPUTS = {
    "comment_url": "${{ steps.post.outputs.comment_url || steps.gate.outputs.comment_url }}",
    "comment_id": "${{ steps.post.outputs.comment_id || steps.gate.outputs.comment_id }}",
    "report_artifact_url": "${{ steps.upload.outputs.artifact-url }}",
}


def test_each_output_is_the_gate_steps_output_of_the_same_name(action: dict[str, Any]) -> None:
    for name, spec in action["outputs"].items():
        if name in LATER_OUTPUTS:
            assert spec["value"] == LATER_OUTPUTS[name], name
            continue
        assert spec["value"] == f"${{{{ steps.gate.outputs.{name} }}}}", name


@pytest.mark.slow
def test_outputs_mirror_what_gate_ci_writes(action: dict[str, Any], project: Project) -> None:
    """The outputs `gate ci` really writes to $GITHUB_OUTPUT, over the modes that write them
    (a judged PR that comments, a refresh that commits on main, a matrix shard, a refused
    run), are exactly the ones action.yml declares: an undeclared one is invisible to the
    caller (`steps.<id>.outputs.x` of a composite action is only what `outputs:` maps), a
    declared one nothing writes is always empty."""
    written: dict[str, set[str]] = {}
    ci = project.pr_branch("feature", _break_agent)
    pr = project.gate_ci(ci)
    assert pr.code == 1 and pr.outputs["verdict"] == "regression", pr.stderr
    assert pr.outputs["comment_url"], "the PR run posted no comment"
    written["pr"] = set(pr.outputs)
    deferred = project.gate_ci(ci, "--defer-comment")  # the action's way: posted later
    assert deferred.code == 1 and deferred.outputs["comment_pending"], deferred.stderr
    written["deferred"] = set(deferred.outputs)
    refused = project.gate_ci(ci, "--mode", "main")
    assert refused.code == 2 and refused.outputs["verdict"] == "error", refused.stderr
    written["refused"] = set(refused.outputs)
    main = project.clone("main-ci")
    push = {"event": "push", "event_path": push_event(main), "ref": "refs/heads/main"}
    store_baselines(main, "branch")  # the data branch, which Pages serves: report_url
    project.gh.enable_pages()
    refresh = project.gate_ci(main, **push)
    assert refresh.code == 0 and refresh.outputs["refresh"] == "committed", refresh.stderr
    written["main"] = set(refresh.outputs)
    shard = project.gate_ci(project.clone("shard-ci"), "--shard", "1/2", **push)
    assert shard.code == 0 and shard.outputs["verdict"] == "shard", shard.stderr
    written["shard"] = set(shard.outputs)

    # report_artifact_url is the upload step's own output, not gate ci's
    declared = set(action["outputs"]) - {"report_artifact_url"}
    every = set().union(*written.values())
    by_mode = {mode: sorted(names) for mode, names in written.items()}
    assert every - declared == set(), f"written but not declared in action.yml: {by_mode}"
    assert declared - every == set(), f"declared in action.yml but never written: {by_mode}"


def test_the_report_is_uploaded_before_the_comment_is_posted(action: dict[str, Any]) -> None:
    """The comment links to the report's artifact: the upload step comes after the gate's
    and before the posting step; both run after a failed gate step (a regression, a crash:
    the comment must not stay "running"), neither for a cancelled run; an upload that fails
    costs the link, never the verdict; the post is the venv's own gate, told the artifact's
    id by the upload step."""
    steps = action["runs"]["steps"]
    order = [s.get("id") for s in steps]
    gate, upload, post = (order.index(i) for i in ("gate", "upload", "post"))
    assert gate < upload < post
    up, po = steps[upload], steps[post]
    assert up["uses"].startswith("actions/upload-artifact@")
    assert up["if"] == "!cancelled() && steps.gate.outputs.report_artifact != ''"
    assert up["continue-on-error"] is True
    assert up["with"]["name"] == "${{ steps.gate.outputs.report_artifact }}"
    assert up["with"]["path"] == "${{ steps.gate.outputs.report_files }}"
    assert up["with"]["overwrite"] is True  # a re-run of the job is the same run
    assert po["if"] == "!cancelled() && steps.gate.outputs.comment_pending != ''"
    assert "always()" not in str(up["if"]) + str(po["if"])
    assert po["env"]["GATE_ARTIFACT_ID"] == "${{ steps.upload.outputs.artifact-id }}"
    assert po["env"]["GATE_POST_COMMENT"] == "${{ steps.gate.outputs.comment_pending }}"
    assert po["run"].strip().splitlines() == [
        'cd "$(mktemp -d -p "${RUNNER_TEMP:-/tmp}")"',
        'exec "$RUNNER_TEMP/agent-gate-venv/bin/gate" ci']
    assert steps[gate]["env"]["GATE_DEFER_COMMENT"] == "true"


def test_every_upload_can_be_rerun(action: dict[str, Any]) -> None:
    """A job re-run ("Re-run failed jobs") is the same workflow run: an upload without
    `overwrite` fails there with 409, the artifact's name being taken by the first attempt."""
    uploads = [s for s in action["runs"]["steps"]
               if str(s.get("uses", "")).startswith("actions/upload-artifact@")]
    assert len(uploads) >= 2  # the shard's results, the report
    for step in uploads:
        assert step["with"].get("overwrite") is True, step["name"]


# ----- running the steps --------------------------------------------------------------------

def _pins(path: Path) -> dict[str, str]:
    pins: dict[str, str] = {}
    for line in path.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            name, version = line.split("==")
            pins[re.sub(r"[-_.]+", "-", name).lower()] = version.strip()
    return pins


@pytest.mark.slow
def test_the_action_installs_pinned_into_a_private_venv_and_leaves_the_job_alone(
        action: dict[str, Any], installed: Installed, tmp_path: Path) -> None:
    """The caller's `python` is the same after the action as before it: the action never
    started it, set no variable and put nothing on PATH for later steps; its own install is
    a venv under RUNNER_TEMP from setup-python's interpreter, every package pinned by
    constraints/action.txt, its pip cache under RUNNER_TEMP keyed on those pins."""
    venv = installed.runner_temp / "agent-gate-venv"
    assert not installed.caller_log.exists(), installed.caller_log.read_text()
    assert installed.env_files.get("GITHUB_PATH", "") == ""
    assert installed.env_files.get("GITHUB_ENV", "") == ""
    # what a later step of the caller's job runs as `python`
    p = subprocess.run(["bash", "--noprofile", "--norc", "-c", "python --whoami"],
                       env=installed.env(), capture_output=True, text=True, check=True)
    assert p.stdout.strip() == "the caller's python"
    assert (venv / "pyvenv.cfg").is_file() and (venv / "bin" / "gate").is_file()
    # the install is a real one (not the source tree): its package data is there
    adopt = tmp_path / "adopt"
    adopt.mkdir()
    p = subprocess.run([str(venv / "bin" / "gate"), "init", "--branch", "main"], cwd=adopt,
                       env=installed.env(), capture_output=True, text=True, check=False)
    assert p.returncode == 0, p.stderr
    assert (adopt / ".github" / "workflows" / "agent-gate.yml").is_file()
    assert (adopt / "tasks" / "example-count-words" / "solution" / "solve.sh").is_file()
    # every package it installed is the pinned version
    frozen = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "freeze", "--all",
                             "--disable-pip-version-check"],
                            capture_output=True, text=True, check=True).stdout
    pins = _pins(installed.action_path / "constraints" / "action.txt")
    got = {re.sub(r"[-_.]+", "-", n).lower(): v for n, _, v in
           (line.partition("==") for line in frozen.splitlines() if "==" in line)}
    assert {n: got[n] for n in pins if n in got} == {n: pins[n] for n in pins if n in got}
    for dep in ("numpy", "scipy", "pydantic", "click", "setuptools"):
        assert got[dep] == pins[dep], dep
    # the cache: under RUNNER_TEMP (pip's own cache dir), keyed on the pins and the Python
    (cache,) = [w for u, w in installed.uses if u.startswith("actions/cache@")]
    assert cache["path"] == str(installed.runner_temp / "agent-gate-pip-cache")
    assert re.fullmatch(r"agent-gate-pip-Linux-py3\.\d+-[0-9a-f]{20}", cache["key"])
    (setup,) = [w for u, w in installed.uses if u.startswith("actions/setup-python@")]
    assert setup == {"python-version": "3.12", "update-environment": "false"}


@pytest.mark.slow
def test_the_comment_job_installs_only_what_posting_needs_and_posts(
        action: dict[str, Any], project: Project, tmp_path: Path) -> None:
    """The posting half of the fork pattern (`mode: comment`) installs the gate without its
    model client, runner or statistics (constraints/post.txt), and that install posts the
    report a fork's run uploaded: the comment path imports nothing else."""
    runner = tmp_path / "runner"
    runner.mkdir()
    inst = _prepare_runner(runner)
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    _run_setup_steps(action, inst, {"mode": "comment"}, workspace, runner)
    venv = inst.runner_temp / "agent-gate-venv"
    frozen = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "freeze", "--all",
                             "--disable-pip-version-check"],
                            capture_output=True, text=True, check=True).stdout
    names = {re.sub(r"[-_.]+", "-", re.split(r"==| @ ", line)[0]).lower()
             for line in frozen.splitlines()}
    assert "agent-gate" in names and "pydantic" in names
    assert not {"numpy", "scipy", "anthropic", "docker", "httpx", "rich"} & names, names
    # the comment job, as the fork pattern runs it: its own checkout-less directory
    project.gh.pulls = [{"number": PR, "head": {"sha": "a" * 40}, "_head": "stranger:feature"}]
    work = tmp_path / "comment-job"
    work.mkdir()
    (work / "gate-report.md").write_text("### agent-gate: skipped\n\nfrom the fork\n")
    event = tmp_path / "workflow-run.json"
    event.write_text(json.dumps({"workflow_run": {
        "event": "pull_request", "head_sha": "a" * 40, "head_branch": "feature",
        "head_repository": {"full_name": "stranger/agent"}, "pull_requests": []}}))
    _, step_env, _ = _gate_step_env(action, {"mode": "comment"}, TOKEN)
    env, out, _ = project.ci_env(work, event="workflow_run", event_path=event,
                                 ref="refs/heads/main")
    p = subprocess.run([str(venv / "bin" / "gate"), "ci"], cwd=work,
                       env={**env, **step_env, "PATH": inst.path}, capture_output=True,
                       text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    (comment,) = [c for c in project.gh.comments.get(PR, []) if "from the fork" in c["body"]]
    assert _read_file_command(out)["comment_url"] == comment["html_url"]


@pytest.mark.slow
def test_the_pip_cache_key_follows_the_pins_not_the_code(action: dict[str, Any],
                                                        tmp_path: Path) -> None:
    """A new pin (or Python) is a new cache; a change to the gate's own code is not."""
    (prepare,) = [s for s in action["runs"]["steps"] if s.get("id") == "prepare"]
    inst = _prepare_runner(tmp_path)

    def key(python: str) -> str:
        out = tmp_path / "out"
        out.write_text("")
        env = {**inst.env(), "GITHUB_OUTPUT": str(out), "AGENT_GATE_PYTHON": python}
        p = _run_step(prepare, env, tmp_path, tmp_path / "prepare.sh")
        assert p.returncode == 0, p.stderr
        return _read_file_command(out)["cache-key"]

    first = key(str(inst.setup_python))
    (inst.action_path / "gate" / "__init__.py").write_text("# new code, same pins\n",
                                                             encoding="utf-8")
    assert key(str(inst.setup_python)) == first
    with (inst.action_path / "constraints" / "action.txt").open("a") as fh:
        fh.write("extra-pin==1.0\n")
    assert key(str(inst.setup_python)) != first
    assert not inst.caller_log.exists()
    # no setup-python (python-version: ''): the Python on PATH, which is the caller's
    assert key("") and inst.caller_log.exists()


def test_the_constraints_pin_every_runtime_dependency() -> None:
    """constraints/action.txt pins each of pyproject's dependencies and the build backend,
    within pyproject's own bounds (regenerate it with constraints/regenerate.sh)."""
    import tomllib

    from packaging.requirements import Requirement

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    pins = _pins(ROOT / "constraints" / "action.txt")
    reqs = project["project"]["dependencies"] + project["build-system"]["requires"]
    for text in reqs:
        req = Requirement(text)
        name = re.sub(r"[-_.]+", "-", req.name).lower()
        assert name in pins, f"constraints/action.txt does not pin {req.name}"
        assert req.specifier.contains(pins[name], prereleases=True), \
            f"constraints/action.txt pins {req.name}=={pins[name]}, outside {req.specifier}"


@pytest.mark.slow
def test_the_action_steps_run_gate_ci_end_to_end(action: dict[str, Any], installed: Installed,
                                                 sim_repo: Project, tmp_path: Path) -> None:
    checkout = sim_repo.pr_branch("fewer-turns", lambda w: set_max_turns(w, 1))
    out, summary = tmp_path / "github_output", tmp_path / "summary.md"
    event = sim_repo.event(checkout)
    step, step_env, workdir = _gate_step_env(
        action, {"sim": "true", "replications": "2", "jobs": "3", "python-version": ""}, TOKEN)
    env = {
        **installed.env(), **step_env,
        "GITHUB_EVENT_NAME": "pull_request", "GITHUB_EVENT_PATH": str(event),
        "GITHUB_REPOSITORY": REPO, "GITHUB_API_URL": sim_repo.gh.url,
        "GITHUB_SERVER_URL": "https://github.example", "GITHUB_RUN_ID": "77",
        "GITHUB_REF": f"refs/pull/{PR}/merge", "GITHUB_WORKSPACE": str(checkout),
        "GITHUB_OUTPUT": str(out), "GITHUB_STEP_SUMMARY": str(summary),
    }
    p = _run_step(step, env, checkout / workdir, tmp_path / "gate.sh")
    logs = p.stdout + p.stderr
    assert p.returncode == 1, logs
    written = _parse_output_file(out.read_text())
    assert written["verdict"] == "regression" and written["exit_code"] == "1"
    for name in ("verdict", "pass_rate", "cost_usd", "cache_hit_rate", "mean_turns",
                 "duration_s", "comment_pending", "results_path", "report_path", "headline"):
        assert name in written and name in action["outputs"]
    assert float(written["duration_s"]) > 0  # the runs' wall time, a metric's output
    assert "simulator" in summary.read_text()
    # the comment is posted by the action's last step, after the report's upload
    outputs = {"gate": written}
    played = play_after_gate(action, {"sim": "true", "python-version": ""}, outputs, env,
                             checkout, tmp_path, tmp_path / "artifacts")
    assert played[-1] == "post", played
    assert outputs["post"]["comment_url"].startswith("https://github.example/")
    bodies = [c["body"] for c in sim_repo.gh.comments[PR]]
    assert len(bodies) == 1
    assert TOKEN not in logs.replace(f"::add-mask::{TOKEN}", "") + "".join(bodies)


@pytest.mark.slow
def test_the_action_uploads_the_report_then_posts_the_comment_that_links_it(
        action: dict[str, Any], installed: Installed, sim_repo: Project,
        tmp_path: Path) -> None:
    """Every step from `gate ci` on, played in order as the runner plays a composite action:
    the gate step judges, writes the HTML report and leaves the comment ("running" until
    then); the upload step takes the report, the results and the transcripts (no secret in
    any of them); the posting step then posts the verdict with the link to that artifact."""
    checkout = sim_repo.pr_branch("fewer-turns", lambda w: set_max_turns(w, 1))
    key = "sk-ant-artifact-canary-0123456789"
    inputs = {"sim": "true", "replications": "2", "jobs": "3", "python-version": "",
              "anthropic-api-key": key}
    env = {
        **installed.env(), "GITHUB_EVENT_NAME": "pull_request",
        "GITHUB_EVENT_PATH": str(sim_repo.event(checkout)), "GITHUB_REPOSITORY": REPO,
        "GITHUB_API_URL": sim_repo.gh.url, "GITHUB_SERVER_URL": "https://github.example",
        "GITHUB_RUN_ID": "77", "GITHUB_REF": f"refs/pull/{PR}/merge",
        "GITHUB_WORKSPACE": str(checkout),
    }
    step, step_env, workdir = _gate_step_env(action, inputs, TOKEN)
    out = tmp_path / "gate-output"
    p = _run_step(step, {**env, **step_env, "GITHUB_OUTPUT": str(out),
                         "GITHUB_STEP_SUMMARY": str(tmp_path / "summary")},
                  checkout / workdir, tmp_path / "gate.sh")
    # the verdict was reached; the comment says "running" until the last step
    assert p.returncode == 1, p.stdout + p.stderr
    comments = [c["body"] for c in sim_repo.gh.comments.get(PR, [])]
    assert len(comments) == 1 and "running for" in comments[0], p.stdout + p.stderr
    outputs = {"gate": _read_file_command(out)}
    store = tmp_path / "artifacts"
    played = play_after_gate(action, inputs, outputs, env, checkout, tmp_path, store)
    assert played == ["upload", "post"]
    gate = outputs["gate"]
    assert gate["verdict"] == "regression"
    # the artifact: the real report (its verdict, its tasks), the results, the transcripts
    (artifact,) = store.iterdir()
    assert artifact.name == gate["report_artifact"] == "agent-gate-report"
    page = (artifact / "gate-report.html").read_text()
    assert "<h1>agent-gate: Regression</h1>" in page
    results = json.loads((artifact / "results.json").read_text())
    for task in {r["task"] for r in results["runs"]}:
        assert f'"task":"{task}"' in page
    assert (artifact / "gate-report.md").is_file()
    transcripts = list((artifact / "results.transcripts").iterdir())
    assert len(transcripts) == len(results["runs"])
    for f in (f for f in artifact.rglob("*") if f.is_file()):
        data = f.read_bytes()
        assert TOKEN.encode() not in data and key.encode() not in data, f
    # the comment: the verdict, linking to that artifact
    (body,) = [c["body"] for c in sim_repo.gh.comments[PR]]
    link = f"https://github.example/{REPO}/actions/runs/77/artifacts/31337"
    assert f"[The full report]({link})" in body and "running for" not in body
    assert "Regression" in body or "regression" in body
    assert outputs["post"]["comment_url"].startswith("https://github.example/")
    assert _expand(action["outputs"]["comment_url"]["value"], inputs, TOKEN, outputs) == \
        outputs["post"]["comment_url"]


WALKER = r"""
import json, os, sys
out_dir, who, needles, control = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
# hex on the command line: the canaries themselves never appear in any process's cmdline
needles = [bytes.fromhex(h) for h in needles.split(",")]
control = bytes.fromhex(control)
found, with_control, read = [], [], 0
for pid in os.listdir("/proc"):
    if not pid.isdigit():
        continue
    for name in ("environ", "cmdline"):
        try:
            with open(f"/proc/{pid}/{name}", "rb") as fh:
                data = fh.read()
        except OSError:
            continue
        read += 1
        found += [[int(pid), name] for n in needles if n in data]
        if name == "environ" and control in data:
            with_control.append(int(pid))
with open(os.path.join(out_dir, f"{who}-{os.getpid()}.json"), "w") as fh:
    json.dump({"found": found, "with_control": with_control, "read": read}, fh)
"""


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="walks /proc")
def test_no_process_a_task_can_reach_holds_a_secret(action: dict[str, Any],
                                                    installed: Installed,
                                                    tmp_path: Path) -> None:
    """The action's real step (`bash -eo pipefail` with the key and the token in its env, then
    its `run:`) starts the gate; a command agent and every verify.sh read each /proc/*/environ
    and /proc/*/cmdline they can and find neither secret anywhere. A control variable that is
    no secret proves they did read the environment of the process the step started."""
    key, token = f"sk-ant-canary-{secrets.token_hex(12)}", f"ghs_canary{secrets.token_hex(12)}"
    control = f"probe-{secrets.token_hex(8)}"
    walker, found_dir = tmp_path / "walk.py", tmp_path / "found"
    walker.write_text(WALKER)
    found_dir.mkdir()
    walk = (f"{sys.executable} {walker} {found_dir} {{who}} "
            f"{key.encode().hex()},{token.encode().hex()} {control.encode().hex()}")
    repo = tmp_path / "repo"
    for word in ("alpha", "beta"):
        d = repo / "tasks" / word
        d.mkdir(parents=True)
        (d / "task.md").write_text(f"Write `{word}` into out.txt.\n")
        (d / "verify.sh").write_text(f"{walk.format(who='verify')}\ngrep -qx {word} out.txt\n")
    (repo / "gate.toml").write_text(
        f"[agent]\nkind = \"command\"\ncommand = '{walk.format(who='agent')}; "
        "printf \"%s\\n\" \"$GATE_TASK_ID\" > out.txt'\n\n"
        "[suite]\ntasks = \"tasks\"\nreplications = 2\njobs = 2\n")
    sh(repo, "git", "init", "-q", "-b", "main")
    sh(repo, "git", "add", "-A")
    sh(repo, "git", "commit", "-q", "-m", "suite")
    event = tmp_path / "push.json"
    event.write_text(json.dumps({"repository": {"full_name": REPO, "default_branch": "main"}}))
    step, step_env, workdir = _gate_step_env(
        action, {"sim": "true", "anthropic-api-key": key, "python-version": ""}, token)
    assert step_env["ANTHROPIC_API_KEY"] == key and step_env["GATE_GITHUB_TOKEN"] == token
    env = {
        **installed.env(), **step_env, "AGENT_GATE_TEST_PROBE": control,
        "GITHUB_TOKEN": token,  # the runner's own copy, as a workflow-level env would give
        "GITHUB_EVENT_NAME": "push", "GITHUB_EVENT_PATH": str(event),
        "GITHUB_REPOSITORY": REPO, "GITHUB_REF": "refs/heads/main",
        "GITHUB_WORKSPACE": str(repo), "GITHUB_RUN_ID": "5",
        "GITHUB_OUTPUT": str(tmp_path / "out"), "GITHUB_STEP_SUMMARY": str(tmp_path / "sum"),
    }
    script = tmp_path / "gate.sh"
    script.write_text(step["run"])
    proc = subprocess.Popen(["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)],
                            cwd=repo / workdir, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    stdout, stderr = proc.communicate(timeout=300)
    assert proc.returncode == 0, stdout + stderr
    reports = {f.name: json.loads(f.read_text()) for f in found_dir.iterdir()}
    assert sum(n.startswith("agent-") for n in reports) == 4, reports.keys()
    assert sum(n.startswith("verify-") for n in reports) == 4, reports.keys()
    for name, r in reports.items():
        assert r["read"] > 0
        # the step's process (the gate, after exec) was read, and it holds no secret
        assert proc.pid in r["with_control"], (name, r, proc.pid)
        assert r["found"] == [], f"{name}: a secret in {r['found']}"
    results = json.loads((repo / "results.json").read_text())
    assert len(results["runs"]) == 4


# ----- the documented workflows -------------------------------------------------------------

def test_readme_workflow_uses_only_real_inputs(action: dict[str, Any]) -> None:
    (block,) = [b for b in _doc_blocks("yaml", "README.md") if "jobs:" in b]
    wf = yaml.safe_load(block)
    steps = [s for job in wf["jobs"].values() for s in job["steps"]]
    gate_steps = [s for s in steps if "agent-gate" in str(s.get("uses", ""))]
    assert len(gate_steps) == 1
    assert set(gate_steps[0]["with"]) <= set(action["inputs"])
    (job,) = wf["jobs"].values()
    assert job["permissions"]["pull-requests"] == "write"


def test_documented_workflows_use_only_real_inputs_and_outputs(action: dict[str, Any]) -> None:
    workflows = [yaml.safe_load(b) for b in _doc_blocks("yaml")]
    full = [w for w in workflows if isinstance(w, dict) and "jobs" in w]
    assert len(full) >= 5  # PR check, main refresh, manual dispatch, the fork pair
    uses_action = 0
    for block in _doc_blocks("yaml"):
        for name in re.findall(r"steps\.gate\.outputs\.([\w-]+)", block):
            assert name in action["outputs"], f"docs use a non-existent output {name}"
    for wf in full:
        for job in wf["jobs"].values():
            for step in job["steps"]:
                assert "${{" not in str(step.get("run", ""))
                if "agent-gate" in str(step.get("uses", "")):
                    uses_action += 1
                    unknown = set(step.get("with") or {}) - set(action["inputs"])
                    assert not unknown, f"docs pass inputs the action does not have: {unknown}"
    assert uses_action >= 5


def _gate_step(wf: dict[str, Any]) -> dict[str, Any]:
    """The step that judges: in a matrix of shards, the judge job's (the shards' only run)."""
    (step,) = [s for job in wf["jobs"].values() for s in job["steps"]
               if "agent-gate" in str(s.get("uses", ""))
               and "shard" not in (s.get("with") or {})]
    return step


def test_documented_workflows_run_on_the_right_events() -> None:
    """Each documented workflow fires on exactly the event its gate mode needs: a PR check on
    pull_request (never pull_request_target: that would run a fork's code with secrets), the
    refresh on a push to main, the manual run on workflow_dispatch, the fork pair's comment
    half on workflow_run of the PR workflow."""
    full = [w for w in map(yaml.safe_load, _doc_blocks("yaml"))
            if isinstance(w, dict) and "jobs" in w]
    readme = [w for w in map(yaml.safe_load, _doc_blocks("yaml", "README.md"))
              if isinstance(w, dict) and "jobs" in w]
    seen: set[str] = set()
    for wf in full + readme:
        triggers = _triggers(wf)
        if "merge_group" in triggers:  # a PR check also checks the merge queue's merges
            assert "pull_request" in triggers, f"{wf['name']}: merge_group without a PR check"
            triggers.pop("merge_group")
        assert len(triggers) == 1, f"{wf['name']}: one trigger each, got {set(triggers)}"
        (event,) = triggers
        seen.add(event)
        spec = triggers[event] or {}
        mode = (_gate_step(wf).get("with") or {}).get("mode")
        if event == "pull_request":
            assert mode in (None, "auto", "pr"), wf["name"]
            assert "agent/**" in spec["paths"] and "tasks/**" in spec["paths"]
        elif event == "push":
            assert spec["branches"] == ["main"] and mode in (None, "auto", "main")
        elif event == "workflow_dispatch":
            assert set(spec["inputs"]["mode"]["options"]) == {"check", "main"}
            assert mode == "${{ inputs.mode }}"
        elif event == "workflow_run":
            assert spec["types"] == ["completed"] and mode == "comment"
            pr_names = {w["name"] for w in full if "pull_request" in _triggers(w)}
            assert set(spec["workflows"]) <= pr_names, "comments on a workflow that is not there"
            # the comment half needs write access; the PR half it listens to must not comment
            (job,) = wf["jobs"].values()
            assert job["permissions"]["pull-requests"] == "write"
        else:
            raise AssertionError(f"{wf['name']}: unexpected trigger {event}")
    assert seen == {"pull_request", "push", "workflow_dispatch", "workflow_run"}
    # the fork pair's PR half skips the comment itself and leaves the report to upload
    fork_pr = [w for w in full if "pull_request" in _triggers(w)
               and (_gate_step(w).get("with") or {}).get("comment") is False]
    assert fork_pr and all(_gate_step(w)["with"].get("fork-without-key") == "skip"
                           for w in fork_pr)


def test_documented_ci_table_is_valid_config() -> None:
    import tomllib

    from gate.core.config import GateConfig

    (block,) = [b for b in _doc_blocks("toml") if "[ci]" in b]
    cfg = GateConfig.model_validate(tomllib.loads(block))
    assert cfg.ci.baseline_refresh == "commit"


def test_docs_list_every_action_output(action: dict[str, Any]) -> None:
    text = (ROOT / "docs" / "github.md").read_text()
    for name in action["outputs"]:
        assert f"`{name}`" in text, f"docs/github.md does not mention the output {name}"
    for name in action["inputs"]:
        assert f"| `{name}` |" in text, f"docs/github.md's input table lacks {name}"


def test_this_repositorys_own_workflows_use_the_action_correctly(
    action: dict[str, Any],
) -> None:
    workflows = sorted((ROOT / ".github" / "workflows").glob("*.yml"))
    assert workflows
    used: dict[str, dict[str, Any]] = {}
    for path in workflows:
        wf = yaml.safe_load(path.read_text())
        for name, job in wf["jobs"].items():
            for step in job["steps"]:
                assert "${{" not in str(step.get("run", "")), path
                if step.get("uses") == "./":
                    used[name] = job
                    assert set(step.get("with") or {}) <= set(action["inputs"]), path
    assert used.keys() == {"pr", "main"}
    # the PR's code is under test: its job may comment, but never write to the repository
    assert used["pr"]["permissions"] == {"contents": "read", "pull-requests": "write"}
    assert not any("if" in job for job in used.values())  # one workflow per event instead
    assert used["main"]["permissions"] == {"contents": "write"}


def _steps_uses(node: Any) -> list[str]:
    """Every ``uses:`` value in a workflow or action, at any depth."""
    if isinstance(node, dict):
        return [str(v) for k, v in node.items() if k == "uses"] + [
            u for v in node.values() for u in _steps_uses(v)]
    if isinstance(node, list):
        return [u for v in node for u in _steps_uses(v)]
    return []


def test_every_third_party_action_is_pinned_by_commit_sha(action: dict[str, Any]) -> None:
    """action.yml pins the actions it runs by commit SHA (a moved tag cannot change what runs,
    and Dependabot cannot reach pins inside someone else's composite action), as do this
    repository's workflows and every documented one. The gate's own action is the user's to
    pin (``./`` here; the docs' placeholder names the README's advice)."""
    places = [("action.yml", action), *_every_workflow()]
    loose = [(where, uses) for where, wf in places for uses in _steps_uses(wf)
             if not uses.startswith(("./", "agent-gate/agent-gate@"))
             and not re.fullmatch(r"[\w.-]+/[\w./-]+@[0-9a-f]{40}", uses)]
    assert loose == []


def _every_workflow() -> list[tuple[str, dict[str, Any]]]:
    """Every workflow we document or run: docs/github.md, docs/big-suites.md (the matrix),
    README.md, .github/workflows."""
    found = [(f"{doc} #{i}", wf)
             for doc in ("docs/github.md", "docs/big-suites.md", "README.md")
             for i, wf in enumerate(map(yaml.safe_load, _doc_blocks("yaml", doc)))
             if isinstance(wf, dict) and "jobs" in wf]
    found += [(str(p.relative_to(ROOT)), yaml.safe_load(p.read_text()))
              for p in sorted((ROOT / ".github" / "workflows").glob("*.yml"))]
    return found


def test_every_workflow_is_least_privilege_bounded_and_never_half_cancelled() -> None:
    """permissions: {} with job-level grants, timeout-minutes, persist-credentials: false on
    every checkout (the gate authenticates its own git), and no step that runs for a cancelled
    run: uploads after the gate run on `!cancelled()`, never `always()`, and a workflow_run job
    skips a cancelled run."""
    workflows = _every_workflow()
    assert len(workflows) >= 9  # 5 in docs/github.md, 1 in docs/big-suites.md, 1 in
    # README, 2 of this repository's
    for where, wf in workflows:
        assert wf.get("permissions") == {}, f"{where}: no `permissions: {{}}` at the top"
        triggers = _triggers(wf)
        for name, job in wf["jobs"].items():
            at = f"{where}: job {name}"
            assert isinstance(job.get("permissions"), dict) and job["permissions"], at
            assert isinstance(job.get("timeout-minutes"), int), f"{at}: no timeout-minutes"
            assert 0 < job["timeout-minutes"] <= 180, at
            assert "always()" not in str(job.get("if", "")), at
            after_gate = False
            for step in job["steps"]:
                assert "always()" not in str(step.get("if", "")), f"{at}: always() runs " \
                    "for a cancelled run too: use !cancelled()"
                if str(step.get("uses", "")).startswith("actions/checkout@"):
                    assert (step.get("with") or {}).get("persist-credentials") is False, \
                        f"{at}: the checkout leaves the token in .git/config"
                if after_gate and "upload-artifact" in str(step.get("uses", "")):
                    # a failed check (a regression) still uploads its report; a cancelled one not
                    assert "!cancelled()" in str(step.get("if", "")), \
                        f"{at}: an upload after the gate must run after a failure, not a cancel"
                if step.get("uses") == "./" or "agent-gate/" in str(step.get("uses", "")):
                    after_gate = True
            if "workflow_run" in triggers:
                assert "github.event.workflow_run.conclusion != 'cancelled'" in job["if"], at
                assert "github.event.workflow_run.event == 'pull_request'" in job["if"], at


def test_every_pr_check_also_runs_in_the_merge_queue_and_groups_by_workflow(
        tmp_path: Path) -> None:
    """A PR check that is required must also run on `merge_group`, or the queue waits for it
    forever; every concurrency group names `github.workflow`, so two suites in one repository
    never cancel each other, and a PR check's group falls back to the ref for a merge-queue
    run (no PR number), so queued merges do not cancel each other either."""
    from gate.setup.init import init_repository

    init_repository(tmp_path, branch="main")
    workflows = _every_workflow() + [
        (f"gate init: {p.name}", yaml.safe_load(p.read_text()))
        for p in sorted((tmp_path / ".github" / "workflows").glob("*.yml"))]
    pr_checks = 0
    for where, wf in workflows:
        triggers = _triggers(wf)
        group = str((wf.get("concurrency") or {}).get("group", ""))
        if not any(_uses_gate(step) for job in wf["jobs"].values() for step in job["steps"]):
            continue  # not a gate workflow (this repository's own tests)
        assert "${{ github.workflow }}" in group, f"{where}: concurrency group {group!r}"
        if "pull_request" in triggers:
            pr_checks += 1
            assert "merge_group" in triggers, f"{where}: no merge_group trigger"
            assert "github.event.pull_request.number || github.ref" in group, where
    assert pr_checks >= 5  # README, docs (the check, the fork half), this repo's, gate init's


def _uses_gate(step: dict[str, Any]) -> bool:
    return step.get("uses") == "./" or "agent-gate/" in str(step.get("uses", ""))


def test_the_fork_comment_job_runs_nothing_from_the_workspace() -> None:
    """The trusted half holds a write token next to a fork's files: no checkout, no `run:`,
    the artifact downloaded under RUNNER_TEMP and the report read from there."""
    (wf,) = [w for _, w in _every_workflow() if "workflow_run" in _triggers(w)]
    (job,) = wf["jobs"].values()
    # posting, the artifact, and publishing the PR's report on the data branch (Pages)
    assert job["permissions"] == {"pull-requests": "write", "actions": "read",
                                  "contents": "write", "pages": "read"}
    uses = [str(s.get("uses", "")) for s in job["steps"]]
    assert not any(u.startswith("actions/checkout@") for u in uses)
    assert all("run" not in s for s in job["steps"])
    (download,) = [s for s in job["steps"]
                   if str(s.get("uses", "")).startswith("actions/download-artifact@")]
    temp = "${{ runner.temp }}/"
    assert download["with"]["path"].startswith(temp)
    gate = _gate_step(wf)["with"]
    assert gate["mode"] == "comment"
    assert gate["report"].startswith(download["with"]["path"] + "/")
