"""``gate ci`` against real git and the fake GitHub: the project (a bare origin, main with a
baseline, PR branches), the CI step's environment, its run in this process or as the CLI, and
the constants every CI test shares (the token, the key, the repository, the PR)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from gate.core.config import load_config
from gate.execution.run import RunRequest, run_suite
from gate.github import MARKER_PREFIX, marker
from tests.helpers.fake_github import FakeGitHub
from tests.helpers.process import user_env

TOKEN = "ghs_e2eSECRETtoken_abcdef123456"
API_KEY = "sk-ant-e2e-SECRET-key-987654321"
REPO = "acme/agent"
PR = 7
WORDS = ("alpha", "beta", "gamma")
GOOD_HELPER = 'echo "$1" > out.txt\n'
BROKEN_HELPER = 'echo "nope" > out.txt\n'
OURS = marker("gate.toml")  # the marker of the default config's comment


def sh(cwd: Path, *args: str) -> str:
    p = subprocess.run(list(args), cwd=cwd, capture_output=True, text=True, check=False,
                       env={**user_env(), "GIT_AUTHOR_NAME": "dev", "GIT_AUTHOR_EMAIL":
                            "dev@example.com", "GIT_COMMITTER_NAME": "dev",
                            "GIT_COMMITTER_EMAIL": "dev@example.com"})
    assert p.returncode == 0, f"{args}: {p.stderr}"
    return p.stdout



def write_suite(root: Path, helper: str = GOOD_HELPER, toml_extra: str = "") -> None:
    for word in WORDS:
        d = root / "tasks" / word
        (d / "solution").mkdir(parents=True)
        (d / "task.md").write_text(f"Write `{word}` into out.txt.\n")
        (d / "verify.sh").write_text(f"set -eu\ngrep -qx {word} out.txt\n")
        (d / "solution" / "solve.sh").write_text(
            f'set -eu\nbash "${{AGENT_HELPER:-$TASK_DIR/../../agent/solve.sh}}" {word}\n')
    (root / "agent").mkdir(exist_ok=True)
    (root / "agent" / "solve.sh").write_text(helper)
    (root / "gate.toml").write_text(
        '[agent]\nkind = "oracle"\n\n[suite]\ntasks = "tasks"\nreplications = 3\njobs = 3\n\n'
        f'[gate]\nbaseline = "baseline.json"\n{toml_extra}')
    (root / ".gitignore").write_text("results.json\n*.transcripts/\ngate-report.md\n")


def write_sim_suite(root: Path, max_turns: int = 10) -> None:
    """Easy tasks the simulator solves in 4 turns, for the built-in agent under ``--sim``."""
    write_word_tasks(root)
    set_max_turns(root, max_turns)
    (root / ".gitignore").write_text("results.json\n*.transcripts/\ngate-report.md\n")


def write_word_tasks(root: Path) -> None:
    """One easy task per word of :data:`WORDS` under ``root/tasks``: write the word into
    out.txt (the simulator solves each in 4 turns)."""
    for word in WORDS:
        d = root / "tasks" / word
        (d / "solution").mkdir(parents=True)
        (d / "task.md").write_text(f"Write `{word}` into out.txt.\n")
        (d / "task.toml").write_text('difficulty = "easy"\n')
        (d / "verify.sh").write_text(f"set -eu\ngrep -qx {word} out.txt\n")
        (d / "solution" / "solve.sh").write_text(f"echo {word} > out.txt\n")


def set_max_turns(root: Path, max_turns: int) -> None:
    (root / "gate.toml").write_text(
        f'[agent]\nkind = "builtin"\nmodel = "claude-sonnet-5-5"\nmax_turns = {max_turns}\n\n'
        '[suite]\ntasks = "tasks"\nreplications = 3\njobs = 3\n\n'
        '[gate]\nbaseline = "baseline.json"\n')


def touch_agent(work: Path) -> None:
    """An agent change that changes no behaviour (``max_tokens = 4095``, far above what a
    task's answer needs): the PR is measured, never skipped as "nothing under test changed"."""
    cfg = work / "gate.toml"
    text = cfg.read_text()
    assert "[agent]\n" in text and "max_tokens" not in text
    cfg.write_text(text.replace("[agent]\n", "[agent]\nmax_tokens = 4095\n", 1))


def make_baseline(root: Path, *, sim: bool = False) -> None:
    """baseline.json from a real run of the suite (never hand-written)."""
    cfg = load_config(root / "gate.toml")
    run_suite(RunRequest(config=cfg, output=root / "baseline.json", transcripts=False,
                         sim=sim))


@dataclass
class Project:
    tmp: Path
    origin: Path
    gh: FakeGitHub

    def clone(self, name: str, branch: str = "main", *, depth: int | None = None) -> Path:
        dest = self.tmp / name
        args = ["git", "clone", "--quiet", "--branch", branch]
        if depth:
            args += [f"--depth={depth}"]
        sh(self.tmp, *args, f"file://{self.origin}", str(dest))
        return dest

    def pr_branch(self, name: str, change: Callable[[Path], None], *,
                  depth: int | None = None) -> Path:
        work = self.clone(f"{name}-author")
        sh(work, "git", "checkout", "-q", "-b", name)
        change(work)
        sh(work, "git", "add", "-A")
        sh(work, "git", "commit", "-q", "-m", f"PR {name}")
        sh(work, "git", "push", "-q", "origin", name)
        return self.clone(f"{name}-ci", name, depth=depth)

    def event(self, checkout: Path, *, head_repo: str = REPO, labels: tuple[str, ...] = ()
              ) -> Path:
        path = checkout.parent / f"{checkout.name}-event.json"
        path.write_text(json.dumps({
            "action": "synchronize", "number": PR,
            "pull_request": {
                "number": PR, "html_url": f"https://github.example/{REPO}/pull/{PR}",
                "base": {"ref": "main"},
                "head": {"ref": "feature", "sha": "0" * 40, "repo": {"full_name": head_repo}},
                "labels": [{"name": n} for n in labels],
            },
            "repository": {"full_name": REPO, "default_branch": "main"},
        }))
        return path

    def gate_ci(self, checkout: Path, *args: str, event: str = "pull_request",
                event_path: Path | None = None, ref: str = f"refs/pull/{PR}/merge",
                env: dict[str, str] | None = None, process: bool = False) -> CIRun:
        """``gate ci`` with ``args`` in ``checkout``, as the runner starts it: in this process
        through the CLI (its options, its error lines and exit codes, the environment the step
        gets), or (``process``: the smoke tests of each mode) as ``python -m gate ci``."""
        full_env, out, summary = self.ci_env(checkout, event=event, event_path=event_path,
                                             ref=ref, env=env)
        if not process:
            return ci_run(*gate_in_process(["ci", *args], checkout, full_env), out, summary)
        p = subprocess.run([sys.executable, "-m", "gate", "ci", *args], cwd=checkout,
                           capture_output=True, text=True, env=full_env, timeout=240,
                           check=False)
        return ci_run(p.returncode, p.stdout, p.stderr, out, summary)

    def ci_env(self, checkout: Path, *, event: str = "pull_request",
               event_path: Path | None = None, ref: str = f"refs/pull/{PR}/merge",
               env: dict[str, str] | None = None) -> tuple[dict[str, str], Path, Path]:
        """The environment the runner gives the action's step, and its output and summary
        files."""
        out = checkout.parent / f"{checkout.name}-output-{len(self.gh.requests)}"
        summary = checkout.parent / f"{checkout.name}-summary-{len(self.gh.requests)}.md"
        full_env = {
            **user_env(),
            "GITHUB_ACTIONS": "true", "CI": "true",
            "GITHUB_EVENT_NAME": event,
            "GITHUB_EVENT_PATH": str(event_path or self.event(checkout)),
            "GITHUB_REPOSITORY": REPO, "GITHUB_API_URL": self.gh.url,
            "GITHUB_SERVER_URL": "https://github.example", "GITHUB_RUN_ID": "4242",
            "GITHUB_REF": ref, "GITHUB_WORKSPACE": str(checkout),
            "GITHUB_OUTPUT": str(out), "GITHUB_STEP_SUMMARY": str(summary),
            "GITHUB_TOKEN": TOKEN, "ANTHROPIC_API_KEY": API_KEY,
            # the oracle "agent" under test is the checkout's helper; the tasks that call it
            # are the base branch's (extracted elsewhere), so they find it through this
            "AGENT_HELPER": str(checkout / "agent" / "solve.sh"),
            # the runner's temp dir: a deferred comment's file goes there
            # (gate/github/_deferred.py), never into the machine's /tmp
            "RUNNER_TEMP": str(self.tmp),
            **(env or {}),
        }
        return full_env, out, summary


def gate_in_process(args: list[str], cwd: Path, env: dict[str, str]) -> tuple[int, str, str]:
    """``gate *args`` run by the CLI in this process, in ``cwd`` with exactly ``env`` as its
    environment (restored after): (exit code, stdout, stderr). What only a separate process
    shows — the credentials leaving ``/proc/<pid>/environ``, signals — is tested as one."""
    from click.testing import CliRunner

    from gate.cli import main

    saved_env, saved_cwd = dict(os.environ), Path.cwd()
    os.environ.clear()
    os.environ.update(env)
    os.chdir(cwd)
    try:
        result = CliRunner().invoke(main, args, catch_exceptions=False)
    finally:
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)
    return result.exit_code, result.stdout, result.stderr


def ci_run(code: int, stdout: str, stderr: str, out: Path, summary: Path) -> CIRun:
    outputs = _parse_output_file(out.read_text()) if out.exists() else {}
    return CIRun(code, stdout, stderr, outputs, summary.read_text() if summary.exists() else "")


@dataclass
class CIRun:
    code: int
    stdout: str
    stderr: str
    outputs: dict[str, str]
    summary: str

    def no_secrets(self, gh: FakeGitHub) -> None:
        """The token and the key appear nowhere but in the ::add-mask:: commands."""
        visible = "\n".join([
            *(ln for ln in self.stdout.splitlines() if not ln.startswith("::add-mask::")),
            self.stderr, self.summary, json.dumps(self.outputs),
            *(c["body"] for cs in gh.comments.values() for c in cs),
        ])
        assert TOKEN not in visible and API_KEY not in visible
        assert f"::add-mask::{TOKEN}" in self.stdout


def _project(tmp_path: Path, *, sim: bool) -> Iterator[Project]:
    origin = tmp_path / "origin.git"
    sh(tmp_path, "git", "init", "-q", "--bare", "-b", "main", str(origin))
    seed = tmp_path / "seed"
    seed.mkdir()
    sh(seed, "git", "init", "-q", "-b", "main")
    if sim:
        write_sim_suite(seed)
    else:
        write_suite(seed)
    make_baseline(seed, sim=sim)
    sh(seed, "git", "add", "-A")
    sh(seed, "git", "commit", "-q", "-m", "suite and baseline")
    sh(seed, "git", "remote", "add", "origin", f"file://{origin}")
    sh(seed, "git", "push", "-q", "origin", "main")
    with FakeGitHub(REPO, token=TOKEN) as gh:
        yield Project(tmp_path, origin, gh)


def _break_agent(work: Path) -> None:
    (work / "agent" / "solve.sh").write_text(BROKEN_HELPER)


def _marker_comments(gh: FakeGitHub) -> list[dict]:
    return [c for c in gh.comments.get(PR, []) if MARKER_PREFIX in c["body"]]


def push_event(checkout: Path) -> Path:
    path = checkout.parent / "push-event.json"
    path.write_text(json.dumps({"ref": "refs/heads/main",
                                "repository": {"full_name": REPO, "default_branch": "main"}}))
    return path


def store_baselines(checkout: Path, how: str, **more: str) -> None:
    """``[ci] baseline_refresh = how`` (and ``more`` [ci] keys) in the checkout's gate.toml,
    committed there, as a repository that keeps its baselines that way has it: where they live
    is gate.toml's alone (no CLI or action input)."""
    cfg = checkout / "gate.toml"
    keys = {"baseline_refresh": how, **more}
    lines = "".join(f"{k} = {json.dumps(v)}\n" for k, v in keys.items())
    before = cfg.read_text()
    text = re.sub(rf"(?m)^({'|'.join(keys)}) = .*\n", "", before)
    text = (text.replace("[ci]\n", f"[ci]\n{lines}", 1) if "[ci]\n" in text
            else f"{text}\n[ci]\n{lines}")
    if text != before:
        cfg.write_text(text)
        sh(checkout, "git", "commit", "-q", "-am", f"baselines: {how}")


def refresh(project: Project, checkout: Path, *args: str, env: dict[str, str] | None = None,
            store: str | None = None) -> CIRun:
    """Main's refresh of ``checkout``; ``store``: its gate.toml's baseline_refresh first."""
    if store is not None:
        store_baselines(checkout, store)
    return project.gate_ci(checkout, *args, event="push", event_path=push_event(checkout),
                           ref="refs/heads/main", env=env)


def _parse_output_file(text: str) -> dict[str, str]:
    """Parse GITHUB_OUTPUT the way the runner does (name<<DELIM ... DELIM)."""
    out: dict[str, str] = {}
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        if not lines[i]:
            i += 1
            continue
        name, delim = lines[i].split("<<", 1)
        j = lines.index(delim, i + 1)
        out[name] = "\n".join(lines[i + 1:j])
        i = j + 1
    return out


def _origin(tmp_path: Path, seed: Path) -> Path:
    origin = tmp_path / "origin.git"
    sh(tmp_path, "git", "init", "-q", "--bare", "-b", "main", str(origin))
    sh(seed, "git", "add", "-A")
    sh(seed, "git", "commit", "-q", "-m", "the suite, no baseline")
    sh(seed, "git", "remote", "add", "origin", f"file://{origin}")
    sh(seed, "git", "push", "-q", "origin", "main")
    return origin


def ab_project(tmp_path: Path, *, baseline: bool = False, ci: str = "") -> Iterator[Project]:
    """The built-in agent on the simulator; main has no baseline (unless ``baseline``), and
    no data branch exists: nothing anywhere to judge a PR against."""
    seed = tmp_path / "seed"
    seed.mkdir()
    sh(seed, "git", "init", "-q", "-b", "main")
    write_sim_suite(seed)
    if ci:
        with (seed / "gate.toml").open("a") as fh:
            fh.write(f"\n[ci]\n{ci}\n")
    if baseline:
        make_baseline(seed, sim=True)
    origin = _origin(tmp_path, seed)
    with FakeGitHub(REPO, token=TOKEN) as gh:
        yield Project(tmp_path, origin, gh)
