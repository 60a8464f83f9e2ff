"""``action.yml``: valid, safe (inputs only through ``env:``), and its steps really work.

The execution test plays the runner's part for a composite action: it installs the package
from ``GITHUB_ACTION_PATH`` into a fresh virtualenv with the step's own command, then runs the
``gate ci`` step with the step's ``env:`` (expressions expanded the way the runner would)
against a real git repository and the fake GitHub API, under the simulator.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import venv
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from test_ci import PR, REPO, TOKEN, Project, _clean_env, _project, set_max_turns
from test_github import _parse_output_file

from gate.cli._ci import ci as ci_command

yaml = pytest.importorskip("yaml", reason="PyYAML is in the dev extras: pip install -e '.[dev]'")

ROOT = Path(__file__).resolve().parents[1]
EXPR = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")
# Inputs that configure the runner rather than gate: allowed outside env.
RUNNER_INPUTS = {"python-version": "with", "working-directory": "working-directory"}


@pytest.fixture
def sim_repo(tmp_path: Path) -> Iterator[Project]:
    pytest.importorskip("gate.sim")
    (tmp_path / "repo").mkdir()
    yield from _project(tmp_path / "repo", sim=True)


@pytest.fixture(scope="module")
def action() -> dict[str, Any]:
    data = yaml.safe_load((ROOT / "action.yml").read_text())
    assert isinstance(data, dict)
    return data


def test_action_is_a_composite_with_described_inputs_and_outputs(action: dict[str, Any]) -> None:
    assert action["runs"]["using"] == "composite"
    assert action["name"] and action["description"]
    for section in ("inputs", "outputs"):
        for name, spec in action[section].items():
            assert spec.get("description"), f"{section}.{name} has no description"
    assert action["inputs"]["github-token"]["default"] == "${{ github.token }}"
    steps = action["runs"]["steps"]
    assert any(str(s.get("uses", "")).startswith("actions/setup-python@") for s in steps)


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


def test_env_names_are_gate_ci_options(action: dict[str, Any]) -> None:
    """Each GATE_* variable the action sets is read by a real `gate ci` option."""
    (gate_step,) = [s for s in action["runs"]["steps"] if s.get("id") == "gate"]
    envvars = {p.envvar for p in ci_command.params if isinstance(p.envvar, str)}
    for name in gate_step["env"]:
        if name.startswith("GATE_") and name != "GATE_GITHUB_TOKEN":
            assert name in envvars, f"{name} is not an option of gate ci"


def test_outputs_mirror_what_gate_ci_writes(action: dict[str, Any]) -> None:
    source = (ROOT / "gate" / "github" / "_ci.py").read_text()
    for name, spec in action["outputs"].items():
        assert spec["value"] == f"${{{{ steps.gate.outputs.{name} }}}}"
        assert f'"{name}"' in source, f"gate ci never writes the output {name}"


# ----- running the steps --------------------------------------------------------------------

def _expand(value: str, inputs: dict[str, str], token: str) -> str:
    def sub(m: re.Match[str]) -> str:
        expr = m.group(1)
        if expr.startswith("inputs."):
            return inputs[expr[len("inputs."):]]
        if expr == "github.token":
            return token
        raise AssertionError(f"the test runner does not know the expression {expr!r}")
    return EXPR.sub(sub, value)


def _copy_action(dest: Path) -> Path:
    """The action's files (what a `uses: owner/agent-gate@v1` checkout holds)."""
    ignore = shutil.ignore_patterns("__pycache__", "*.egg-info", "build")
    for name in ("pyproject.toml", "README.md", "LICENSE", "action.yml"):
        if (ROOT / name).exists():
            shutil.copy2(ROOT / name, dest / name)
    shutil.copytree(ROOT / "gate", dest / "gate", ignore=ignore)
    return dest


@pytest.mark.slow
def test_the_action_steps_run_gate_ci_end_to_end(action: dict[str, Any], sim_repo: Project,
                                                 tmp_path: Path) -> None:
    action_path = tmp_path / "action"
    action_path.mkdir()
    _copy_action(action_path)
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(system_site_packages=True, with_pip=True).create(env_dir)
    checkout = sim_repo.pr_branch("fewer-turns", lambda w: set_max_turns(w, 1))
    out, summary = tmp_path / "github_output", tmp_path / "summary.md"
    event = sim_repo.event(checkout)
    base_env = {
        **_clean_env(),
        "PATH": f"{env_dir / 'bin'}{os.pathsep}{os.environ['PATH']}",
        "VIRTUAL_ENV": str(env_dir),
        "GITHUB_ACTIONS": "true", "CI": "true", "GITHUB_ACTION_PATH": str(action_path),
        "GITHUB_EVENT_NAME": "pull_request", "GITHUB_EVENT_PATH": str(event),
        "GITHUB_REPOSITORY": REPO, "GITHUB_API_URL": sim_repo.gh.url,
        "GITHUB_SERVER_URL": "https://github.example", "GITHUB_RUN_ID": "77",
        "GITHUB_REF": f"refs/pull/{PR}/merge", "GITHUB_WORKSPACE": str(checkout),
        "GITHUB_OUTPUT": str(out), "GITHUB_STEP_SUMMARY": str(summary),
    }
    inputs = {name: str(spec.get("default", "")) for name, spec in action["inputs"].items()}
    inputs.update({"sim": "true", "replications": "2", "jobs": "3", "python-version": ""})
    inputs = {k: _expand(v, inputs, TOKEN) for k, v in inputs.items()}

    codes: dict[str, int] = {}
    logs = ""
    for step in action["runs"]["steps"]:
        if "run" not in step:
            continue  # `uses:` steps (setup-python) are the runner's business
        env = {**base_env, **{k: _expand(str(v), inputs, TOKEN)
                              for k, v in (step.get("env") or {}).items()}}
        cwd = checkout / _expand(str(step.get("working-directory", ".")), inputs, TOKEN)
        script = tmp_path / f"step-{len(codes)}.sh"
        script.write_text(step["run"])
        p = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)],
                           cwd=cwd, env=env, capture_output=True, text=True, timeout=300,
                           check=False)
        codes[step["name"]] = p.returncode
        logs += p.stdout + p.stderr
        if p.returncode not in (0, 1):
            pytest.fail(f"step {step['name']!r} exited {p.returncode}:\n{p.stdout}\n{p.stderr}")

    assert codes == {"Install agent-gate": 0, "Run gate ci": 1}
    assert (env_dir / "bin" / "gate").exists()  # the step's own install, not the dev one
    written = _parse_output_file(out.read_text())
    assert written["verdict"] == "regression" and written["exit_code"] == "1"
    assert written["comment_url"].startswith("https://github.example/")
    for name in ("verdict", "pass_rate", "cost_usd", "cache_hit_rate", "mean_turns",
                 "comment_url", "results_path", "report_path", "headline"):
        assert name in written and name in action["outputs"]
    assert "simulator" in summary.read_text()
    bodies = [c["body"] for c in sim_repo.gh.comments[PR]]
    assert len(bodies) == 1
    assert TOKEN not in logs.replace(f"::add-mask::{TOKEN}", "") + "".join(bodies)


# ----- the documented workflows -------------------------------------------------------------

def _doc_blocks(lang: str, doc: str = "docs/github.md") -> list[str]:
    text = (ROOT / doc).read_text()
    return re.findall(rf"```{lang}\n(.*?)```", text, flags=re.S)


def test_readme_workflow_uses_only_real_inputs(action: dict[str, Any]) -> None:
    (block,) = [b for b in _doc_blocks("yaml", "README.md") if "jobs:" in b]
    wf = yaml.safe_load(block)
    steps = [s for job in wf["jobs"].values() for s in job["steps"]]
    gate_steps = [s for s in steps if "agent-gate" in str(s.get("uses", ""))]
    assert len(gate_steps) == 1
    assert set(gate_steps[0]["with"]) <= set(action["inputs"])
    assert wf["permissions"]["pull-requests"] == "write"


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


def _triggers(wf: dict[str, Any]) -> dict[str, Any]:
    on = wf[True] if True in wf else wf["on"]  # PyYAML reads the bare key `on` as True
    return {on: None} if isinstance(on, str) else dict(on)


def _gate_step(wf: dict[str, Any]) -> dict[str, Any]:
    (step,) = [s for job in wf["jobs"].values() for s in job["steps"]
               if "agent-gate" in str(s.get("uses", ""))]
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
            assert wf["permissions"]["pull-requests"] == "write"
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

    from gate.config import GateConfig

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
    used = 0
    for path in workflows:
        wf = yaml.safe_load(path.read_text())
        for job in wf["jobs"].values():
            for step in job["steps"]:
                assert "${{" not in str(step.get("run", "")), path
                if step.get("uses") == "./":
                    used += 1
                    assert set(step.get("with") or {}) <= set(action["inputs"]), path
    assert used == 1
