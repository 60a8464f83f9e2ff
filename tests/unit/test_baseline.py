"""Promoting results into baseline.json: pooling, resets, provenance, atomic writes."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from gate.compare._synthetic import reference_rates, synthetic_results
from gate.core.results import Results, TaskInfo, load_results, summarize, write_results
from gate.errors import BadInput, Unmeasurable
from gate.pool.baseline import promote, promote_file

RATES = reference_rates(6)


def _run(i: int, *, k: int = 5, fingerprint: str = "agent-a", seed: int | None = None,
         model: str = "simulated") -> Results:
    rng = np.random.default_rng(seed if seed is not None else i)
    return synthetic_results(RATES, k, rng, fingerprint=fingerprint, model=model,
                             commit=f"{i:x}" * 40, created_at=f"2026-11-{10 + i:02d}T00:00:00Z")


def _runs_per_task(res: Results) -> dict[str, int]:
    out: dict[str, int] = {}
    for r in res.runs:
        out[r.task] = out.get(r.task, 0) + 1
    return out


def test_first_promotion_stamps_provenance() -> None:
    new, msg = promote(_run(1), None)
    assert msg.startswith("new baseline: 30 runs over 6 tasks")
    assert all(r.commit == "1" * 40 and r.created_at == "2026-11-11T00:00:00Z" for r in new.runs)


def test_same_fingerprint_pools_and_keeps_the_newest() -> None:
    baseline = None
    for i in range(1, 7):
        baseline, msg = promote(_run(i), baseline, pool_size=20)
    assert baseline is not None
    assert msg == "pooled 30 runs; now 120 runs over 6 tasks"
    assert set(_runs_per_task(baseline).values()) == {20}
    commits = {r.commit for r in baseline.runs}
    assert commits == {f"{i:x}" * 40 for i in range(3, 7)}  # the two oldest fell out
    assert baseline.summary == summarize(baseline.runs)
    reps = [(r.task, r.replication) for r in baseline.runs]
    assert len(reps) == len(set(reps))  # replications renumbered, still unique
    assert [s["commit"] for s in baseline.sources] == [f"{i:x}" * 40 for i in range(3, 7)]


def test_new_fingerprint_starts_a_new_baseline() -> None:
    old, _ = promote(_run(1), None)
    old, _ = promote(_run(2), old)
    new, msg = promote(_run(3, fingerprint="agent-b", model="other"), old)
    assert "agent fingerprint changed (agent-a → agent-b): starting a new baseline" in msg
    assert {r.commit for r in new.runs} == {"3" * 40}
    assert new.model == "other" and new.agent.fingerprint == "agent-b"


def test_simulated_and_real_runs_never_pool() -> None:
    sim, _ = promote(_run(1, model="claude-x (simulator)"), None)
    real, msg = promote(_run(2, model="claude-x"), sim)
    assert msg.startswith("model changed (claude-x (simulator) → claude-x)")
    assert {r.commit for r in real.runs} == {"2" * 40} and real.model == "claude-x"


def test_changed_task_restarts_and_removed_task_is_dropped() -> None:
    base, _ = promote(_run(1), None)
    nxt = _run(2)
    tasks = {t: TaskInfo(digest="changed" if t == "t00" else info.digest)
             for t, info in nxt.suite.tasks.items() if t != "t05"}
    runs = [r for r in nxt.runs if r.task != "t05"]
    nxt = nxt.model_copy(update={"suite": nxt.suite.model_copy(update={"tasks": tasks}),
                                 "runs": runs, "summary": summarize(runs)})
    new, msg = promote(nxt, base)
    per_task = _runs_per_task(new)
    assert per_task["t00"] == 5 and per_task["t01"] == 10 and "t05" not in per_task
    assert "t05" not in new.suite.tasks and new.suite.tasks["t00"].digest == "changed"
    assert "1 changed task(s) restarted" in msg and "1 task(s) no longer in the suite" in msg


def test_promoting_the_same_results_twice_is_a_no_op() -> None:
    base, _ = promote(_run(1), None)
    again, msg = promote(_run(1), base)
    assert again is base and "already in the baseline" in msg


def test_promote_file_writes_atomically_and_cli(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from gate.cli import main

    bl = tmp_path / "baseline.json"
    for i in (1, 2):
        write_results(tmp_path / f"r{i}.json", _run(i))
    assert promote_file(tmp_path / "r1.json", bl).startswith("new baseline")
    res = CliRunner().invoke(main, ["baseline", str(tmp_path / "r2.json"), "--baseline", str(bl)])
    assert res.exit_code == 0, res.output
    assert "pooled 30 runs; now 60 runs over 6 tasks" in res.output
    data = json.loads(bl.read_text())
    assert data["schema_version"] == 1 and len(data["runs"]) == 60
    assert load_results(bl).summary.total == 60
    assert not list(tmp_path.glob(".baseline.json.*"))  # no temp file left behind


def test_promote_refuses_bad_files(tmp_path: Path) -> None:
    bl = tmp_path / "baseline.json"
    bad = tmp_path / "bad.json"
    bad.write_text('{"schema_version": 1, "runs": [')
    with pytest.raises(BadInput):
        promote_file(bad, bl)
    empty = _run(1).model_copy(update={"runs": [], "summary": summarize([])})
    write_results(tmp_path / "empty.json", empty)
    with pytest.raises(Unmeasurable):
        promote_file(tmp_path / "empty.json", bl)
    assert not bl.exists()
    write_results(tmp_path / "ok.json", _run(1))
    bl.write_text("not json")  # a damaged baseline is an error, not silently replaced
    with pytest.raises(BadInput):
        promote_file(tmp_path / "ok.json", bl)
    assert bl.read_text() == "not json"


def test_runs_with_their_own_timestamps_group_by_refresh() -> None:
    """`gate run` stamps each run with its own time; provenance still groups by refresh."""
    def stamped(i: int) -> Results:
        res = _run(i)
        res.runs = [r.model_copy(update={"created_at": f"2026-11-{10 + i:02d}T00:00:{j:02d}Z"})
                    for j, r in enumerate(res.runs[:50])]
        return res

    first, second = stamped(1), stamped(2)
    base, _ = promote(first, None)
    base, msg = promote(second, base)
    assert msg.startswith("pooled")
    assert [s["created_at"] for s in base.model_extra["sources"]] == [  # type: ignore[index]
        first.created_at, second.created_at]
    again, msg = promote(second, base)
    assert again is base and "already in the baseline" in msg


def test_partial_run_cannot_refresh_the_baseline() -> None:
    base, _ = promote(_run(1), None)
    partial = _run(2).model_copy(update={"selected_tasks": ["t00"]})
    with pytest.raises(BadInput, match="partial run"):
        promote(partial, base)


def _plain_run_file(created_at: str) -> Results:
    """Results as `gate run` writes them: each run stamped with its own time, none pooled."""
    res = synthetic_results(reference_rates(4), 3, np.random.default_rng(5), created_at=created_at)
    runs = [r.model_copy(update={"created_at": f"2026-11-30T00:{i // 60:02d}:{i % 60:02d}Z"})
            for i, r in enumerate(res.runs)]
    return res.model_copy(update={"runs": runs})


def test_a_baseline_that_was_never_pooled_is_one_refresh() -> None:
    from gate.pool.baseline import describe_depth

    plain = _plain_run_file("2026-11-30T01:00:00Z")
    assert len({r.created_at for r in plain.runs}) == 12
    assert "12 runs over 4 tasks pooled from 1 refresh," in describe_depth(plain)
    pooled, _ = promote(_plain_run_file("2026-12-01T01:00:00Z"), plain)
    assert "pooled from 2 refreshes," in describe_depth(pooled)
    # the same results again are recognised, whether the baseline was pooled or not
    _, why = promote(plain, plain)
    assert "already in the baseline: unchanged" in why


# ----- what the baseline was made from ------------------------------------------------------

def _res(*, commit: str | None = "0" * 40, created_at: str = "2026-11-30T00:00:00Z",
         rng: np.random.Generator) -> Results:
    r = synthetic_results(RATES, 3, rng, created_at=created_at)
    return r.model_copy(update={"commit": commit})


def _git(cwd: Path, *args: str) -> str:
    import subprocess

    env = {"GIT_AUTHOR_NAME": "dev", "GIT_AUTHOR_EMAIL": "dev@example.com",
           "GIT_COMMITTER_NAME": "dev", "GIT_COMMITTER_EMAIL": "dev@example.com",
           "PATH": __import__("os").environ["PATH"], "HOME": str(cwd)}
    return subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True,
                          check=True).stdout.strip()


def test_a_simulator_run_is_promoted_with_a_warning(tmp_path: Path) -> None:
    sim = _res(rng=np.random.default_rng(1)).model_copy(
        update={"model": "claude-sonnet-5-5 (simulator)"})
    write_results(tmp_path / "r.json", sim)
    message = promote_file(tmp_path / "r.json", tmp_path / "b.json")
    assert "these are the simulator's runs" in message
    assert "a run through the API is inconclusive against it" in message
    real = _res(rng=np.random.default_rng(2))
    write_results(tmp_path / "real.json", real)
    assert "simulator" not in promote_file(tmp_path / "real.json", tmp_path / "b2.json")


def test_a_baseline_from_a_dirty_checkout_is_marked_and_a_clean_refresh_is_not(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GITHUB_SHA", raising=False)
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q")
    (repo / "agent.md").write_text("v1\n")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "one")
    head = _git(repo, "rev-parse", "HEAD")
    clean = _res(commit=head, rng=np.random.default_rng(1))
    write_results(repo / "results.json", clean)
    message = promote_file(repo / "results.json", repo / "baseline.json")
    assert "uncommitted" not in message  # the results and the baseline themselves don't count
    assert "uncommitted" not in json.loads((repo / "baseline.json").read_text())
    (repo / "agent.md").write_text("v2, not committed\n")
    dirty = _res(commit=head, created_at="2026-12-01T00:00:00Z", rng=np.random.default_rng(2))
    write_results(repo / "results.json", dirty)
    message = promote_file(repo / "results.json", repo / "baseline.json")
    assert "marked as made from a working tree with uncommitted changes" in message
    assert "agent.md" in message
    marks = json.loads((repo / "baseline.json").read_text())["uncommitted"]
    assert [m["created_at"] for m in marks] == ["2026-12-01T00:00:00Z"]


def test_a_repository_without_a_commit_is_uncommitted(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q")
    write_results(repo / "results.json", _res(commit=None, rng=np.random.default_rng(1)))
    assert "no commit" in promote_file(repo / "results.json", repo / "baseline.json")


def test_two_runs_of_one_commit_within_a_second_both_pool() -> None:
    """Two refreshes of the same commit (a re-run, two workflows on one push) may finish within
    the same second: their results files are told apart by when they were made, to the
    microsecond, so the second is pooled, never taken for the first ("already in the
    baseline"). Red while ``created_at`` had second resolution."""
    from gate.core.results import new_results

    first = _run(1)
    made = [new_results(model=first.model, agent=first.agent, suite=first.suite,
                        commit=first.commit, runs=list(first.runs)) for _ in range(2)]
    assert made[0].created_at != made[1].created_at  # same commit, made back to back
    base, _ = promote(made[0], None)
    pooled, msg = promote(made[1], base)
    assert pooled is not base and "already in the baseline" not in msg
    assert len(pooled.runs) == 2 * len(first.runs)
