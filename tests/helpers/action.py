"""``action.yml``'s steps played as the runner plays them: expressions expanded, ``if:``
evaluated, ``run:`` steps run for real in a prepared runner, uploads by their contract."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.helpers import ROOT
from tests.helpers.ci import REPO, TOKEN
from tests.helpers.process import user_env

EXPR = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")  # a ${{ … }} expression


def _expand(value: str, inputs: dict[str, str], token: str,
            steps: dict[str, dict[str, str]] | None = None,
            runner: dict[str, str] | None = None) -> str:
    """``${{ … }}`` as the runner expands it, for the expressions this action uses."""
    def sub(m: re.Match[str]) -> str:
        expr = m.group(1)
        if " || " in expr:  # the first non-empty alternative
            return next((v for v in (_expand(f"${{{{ {e} }}}}", inputs, token, steps, runner)
                                     for e in expr.split(" || ")) if v), "")
        if expr.startswith("inputs."):
            return inputs[expr[len("inputs."):]]
        if expr == "github.token":
            return token
        if (sm := re.fullmatch(r"steps\.([\w-]+)\.outputs\.([\w-]+)", expr)) is not None:
            # a skipped step, or one that did not write the output, gives ""
            return (steps or {}).get(sm.group(1), {}).get(sm.group(2), "")
        if expr.startswith("runner.") and runner is not None:
            return runner[expr[len("runner."):]]
        raise AssertionError(f"the test runner does not know the expression {expr!r}")
    return EXPR.sub(sub, value)


def _condition(cond: str, inputs: dict[str, str],
               steps: dict[str, dict[str, str]] | None = None) -> bool:
    """A step's ``if:`` in a run that was not cancelled; this action only tests inputs and
    earlier steps' outputs against the empty string, joined by ``&&``."""
    result = True
    for part in cond.strip().split(" && "):
        if part == "!cancelled()":
            continue
        m = re.fullmatch(r"(inputs\.([\w-]+)|steps\.([\w-]+)\.outputs\.([\w-]+)) "
                         r"(==|!=) ''", part.strip())
        assert m, f"the test runner does not know the condition {cond!r}"
        value = (inputs[m.group(2)] if m.group(2) is not None
                 else (steps or {}).get(m.group(3), {}).get(m.group(4), ""))
        result = result and (value == "") == (m.group(5) == "==")
    return result


def _copy_action(dest: Path) -> Path:
    """The action's files, as a `uses: owner/agent-gate@v1` checkout holds them: every file of
    the repository (tracked, or new and not ignored), nothing a build left behind."""
    files = subprocess.run(["git", "ls-files", "-z", "-co", "--exclude-standard"], cwd=ROOT,
                           capture_output=True, text=True, check=True).stdout.split("\0")
    for name in filter(None, files):
        src = ROOT / name
        if src.is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / name)
    return dest


def _plant_hostile_modules(workspace: Path, marker: Path) -> None:
    """What a fork's artifact or a PR's checkout could hold: packages named like the tools a
    step runs with `python -m`, and a gate.toml. Importing any of them leaves ``marker``."""
    for name in ("pip", "venv", "gate", "ensurepip"):
        pkg = workspace / name
        pkg.mkdir(parents=True, exist_ok=True)
        code = (f"open({str(marker)!r}, 'a').write('{name} imported from the workspace\\n')\n"
                "raise SystemExit(0)\n")
        (pkg / "__init__.py").write_text(code)
        (pkg / "__main__.py").write_text(code)


def _run_step(step: dict[str, Any], env: dict[str, str], cwd: Path, script: Path
              ) -> subprocess.CompletedProcess[str]:
    """A composite action's `shell: bash` step, started the way the runner starts it: the
    script in a file, `bash --noprofile --norc -eo pipefail {0}`, the step's env in bash's."""
    assert step.get("shell") == "bash"
    script.write_text(step["run"])
    return subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)],
                          cwd=cwd, env=env, capture_output=True, text=True, timeout=600,
                          check=False)


def _read_file_command(path: Path) -> dict[str, str]:
    """GITHUB_OUTPUT / GITHUB_ENV as the runner reads them: `name=value` or a heredoc."""
    out: dict[str, str] = {}
    lines = path.read_text().split("\n") if path.exists() else []
    i = 0
    while i < len(lines):
        line = lines[i]
        if "<<" in line and ("=" not in line or line.index("<<") < line.index("=")):
            name, delim = line.split("<<", 1)
            j = lines.index(delim, i + 1)
            out[name] = "\n".join(lines[i + 1:j])
            i = j + 1
            continue
        if line:
            name, value = line.split("=", 1)
            out[name] = value
        i += 1
    return out


CALLER_PYTHON = """#!/bin/sh
# the caller's own `python` (their agent's, their verify scripts'): the action must not use it
# to install itself, nor put another in front of it on PATH
echo "$0 $*" >> "{log}"
[ "$1" = "--whoami" ] && {{ echo "the caller's python"; exit 0; }}
exec "{real}" "$@"
"""


@dataclass
class Installed:
    """The action's setup and install steps, run for real once, as the runner runs them: its
    virtualenv under RUNNER_TEMP, built from the interpreter setup-python reported."""

    action_path: Path
    runner_temp: Path
    path: str  # the job's PATH: the caller's own `python` first
    caller_log: Path  # one line per start of the caller's `python`
    setup_python: Path  # the interpreter setup-python set up (off PATH)
    outputs: dict[str, dict[str, str]]  # each step's outputs, by step id
    env_files: dict[str, str]  # everything the steps wrote to GITHUB_ENV and GITHUB_PATH
    uses: list[tuple[str, dict[str, str]]]  # the `uses:` steps and their expanded `with:`

    def env(self) -> dict[str, str]:
        return {**user_env(), "PATH": self.path, "GITHUB_ACTIONS": "true", "CI": "true",
                "GITHUB_ACTION_PATH": str(self.action_path),
                "RUNNER_TEMP": str(self.runner_temp), "RUNNER_OS": "Linux"}


def _run_setup_steps(action: dict[str, Any], inst: Installed, inputs: dict[str, str],
                     workspace: Path, tmp: Path) -> None:
    """Every step before `gate ci`, in order, the way the runner runs a composite action:
    `if:` decides, expressions are expanded from the inputs and earlier steps' outputs, each
    step gets fresh GITHUB_OUTPUT / GITHUB_ENV / GITHUB_PATH files. The two marketplace
    actions are played by their contract: setup-python reports `python-path` (and would
    change PATH only without `update-environment: false`), the cache misses."""
    full = {name: str(spec.get("default", "")) for name, spec in action["inputs"].items()}
    full.update(inputs)
    runner = {"temp": str(inst.runner_temp), "os": "Linux"}
    for n, step in enumerate(action["runs"]["steps"]):
        if step.get("id") == "gate":
            return
        if "if" in step and not _condition(str(step["if"]), full):
            continue
        def expand(v: object) -> str:
            text = str(v).lower() if isinstance(v, bool) else str(v)  # YAML `false`: "false"
            return _expand(text, full, "", inst.outputs, runner)

        if "uses" in step:
            with_ = {k: expand(v) for k, v in (step.get("with") or {}).items()}
            inst.uses.append((str(step["uses"]), with_))
            if str(step["uses"]).startswith("actions/setup-python@"):
                assert step["with"].get("update-environment") is False, \
                    "setup-python would put its Python first on PATH for the rest of the job"
                inst.outputs[step["id"]] = {"python-path": str(inst.setup_python),
                                            "python-version": "3.12.0", "cache-hit": ""}
            elif not str(step["uses"]).startswith("actions/cache@"):
                raise AssertionError(f"the test runner cannot play {step['uses']}")
            continue
        files = {k: tmp / f"step{n}-{k}" for k in ("GITHUB_OUTPUT", "GITHUB_ENV", "GITHUB_PATH")}
        env = {**inst.env(), **{k: expand(v) for k, v in (step.get("env") or {}).items()},
               "GITHUB_WORKSPACE": str(workspace), **{k: str(v) for k, v in files.items()}}
        p = _run_step(step, env, workspace, tmp / f"step{n}.sh")
        assert p.returncode == 0, f"{step.get('name')}: {p.stdout}{p.stderr}"
        if "id" in step:
            inst.outputs[step["id"]] = _read_file_command(files["GITHUB_OUTPUT"])
        for k in ("GITHUB_ENV", "GITHUB_PATH"):
            if files[k].exists():
                inst.env_files[k] = inst.env_files.get(k, "") + files[k].read_text()
    raise AssertionError("no `gate ci` step")


def _prepare_runner(tmp: Path) -> Installed:
    action_path = tmp / "action"
    action_path.mkdir()
    _copy_action(action_path)
    # the caller's `python`, first on the job's PATH; setup-python's, in a tool cache off PATH
    bindir = tmp / "caller-bin"
    bindir.mkdir()
    log = tmp / "caller-python.log"
    (bindir / "python").write_text(CALLER_PYTHON.format(log=log, real=sys.executable))
    (bindir / "python").chmod(0o755)
    (bindir / "python3").symlink_to("python")
    toolcache = tmp / "toolcache" / "Python" / "3.12.0" / "x64" / "bin"
    toolcache.mkdir(parents=True)
    (toolcache / "python3").symlink_to(sys.executable)
    runner_temp = tmp / "runner-temp"
    runner_temp.mkdir()
    return Installed(action_path, runner_temp, f"{bindir}{os.pathsep}{os.environ['PATH']}",
                     log, toolcache / "python3", {}, {}, [])


def _gate_step_env(action: dict[str, Any], inputs: dict[str, str], token: str
                   ) -> tuple[dict[str, Any], dict[str, str], str]:
    """The `gate ci` step, its env and its working directory, expressions expanded as the
    runner would."""
    (step,) = [s for s in action["runs"]["steps"] if s.get("id") == "gate"]
    full = {name: str(spec.get("default", "")) for name, spec in action["inputs"].items()}
    full.update(inputs)
    full = {k: _expand(v, full, token) for k, v in full.items()}
    env = {k: _expand(str(v), full, token) for k, v in (step.get("env") or {}).items()}
    return step, env, _expand(str(step.get("working-directory", ".")), full, token)


def _play_upload(step: dict[str, Any], with_: dict[str, str], store: Path,
                 artifact_id: str) -> dict[str, str]:
    """actions/upload-artifact@v4 by its contract: every file of the newline-separated
    `path:` list (directories whole), kept under the artifact's name; its outputs."""
    assert str(step["uses"]).startswith("actions/upload-artifact@")
    dest = store / with_["name"]
    assert not dest.exists() or with_.get("overwrite") == "true", \
        f"two uploads of the artifact {with_['name']}"
    shutil.rmtree(dest, ignore_errors=True)
    dest.mkdir(parents=True)
    for line in filter(None, (ln.strip() for ln in with_["path"].splitlines())):
        src = Path(line)
        assert src.is_absolute(), line
        if not src.exists():
            assert with_.get("if-no-files-found") != "error", line
            continue
        if src.is_dir():
            shutil.copytree(src, dest / src.name)
        else:
            shutil.copy2(src, dest / src.name)
    return {"artifact-id": artifact_id,
            "artifact-url": f"https://github.example/{REPO}/actions/runs/77/artifacts/"
                            f"{artifact_id}"}


def play_after_gate(action: dict[str, Any], inputs: dict[str, str],
                    outputs: dict[str, dict[str, str]], env: dict[str, str], workdir: Path,
                    tmp: Path, store: Path, artifact_id: str = "31337") -> list[str]:
    """Every step after `gate ci` (whose outputs are in ``outputs["gate"]``), in order, as
    the runner plays a composite action in a run that was not cancelled: `if:` on the inputs
    and earlier steps' outputs, expressions expanded, an upload played by its contract into
    ``store/<name>/``, a `run:` step run for real with ``env`` and the step's own. Returns the
    ids of the steps played; their outputs go into ``outputs``."""
    full = {name: str(spec.get("default", "")) for name, spec in action["inputs"].items()}
    full.update(inputs)
    full = {k: _expand(v, full, TOKEN) for k, v in full.items()}
    steps = action["runs"]["steps"]
    played: list[str] = []
    for n, step in enumerate(steps[[s.get("id") for s in steps].index("gate") + 1:]):
        if "if" in step and not _condition(str(step["if"]), full, outputs):
            continue

        def expand(v: object) -> str:
            text = str(v).lower() if isinstance(v, bool) else str(v)
            return _expand(text, full, TOKEN, outputs, {"temp": env["RUNNER_TEMP"],
                                                         "os": "Linux"})

        sid = str(step.get("id") or step["name"])
        played.append(sid)
        if "uses" in step:
            with_ = {k: expand(v) for k, v in (step.get("with") or {}).items()}
            outputs[sid] = _play_upload(step, with_, store, artifact_id)
            continue
        out = tmp / f"after{n}-output"
        step_env = {**env, **{k: expand(v) for k, v in (step.get("env") or {}).items()},
                    "GITHUB_OUTPUT": str(out), "GITHUB_STEP_SUMMARY": str(tmp / "summary")}
        p = _run_step(step, step_env, workdir, tmp / f"after{n}.sh")
        assert p.returncode == 0, f"{sid}: {p.stdout}{p.stderr}"
        outputs[sid] = _read_file_command(out)
    return played


#: the pages that document the GitHub workflows: the action's own, the matrix of shards, and
#: calling the gate from your own steps
GITHUB_DOCS = ("docs/github.md", "docs/big-suites.md", "docs/security.md")


def _doc_blocks(lang: str, doc: str | None = None) -> list[str]:
    """The ``lang`` blocks of ``doc``, or of every page in GITHUB_DOCS."""
    text = "\n".join((ROOT / d).read_text() for d in ((doc,) if doc else GITHUB_DOCS))
    return re.findall(rf"```{lang}\n(.*?)```", text, flags=re.S)


def _triggers(wf: dict[str, Any]) -> dict[str, Any]:
    on = wf[True] if True in wf else wf["on"]  # PyYAML reads the bare key `on` as True
    return {on: None} if isinstance(on, str) else dict(on)
