"""``gate init``: adoption in one command, through the real CLI in real git repositories.

In an empty repository, ``gate init`` then ``gate validate`` and ``gate run --sim --agent
oracle`` work as they are; it never overwrites a file (exit 2 naming it, nothing written).
The generated workflows are linted with the others in tests/ci/test_workflow_lint.py.
"""

from __future__ import annotations

import json
import os
import subprocess
import tomllib
from pathlib import Path

import pytest
import yaml

from gate.setup.init import EXAMPLE_TASK
from tests.helpers.process import gate as run_gate
from tests.helpers.process import user_env

WRITTEN = ("gate.toml", "agent/system.md", f"tasks/{EXAMPLE_TASK}/task.md",
           f"tasks/{EXAMPLE_TASK}/task.toml", f"tasks/{EXAMPLE_TASK}/setup.sh",
           f"tasks/{EXAMPLE_TASK}/verify.sh", f"tasks/{EXAMPLE_TASK}/gatecheck.py",
           f"tasks/{EXAMPLE_TASK}/solution/solve.sh",
           ".github/workflows/agent-gate.yml", ".github/workflows/agent-gate-main.yml",
           ".github/workflows/agent-gate-report.yml")
SHARED = (".gitignore", ".github/dependabot.yml")


def _env() -> dict[str, str]:
    return user_env(GIT_AUTHOR_NAME="dev", GIT_AUTHOR_EMAIL="dev@example.com",
                    GIT_COMMITTER_NAME="dev", GIT_COMMITTER_EMAIL="dev@example.com")


def gate(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run_gate(*args, cwd=cwd, base=_env())


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, env=_env(), capture_output=True, text=True,
                          check=True).stdout


def empty_repo(path: Path, branch: str = "trunk") -> Path:
    path.mkdir()
    git(path, "init", "-q", f"--initial-branch={branch}")
    return path


@pytest.mark.slow
def test_init_then_an_oracle_run_works_in_an_empty_git_repository(tmp_path: Path) -> None:
    repo = empty_repo(tmp_path / "repo")
    p = gate(repo, "init")
    assert p.returncode == 0, p.stderr
    for rel in WRITTEN:
        assert (repo / rel).is_file(), rel
        assert f"wrote {rel}" in p.stdout
    assert "Next steps:" in p.stdout and "gate run --sim --agent oracle" in p.stdout
    for script in ("setup.sh", "verify.sh", "solution/solve.sh"):
        assert os.access(repo / "tasks" / EXAMPLE_TASK / script, os.X_OK), script
    # the refresh runs on this repository's branch; the PR check on PRs and the merge queue
    main = yaml.safe_load((repo / ".github/workflows/agent-gate-main.yml").read_text())
    assert main[True]["push"]["branches"] == ["trunk"]
    # started by hand too; a docs-only push refreshes nothing
    assert "workflow_dispatch" in main[True] and "**.md" in main[True]["push"]["paths-ignore"]
    pr = yaml.safe_load((repo / ".github/workflows/agent-gate.yml").read_text())
    assert set(pr[True]) == {"pull_request", "merge_group"}
    assert "github.workflow" in pr["concurrency"]["group"]
    # the report job: after the PR check (by its name), the default branch's code only, no
    # more than publishing and editing the comment needs
    report = yaml.safe_load((repo / ".github/workflows/agent-gate-report.yml").read_text())
    assert report[True]["workflow_run"]["workflows"] == [pr["name"]]
    (job,) = report["jobs"].values()
    assert job["permissions"] == {"contents": "write", "pages": "read",
                                  "pull-requests": "write", "actions": "read"}
    assert not any("checkout" in str(s.get("uses")) or "run" in s for s in job["steps"])

    v = gate(repo, "validate")
    assert v.returncode == 0, v.stdout + v.stderr
    assert "1 sound, 0 broken" in v.stdout
    run = gate(repo, "run", "--sim", "--agent", "oracle")
    assert run.returncode == 0, run.stderr
    results = json.loads((repo / "results.json").read_text())
    assert results["summary"]["passed"] == results["summary"]["total"] == 6
    # a baseline can be made from the run and committed with the rest
    b = gate(repo, "baseline", "results.json")
    assert b.returncode == 0, b.stderr
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "adopt agent-gate")
    assert "baseline.json" in git(repo, "ls-files")


@pytest.mark.slow
def test_the_quick_start_leaves_nothing_untracked(tmp_path: Path) -> None:
    """Every file the README's quick start leaves (results, journals, transcripts, the
    simulator's ledgers, reports) is covered by the .gitignore lines `gate init` writes."""
    repo = empty_repo(tmp_path / "repo")
    assert gate(repo, "init").returncode == 0
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "adopt agent-gate")
    for args in (("run", "--sim", "-k", "2"), ("run", "--sim", "-k", "2", "-o", "sim-base.json"),
                 ("baseline", "sim-base.json", "--baseline", "sim-baseline.json"),
                 ("run", "--sim", "-k", "2", "-o", "pr.json"),
                 ("report", "pr.json", "--baseline", "sim-base.json",
                  "--html", "gate-report.html")):
        p = gate(repo, *args)
        assert p.returncode == 0, (args, p.stderr)
    made = [p.name for p in repo.iterdir() if p.name != ".git"]
    assert any(n.endswith(".sim-ledger.jsonl") for n in made), made  # the case that was missed
    assert git(repo, "status", "--porcelain", "--untracked-files=all") == ""


@pytest.mark.slow
@pytest.mark.parametrize("existing", [".github/workflows/agent-gate.yml", "gate.toml",
                                      f"tasks/{EXAMPLE_TASK}/verify.sh"])
def test_init_never_overwrites_and_writes_nothing_then(tmp_path: Path, existing: str) -> None:
    repo = empty_repo(tmp_path / "repo")
    (repo / existing).parent.mkdir(parents=True, exist_ok=True)
    (repo / existing).write_text("mine\n")
    p = gate(repo, "init")
    assert p.returncode == 2
    assert p.stderr.strip().splitlines() == [
        f"gate: error: {repo / existing}: already exists; gate init never overwrites a file "
        "(move it away and run gate init again)"]
    assert (repo / existing).read_text() == "mine\n"
    assert [rel for rel in (*WRITTEN, *SHARED) if (repo / rel).exists()] == [existing]


@pytest.mark.slow
def test_init_takes_the_branch_and_the_directory(tmp_path: Path) -> None:
    repo = empty_repo(tmp_path / "repo", branch="main")
    p = gate(tmp_path, "init", "repo", "--branch", "release/v2")
    assert p.returncode == 0, p.stderr
    main = yaml.safe_load((repo / ".github/workflows/agent-gate-main.yml").read_text())
    assert main[True]["push"]["branches"] == ["release/v2"]
    assert "push to release/v2" in p.stdout


@pytest.mark.slow
def test_init_refuses_a_path_that_is_a_file(tmp_path: Path) -> None:
    (tmp_path / "afile").write_text("x")
    p = gate(tmp_path, "init", "afile")
    assert p.returncode == 2 and "Traceback" not in p.stderr
    assert "afile" in p.stderr


# ----- what a careful maintainer would merge (in-process) -----------------------------------

def test_the_scaffold_is_mergeable(tmp_path: Path) -> None:
    from gate.core.config import load_config
    from gate.setup.init import init_repository

    result = init_repository(tmp_path, branch="main")
    assert {p.relative_to(tmp_path).as_posix() for p in result.written} == {*WRITTEN, *SHARED}
    cfg = load_config(tmp_path / "gate.toml")
    # enough runs that a collapse of the one example task is detectable (docs/statistics.md)
    assert cfg.suite.replications == 6
    assert cfg.agent.system_prompt == "agent/system.md"
    prompt = (tmp_path / "agent/system.md").read_text()
    assert len(prompt) > 2500 and "{{" not in prompt  # cacheable: the same on every request
    ignore = (tmp_path / ".gitignore").read_text().splitlines()
    assert "/results.json" in ignore and "*.transcripts/" in ignore
    assert "baseline.json" not in ignore
    dependabot = yaml.safe_load((tmp_path / ".github/dependabot.yml").read_text())
    assert dependabot["updates"][0]["package-ecosystem"] == "github-actions"
    pr_text = (tmp_path / ".github/workflows/agent-gate.yml").read_text()
    main_text = (tmp_path / ".github/workflows/agent-gate-main.yml").read_text()
    assert "# paths: [" in pr_text  # a commented filter, ready to uncomment
    pr, main = yaml.safe_load(pr_text), yaml.safe_load(main_text)
    steps = pr["jobs"]["gate"]["steps"]
    assert not any("upload-artifact" in s.get("uses", "") for s in steps)  # the action does
    refresh = main["jobs"]["refresh"]["steps"]
    # where the baselines live is gate.toml's alone, for both workflows (no input disagrees)
    assert "baseline-refresh" not in main_text + pr_text
    assert tomllib.loads((tmp_path / "gate.toml").read_text())["ci"]["baseline_refresh"] == \
        "branch"
    for step in [*steps, *refresh]:
        uses = step.get("uses", "")
        if uses.startswith("actions/"):
            ref = uses.split("@", 1)[1]
            assert len(ref) == 40 and all(c in "0123456789abcdef" for c in ref), uses
    assert "simulator" in result.next_steps() and "cannot judge the wording" in \
        result.next_steps()
    # what a prompt change on the simulator exits, and the setting that says it
    steps = " ".join(result.next_steps().split())
    assert 'reads "not judged by the simulator" and exits 3' in steps
    assert '[ci] sim_unjudged = "inconclusive"' in steps and '"pass" exits 0' in steps
    ci = tomllib.loads((tmp_path / "gate.toml").read_text())["ci"]
    assert ci["sim_unjudged"] == "inconclusive"


def test_init_names_the_action_and_refuses_a_bad_reference(tmp_path: Path) -> None:
    from gate.errors import BadInput
    from gate.setup.init import init_repository

    sha = "0123456789abcdef0123456789abcdef01234567"
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    init_repository(tmp_path / "a", branch="main", action=f"my-org/agent-gate@{sha}")
    text = (tmp_path / "a/.github/workflows/agent-gate.yml").read_text()
    assert f"uses: my-org/agent-gate@{sha}" in text
    with pytest.raises(BadInput, match="not an action reference"):
        init_repository(tmp_path / "b", branch="main", action="x; rm -rf /")
    assert not (tmp_path / "b" / "gate.toml").exists()


def test_shared_files_are_appended_to_or_kept(tmp_path: Path) -> None:
    from gate.setup.init import init_repository

    (tmp_path / ".gitignore").write_text("node_modules/")
    (tmp_path / ".github").mkdir()
    (tmp_path / ".github/dependabot.yml").write_text("version: 2\nupdates: []\n")
    result = init_repository(tmp_path, branch="main")
    ignore = (tmp_path / ".gitignore").read_text()
    assert ignore.startswith("node_modules/\n") and "/results.json" in ignore
    assert (tmp_path / ".github/dependabot.yml").read_text() == "version: 2\nupdates: []\n"
    assert result.appended == (tmp_path / ".gitignore",)
    assert result.kept == (tmp_path / ".github/dependabot.yml",)
    assert "github-actions ecosystem" in result.next_steps()
    # a second init (after moving the gate's own files away) appends nothing twice
    for rel in WRITTEN:
        (tmp_path / rel).unlink()
    init_repository(tmp_path, branch="main")
    assert (tmp_path / ".gitignore").read_text() == ignore


def _installed_from(site: Path, direct_url: dict[str, object]) -> dict[str, str]:
    """An environment whose ``agent-gate`` install record says it came from ``direct_url``
    (pip's ``direct_url.json``, as `pip install "git+https://..."` writes it), found first."""
    info = site / "agent_gate-0.1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: agent-gate\nVersion: 0.1.0\n")
    (info / "direct_url.json").write_text(json.dumps(direct_url))
    return {"PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")])}


@pytest.mark.slow
def test_init_pins_uses_to_the_commit_it_was_installed_from(tmp_path: Path) -> None:
    """Installed from git, as the README's line does: the workflows run that very commit.
    Installed otherwise (a checkout, editable): the placeholder, and the next steps say to
    replace it."""
    sha = "0123456789abcdef0123456789abcdef01234567"
    env = _installed_from(tmp_path / "site", {
        "url": "https://github.com/my-org/agent-gate.git",
        "vcs_info": {"vcs": "git", "commit_id": sha, "requested_revision": "v1"}})
    repo = empty_repo(tmp_path / "repo")
    p = run_gate("init", cwd=repo, base=_env(), env=env)
    assert p.returncode == 0, p.stderr
    for wf in ("agent-gate.yml", "agent-gate-main.yml", "agent-gate-report.yml"):
        text = (repo / ".github" / "workflows" / wf).read_text()
        assert f"uses: my-org/agent-gate@{sha}" in text, text
    assert f"pinned to the gate you installed (my-org/agent-gate@{sha})" in p.stdout
    local = empty_repo(tmp_path / "local")
    p = run_gate("init", cwd=local, base=_env(), env=_installed_from(
        tmp_path / "site-local", {"url": "file:///src/agent-gate", "dir_info": {"editable": True}}))
    assert p.returncode == 0, p.stderr
    assert "uses: agent-gate/agent-gate@v1" in \
        (local / ".github" / "workflows" / "agent-gate.yml").read_text()
    assert "is a placeholder: replace it" in p.stdout
