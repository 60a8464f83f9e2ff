"""A matrix of shards through the action, end to end (docs/github.md, "Big suites").

Three matrix jobs each run the action with ``shard: I/3`` (the real install, the real
``gate ci`` step, then the action's own upload step, played by upload-artifact's contract);
one judge job downloads the three artifacts (download-artifact's layout: one directory per
artifact) and runs the action with ``merge:``. On a pull request the judge posts the one
comment with the verdict; on main the merged run refreshes the baseline, and shards alone
never do.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from gate.core.config import load_config
from gate.core.traces import parse_sidecar, pooled_sidecar, results_traces
from gate.execution.run import RunRequest, run_suite
from gate.github import MARKER_PREFIX
from tests.helpers.action import (
    Installed,
    _expand,
    _gate_step_env,
    _run_step,
    play_after_gate,
)
from tests.helpers.ci import PR, REPO, TOKEN, Project, _parse_output_file, set_max_turns, sh

pytestmark = pytest.mark.slow


def _if(cond: str, inputs: dict[str, str], outputs: dict[str, dict[str, str]]) -> bool:
    """A post-gate step's ``if:`` as the runner evaluates it, for the forms this action uses:
    ``!cancelled()`` and ``&&`` of ``<inputs.x | steps.s.outputs.y> != ''``."""
    ok = True
    for part in (p.strip() for p in cond.split("&&")):
        if part == "!cancelled()":
            continue
        m = re.fullmatch(r"(inputs\.[\w-]+|steps\.[\w-]+\.outputs\.[\w-]+) (==|!=) ''", part)
        assert m, f"the test runner does not know the condition {part!r}"
        value = _expand("${{ " + m.group(1) + " }}", inputs, "", outputs)
        ok = ok and ((value == "") == (m.group(2) == "=="))
    return ok


def _artifact_root(paths: list[Path]) -> Path:
    """upload-artifact@v4's root for its `path:` list: one file's folder, one directory
    itself, several paths' least common ancestor. The artifact holds every file by its path
    under the root."""
    if len(paths) == 1:
        return paths[0] if paths[0].is_dir() else paths[0].parent
    return Path(os.path.commonpath(paths))


def _play_after_gate(action: dict[str, Any], inputs: dict[str, str], gate_outputs: dict[str, str],
                     artifacts: Path) -> list[str]:
    """The action's steps after `gate ci` (the gate step's outputs known): an upload-artifact
    step copies its `path` (one path a line, directories whole) into ``artifacts/<name>/``,
    each under its path from the artifact's root (as the artifact's download holds it).
    Returns the artifact names uploaded."""
    full = {name: str(spec.get("default", "")) for name, spec in action["inputs"].items()}
    full.update(inputs)
    steps = action["runs"]["steps"]
    after = steps[[s.get("id") for s in steps].index("gate") + 1:]
    uploaded = []
    for step in after:
        if "if" in step and not _if(str(step["if"]), full, {"gate": gate_outputs}):
            continue
        assert str(step.get("uses", "")).startswith("actions/upload-artifact@"), step
        with_ = {k: _expand(str(v), full, "", {"gate": gate_outputs})
                 for k, v in step["with"].items()}
        paths = [Path(line.strip()) for line in with_["path"].splitlines() if line.strip()]
        assert with_["if-no-files-found"] == "error" and paths, with_
        assert all(p.is_absolute() and p.exists() for p in paths), with_
        dest = artifacts / with_["name"]
        assert not dest.exists(), f"two jobs uploaded the artifact {with_['name']}"
        root = _artifact_root(paths)
        for src in paths:
            (dest / src.relative_to(root)).parent.mkdir(parents=True, exist_ok=True)
            if src.is_dir():
                shutil.copytree(src, dest / src.relative_to(root))
            else:
                shutil.copy2(src, dest / src.relative_to(root))
        uploaded.append(with_["name"])
    return uploaded


def _download(artifacts: Path, dest: Path, pattern: str = "agent-gate-shard-*") -> None:
    """actions/download-artifact with `pattern:` and `path:`: each artifact in its own
    directory under ``dest``."""
    for art in sorted(artifacts.glob(pattern)):
        shutil.copytree(art, dest / art.name)


def _job(action: dict[str, Any], installed: Installed, project: Project, checkout: Path,
         inputs: dict[str, str], *, event: str, event_path: Path, ref: str,
         tmp: Path) -> tuple[int, str, dict[str, str]]:
    """One job's `gate ci` step, with the runner's environment for it."""
    n = len(list(tmp.glob("job*")))
    out = tmp / f"job{n}-output"
    step, step_env, workdir = _gate_step_env(action, {"python-version": "", **inputs}, TOKEN)
    env = {
        **installed.env(), **step_env,
        "GITHUB_EVENT_NAME": event, "GITHUB_EVENT_PATH": str(event_path),
        "GITHUB_REPOSITORY": REPO, "GITHUB_API_URL": project.gh.url,
        "GITHUB_SERVER_URL": "https://github.example", "GITHUB_RUN_ID": "77",
        "GITHUB_REF": ref, "GITHUB_WORKSPACE": str(checkout),
        "GITHUB_OUTPUT": str(out), "GITHUB_STEP_SUMMARY": str(tmp / f"job{n}-summary.md"),
    }
    p = _run_step(step, env, checkout / workdir, tmp / f"job{n}.sh")
    outputs = _parse_output_file(out.read_text()) if out.exists() else {}
    return p.returncode, p.stdout + p.stderr, outputs


def _shards(action: dict[str, Any], installed: Installed, project: Project, branch: str,
            artifacts: Path, tmp: Path, **event: Any) -> None:
    """The three matrix jobs: each its own checkout, its shard, its upload."""
    for i in (1, 2, 3):
        checkout = project.clone(f"{branch}-shard{i}", branch)
        if event["event"] == "pull_request":
            event["event_path"] = project.event(checkout)
        inputs = {"sim": "true", "shard": f"{i}/3"}
        code, logs, outputs = _job(action, installed, project, checkout, inputs, tmp=tmp,
                                   **event)
        assert code == 0, logs
        assert outputs["verdict"] == "shard" and outputs["shard"] == f"{i}/3", outputs
        assert f"shard {i}/3" in logs
        assert "refresh" not in outputs and "comment_url" not in outputs
        assert _play_after_gate(action, inputs, outputs, artifacts) == \
            [f"agent-gate-shard-{i}-of-3"]
        shard = json.loads(Path(outputs["results_path"]).read_text())
        assert shard["shard"]["index"] == i and shard["selected_tasks"] == shard["shard"]["tasks"]
        # the artifact: the results and, beside them, a transcript of each of its runs
        art = artifacts / f"agent-gate-shard-{i}-of-3"
        assert sorted(p.name for p in (art / "results.transcripts").iterdir()) == sorted(
            Path(r["transcript"]).name for r in shard["runs"]) and len(shard["runs"]) == 3
        assert (art / "results.json").read_bytes() == Path(outputs["results_path"]).read_bytes()
        # a shard job never touches the baseline
        assert (checkout / "baseline.json").read_text() == \
            sh(checkout, "git", "show", "HEAD:baseline.json")


def _keep_main_traces(project: Project) -> None:
    """main's baseline as a refresh of this version leaves it: a run of main's suite with the
    traces of its runs next to it (baseline.traces.jsonl), committed."""
    main = project.clone("main-traces")
    baseline = main / "baseline.json"
    res = run_suite(RunRequest(config=load_config(main / "gate.toml"), output=baseline,
                               sim=True))
    text = pooled_sidecar(res, results_traces(res, baseline), [])
    assert len(text.splitlines()) == len(res.runs) == 9
    (main / "baseline.traces.jsonl").write_text(text)
    sh(main, "git", "add", "baseline.json", "baseline.traces.jsonl")
    sh(main, "git", "commit", "-q", "-m", "baseline with traces")
    sh(main, "git", "push", "-q", "origin", "main")


def test_a_pr_matrix_runs_three_shards_and_the_judge_posts_one_comment(
        action: dict[str, Any], installed: Installed, sim_repo: Project, tmp_path: Path
) -> None:
    _keep_main_traces(sim_repo)
    sim_repo.pr_branch("fewer-turns", lambda w: set_max_turns(w, 1))
    artifacts = tmp_path / "artifacts"
    pr_event = {"event": "pull_request", "ref": f"refs/pull/{PR}/merge"}
    _shards(action, installed, sim_repo, "fewer-turns", artifacts, tmp_path, **pr_event)
    assert not sim_repo.gh.comments.get(PR), "a shard job commented"

    judge = sim_repo.clone("judge", "fewer-turns")
    _download(artifacts, judge / "shards")
    # the judge needs no API key and runs nothing: no `sim`, no key in its environment
    code, logs, outputs = _job(action, installed, sim_repo, judge, {"merge": "shards"},
                               event_path=sim_repo.event(judge), tmp=tmp_path, **pr_event)
    assert code == 1, logs
    assert outputs["verdict"] == "regression" and outputs["mode"] == "pr"
    assert "merged 3 shards" in logs and "running the suite" not in logs
    merged = json.loads((judge / "results.json").read_text())
    assert len(merged["runs"]) == 9 and len(merged["merged_from"]) == 3
    assert "shard" not in merged and "selected_tasks" not in merged
    # each run's transcript came with its shard's artifact, and lies beside the merged results
    for run in merged["runs"]:
        name = Path(run["transcript"]).name
        assert Path(run["transcript"]).parent.name == "results.transcripts"
        (shard,) = (judge / "shards").glob(f"agent-gate-shard-*/results.transcripts/{name}")
        assert (judge / run["transcript"]).read_bytes() == shard.read_bytes()
    # the judge job's report upload, then its comment (gate/github/_deferred.py)
    env = {**installed.env(), "GITHUB_EVENT_NAME": "pull_request",
           "GITHUB_EVENT_PATH": str(sim_repo.event(judge)), "GITHUB_REPOSITORY": REPO,
           "GITHUB_API_URL": sim_repo.gh.url, "GITHUB_SERVER_URL": "https://github.example",
           "GITHUB_RUN_ID": "77", "GITHUB_WORKSPACE": str(judge)}
    steps = {"gate": outputs}
    assert play_after_gate(action, {"merge": "shards"}, steps, env, judge, tmp_path,
                           tmp_path / "judge-artifacts", "4711") == ["upload", "post"]
    page = (tmp_path / "judge-artifacts" / "agent-gate-report" / "gate-report.html").read_text()
    assert "<h1>agent-gate: Regression</h1>" in page
    (comment,) = [c for c in sim_repo.gh.comments[PR] if MARKER_PREFIX in c["body"]]
    assert len(sim_repo.gh.comments[PR]) == 1
    assert steps["post"]["comment_url"] == comment["html_url"]
    assert f"https://github.example/{REPO}/actions/runs/77/artifacts/4711" in comment["body"]
    assert "Merged from the 3 shards" in comment["body"]
    # the evidence, as a single job's: the PR's failing runs (from the shards' transcripts)
    # beside main's traces, and the step where they part
    body = comment["body"]
    assert "<details><summary>Evidence: what the runs did" in body
    assert re.search(r"\*\*They part at step \d+:\*\* the baseline's runs called .+?; this "
                     r"PR's failing runs ended stopped \(3 of 3\)\.", body), body
    assert re.search(r"This PR's replication \d \(1 turn, max\\_turns \(1\) reached\)", body)
    assert "No transcript of this PR's failing runs" not in body
    # the report shows every PR run's transcript (and main's runs as their traces)
    assert "transcript not available" not in page and "no transcript recorded" not in page
    assert outputs["headline"] in comment["body"]
    assert TOKEN not in logs.replace(f"::add-mask::{TOKEN}", "") + comment["body"]


def test_on_main_the_merged_run_refreshes_the_baseline_and_shards_alone_never_do(
        action: dict[str, Any], installed: Installed, sim_repo: Project, tmp_path: Path
) -> None:
    push = tmp_path / "push.json"
    push.write_text(json.dumps({"repository": {"full_name": REPO, "default_branch": "main"}}))
    main_event = {"event": "push", "event_path": push, "ref": "refs/heads/main"}
    artifacts = tmp_path / "artifacts"
    _shards(action, installed, sim_repo, "main", artifacts, tmp_path, **main_event)
    before = json.loads((sim_repo.tmp / "seed" / "baseline.json").read_text())

    # two shards of three: refused, nothing pooled
    partial = sim_repo.clone("judge-partial", "main")
    _download(artifacts, partial / "shards", "agent-gate-shard-[12]-of-3")
    code, logs, outputs = _job(action, installed, sim_repo, partial, {"merge": "shards"},
                               tmp=tmp_path, **main_event)
    assert code == 2 and "shard 3/3 missing" in logs, logs
    assert json.loads((partial / "baseline.json").read_text()) == before
    assert "Traceback" not in logs

    judge = sim_repo.clone("judge", "main")
    _download(artifacts, judge / "shards")
    code, logs, outputs = _job(action, installed, sim_repo, judge, {"merge": "shards"},
                               tmp=tmp_path, **main_event)
    assert code == 0, logs
    assert outputs["mode"] == "main" and outputs["refresh"] == "artifact", outputs
    pooled = json.loads(Path(outputs["baseline_path"]).read_text())
    merged = json.loads((judge / "results.json").read_text())
    assert len(pooled["runs"]) == len(before["runs"]) + len(merged["runs"]) == 18
    assert merged["created_at"] in [s["created_at"] for s in pooled["sources"]]
    history = Path(outputs["history_path"]).read_text().strip().splitlines()
    assert len(history) == 1
    # the traces kept next to the refreshed baseline are the merged runs', from the shards'
    traces = parse_sidecar(Path(outputs["traces_path"]).read_text())
    assert sorted((t.task, t.replication) for t in traces) == sorted(
        (r["task"], r["replication"]) for r in merged["runs"])
    assert all(t.refresh == merged["created_at"] and t.n_turns for t in traces)


def test_the_judge_reads_no_symlink_among_the_shards_results(tmp_path: Path) -> None:
    """An artifact holds regular files: a results file that is a link (to a file of the
    runner's) is refused by name, never read as a shard."""
    from tests.helpers.ci import _project

    for project in _project(tmp_path, sim=False):
        judge = project.clone("judge")
        shards = judge / "shards" / "agent-gate-shard-1-of-1"
        shards.mkdir(parents=True)
        secret = tmp_path / "runner-file.json"
        secret.write_text('{"not": "results"}')
        (shards / "results.json").symlink_to(secret)
        run = project.gate_ci(judge, "--merge", "shards")
        assert run.code == 2, run.stderr
        assert "shards/agent-gate-shard-1-of-1/results.json: a symlink, not a shard's " \
            "results: not read" in run.stderr
