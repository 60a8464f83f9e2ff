"""Issue 13, shards: `gate run --shard I/N` runs a deterministic, balanced part of the tasks;
`gate merge` joins all N parts and refuses parts of different runs, overlaps and gaps."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from gate.core.results import load_results
from gate.errors import BadInput
from gate.execution.shards import parse_shard, split
from tests.helpers.suites import tiny_suite


def gate(*args: str | Path, timeout: float = 180) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "gate", *map(str, args)], capture_output=True,
                          text=True, timeout=timeout)


def test_split_by_task_id_without_a_baseline() -> None:
    ids = ["e", "a", "d", "b", "c"]
    assert split(ids, 2) == [["a", "c", "e"], ["b", "d"]]
    assert split(ids, 7) == [["a"], ["b"], ["c"], ["d"], ["e"], [], []]
    assert split(ids, 1) == [sorted(ids)]


def test_split_balances_the_baseline_durations() -> None:
    durations = {"a": 100.0, "b": 60.0, "c": 50.0, "d": 40.0, "e": 10.0}
    # longest first, each to the least-loaded shard: a→1, b→2, c→2 (60 < 100), d→1
    # (100 < 110), e→2 (120 < 140)
    assert split(list(durations), 2, durations) == [["a", "d"], ["b", "c", "e"]]
    # a task the baseline lacks counts as the mean task (52 s): a→1, b→2, f→2, c→1, d→2, e→1
    assert split([*durations, "f"], 2, durations) == [["a", "c", "e"], ["b", "d", "f"]]
    # the order the tasks come in changes nothing
    assert split(["f", *reversed(durations)], 2, durations) == split([*durations, "f"], 2,
                                                                     durations)


def test_parse_shard_refuses_nonsense() -> None:
    assert parse_shard("2/3") == (2, 3)
    for bad in ("0/3", "4/3", "3", "a/b", "1/0", "-1/2"):
        with pytest.raises(BadInput, match="--shard"):
            parse_shard(bad)


def _keys(path: Path) -> list[tuple[str, int]]:
    return sorted((r["task"], r["replication"]) for r in json.loads(path.read_text())["runs"])


@pytest.mark.slow
def test_three_shards_merged_equal_the_unsharded_run_and_mismatches_are_refused(
        tmp_path: Path) -> None:
    tasks = tiny_suite(tmp_path / "suite")
    cfg = tmp_path / "gate.toml"
    cfg.write_text(f'[agent]\nkind = "builtin"\n[suite]\ntasks = "{tasks}"\n')
    args = ["run", "--config", cfg, "--sim", "--seed", "5", "-k", "2", "-j", "1",
            "--no-transcripts"]
    whole = tmp_path / "whole.json"
    assert gate(*args, "-o", whole).returncode in (0, 1)
    shards = [tmp_path / f"shard{i}.json" for i in (1, 2, 3)]
    for i, out in enumerate(shards, 1):
        p = gate(*args, "--shard", f"{i}/3", "-o", out)
        assert p.returncode in (0, 1), p.stderr
        assert f"shard {i}/3: 1 tasks (balanced by task id)" in p.stderr
        res = load_results(out)
        assert res.schedule is not None and res.schedule.shard == f"{i}/3"
    # a shard alone is a partial run: never a baseline
    p = gate("baseline", shards[0], "--baseline", tmp_path / "nope.json")
    assert p.returncode == 2, p.stderr

    merged = tmp_path / "merged.json"
    p = gate("merge", merged, *reversed(shards))
    assert p.returncode == 0, p.stderr
    assert _keys(merged) == _keys(whole) and len(_keys(merged)) == 6
    m = load_results(merged)
    assert m.interrupted is None and m.schedule is not None and m.schedule.shard is None
    assert m.suite == load_results(whole).suite
    # each run's randomness is its own: the shards' runs are the unsharded run's runs
    want = {(r.task, r.replication): (r.status, r.turns, r.usage) for r in
            load_results(whole).runs}
    assert {(r.task, r.replication): (r.status, r.turns, r.usage) for r in m.runs} == want
    p = gate("baseline", merged, "--baseline", tmp_path / "baseline.json")
    assert p.returncode == 0, p.stderr

    # refused: a missing shard, the same shard twice, a shard of another seed
    p = gate("merge", tmp_path / "x.json", shards[0], shards[1])
    assert p.returncode == 2 and "shard 3/3 missing" in p.stderr, p.stderr
    p = gate("merge", tmp_path / "x.json", shards[0], shards[0], shards[1], shards[2])
    assert p.returncode == 2 and "the same shard twice" in p.stderr, p.stderr
    other = tmp_path / "other-seed.json"
    p = gate(*[a if a != "5" else "6" for a in args], "--shard", "3/3", "-o", other)
    assert p.returncode in (0, 1), p.stderr
    p = gate("merge", tmp_path / "x.json", shards[0], shards[1], other)
    assert p.returncode == 2 and "its seed differs" in p.stderr, p.stderr
    assert "Traceback" not in p.stderr and not (tmp_path / "x.json").exists()
    # ... and an unsharded file is no shard
    p = gate("merge", tmp_path / "x.json", whole)
    assert p.returncode == 2 and "not the result of `gate run --shard" in p.stderr, p.stderr


def _shard(index: int, count: int, tasks: list[str], **over: object) -> tuple[Path, object]:
    from gate.core.results import RunResult, new_results

    runs = [RunResult.model_validate({
        "task": t, "replication": 0, "status": "passed", "reason": None, "turns": 1,
             "usage": {"input_tokens": 1, "output_tokens": 1, "cache_creation_input_tokens": 0,
                       "cache_read_input_tokens": 0}, "cost_usd": 0.1, "duration_s": 1.0,
             "notes": None}) for t in tasks]
    fields: dict = {
        "model": "m", "agent": {"kind": "builtin", "fingerprint": "f1"},
        "suite": {"digest": "d", "tasks": {t: {"digest": t} for t in "abcd"}},
        "commit": "c", "runs": runs,
        "schedule": {"replications": 1, "jobs": 1, "metering": "warm-prefix-v1",
                     "shard": f"{index}/{count}"},
        "simulator": {"seed": 0, "ledger": f"s{index}.jsonl"},
        "shard": {"index": index, "count": count, "tasks": tasks, "balanced_by": "task id",
                  "selected": None}, "selected_tasks": tasks}
    fields.update(over)
    return Path(f"s{index}.json"), new_results(**fields)


def test_merge_refuses_shards_that_differ_in_anything_but_their_index() -> None:
    from gate.execution.shards import merge

    parts = [_shard(1, 2, ["a", "c"]), _shard(2, 2, ["b", "d"])]
    merged = merge(parts)  # type: ignore[arg-type]
    assert sorted(r.task for r in merged.runs) == ["a", "b", "c", "d"]
    assert "selected_tasks" not in (merged.model_extra or {})  # whole again: promotable
    cases = {
        "agent fingerprint": {"agent": {"kind": "builtin", "fingerprint": "f2"}},
        "suite digest": {"suite": {"digest": "x", "tasks": {t: {"digest": t} for t in "abcd"}}},
        "seed": {"simulator": {"seed": 1, "ledger": "s2.jsonl"}},
        "schedule": {"schedule": {"replications": 2, "jobs": 1, "metering": "warm-prefix-v1",
                                  "shard": "2/2"}},
        "model": {"model": "other"},
    }
    for what, over in cases.items():
        with pytest.raises(BadInput, match=f"its {what} differs"):
            merge([parts[0], _shard(2, 2, ["b", "d"], **over)])  # type: ignore[list-item]
    with pytest.raises(BadInput, match="also in"):  # overlapping tasks
        merge([parts[0], _shard(2, 2, ["a", "d"])])  # type: ignore[list-item]
    with pytest.raises(BadInput, match="shard 2/2 missing"):
        merge([parts[0]])  # type: ignore[list-item]


def test_a_shard_is_balanced_by_the_baseline_durations_and_records_its_split(
        tmp_path: Path) -> None:
    from gate.core.config import load_config
    from gate.core.results import RunResult, new_results, write_results
    from gate.execution.run import RunRequest, run_suite

    tasks = tiny_suite(tmp_path / "suite")
    (tmp_path / "gate.toml").write_text(f'[suite]\ntasks = "{tasks}"\n')
    cfg = load_config(tmp_path / "gate.toml")
    # by id, shard 1/2 would be build-report + turn-mode-on; by duration, the long one alone
    durations = {"build-report": 10.0, "count-lines": 300.0, "turn-mode-on": 20.0}
    runs = [RunResult.model_validate({
        "task": t, "replication": 0, "status": "passed", "reason": None, "turns": 1,
        "usage": {"input_tokens": 1, "output_tokens": 1, "cache_creation_input_tokens": 0,
                  "cache_read_input_tokens": 0}, "cost_usd": 0.1, "duration_s": d,
        "notes": None}) for t, d in durations.items()]
    write_results(tmp_path / "baseline.json", new_results(
        model="m", agent={"kind": "builtin", "fingerprint": "f"},
        suite={"digest": "d", "tasks": {t: {"digest": t} for t in durations}}, commit=None,
        runs=runs))
    res = run_suite(RunRequest(config=cfg, output=tmp_path / "s1.json", agent_kind="oracle",
                               replications=1, jobs=1, transcripts=False, shard=(1, 2)))
    shard = (res.model_extra or {})["shard"]
    assert shard == {"index": 1, "count": 2, "tasks": ["count-lines"],
                     "balanced_by": "baseline mean durations", "selected": None}
    assert [r.task for r in res.runs] == ["count-lines"]
    assert res.schedule is not None and res.schedule.shard == "1/2"


# -- transcripts come along --------------------------------------------------------------------

def _events(word: str) -> str:
    """A transcript as the runner writes it: one turn that runs a command, then the answer."""
    lines = [{"type": "model", "turn": 1, "stop_reason": "tool_use",
              "usage": {"input_tokens": 10, "output_tokens": 5},
              "content": [{"type": "tool_use", "name": "bash",
                           "input": {"command": f"echo {word} > out.txt"}}]},
             {"type": "tool", "output": "", "is_error": False},
             {"type": "model", "turn": 2, "stop_reason": "end_turn", "content": []},
             {"type": "final", "message": f"wrote {word}"}]
    return "".join(json.dumps(line) + "\n" for line in lines)


def _shard_file(tmp: Path, index: int, tasks: list[str], transcripts: dict[str, str | None]
                ) -> Path:
    """Shard ``index``/2's results file in ``tmp``, each run naming the transcript given for
    its task (None: none recorded)."""
    from gate.core.results import Results, write_results

    path, res = _shard(index, 2, tasks)
    assert isinstance(res, Results)
    runs = [r.model_copy(update={"transcript": transcripts.get(r.task)}) for r in res.runs]
    write_results(tmp / path, res.model_copy(update={"runs": runs}))
    return tmp / path


def test_merge_carries_the_shards_transcripts_and_never_follows_a_link(tmp_path: Path) -> None:
    """`gate merge` copies each shard's transcripts beside the merged file, so the merged runs
    keep their traces; a shard without them merges all the same; a transcript that is a
    symlink (an artifact is untrusted) is never followed: skipped, one warning line naming
    the shard, exit 0 (traces explain a verdict, they never change it)."""
    from click.testing import CliRunner

    from gate.cli import main
    from gate.core.traces import run_trace

    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.jsonl").write_text('{"type": "final", "message": "SECRET"}\n')
    s1 = _shard_file(tmp_path, 1, ["a", "c"], {"a": "s1.transcripts/a-r0.jsonl",
                                               "c": "/elsewhere/s1.transcripts/c-r0.jsonl"})
    (tmp_path / "s1.transcripts").mkdir()
    (tmp_path / "s1.transcripts" / "a-r0.jsonl").write_text(_events("alpha"))
    (tmp_path / "s1.transcripts" / "c-r0.jsonl").symlink_to(outside / "secret.jsonl")
    # shard 2: an older artifact (transcripts named, none there) and a --no-transcripts run
    s2 = _shard_file(tmp_path, 2, ["b", "d"], {"d": "s2.transcripts/d-r0.jsonl"})

    out = tmp_path / "merged" / "merged.json"
    res = CliRunner().invoke(main, ["merge", str(out), str(s1), str(s2)])
    assert res.exit_code == 0, res.output
    assert "(1 transcript carried)" in res.stdout
    (warning,) = res.stderr.splitlines()
    assert warning == (f"gate: warning: {s1}: 1 transcript not carried into the merge, so its "
                       f"run has no trace ({tmp_path}/s1.transcripts/c-r0.jsonl: transcript is "
                       "a symlink (never followed))")
    merged = load_results(out)
    by_task = {r.task: r for r in merged.runs}
    assert by_task["a"].transcript == str(tmp_path / "merged" / "merged.transcripts" /
                                          "a-r0.jsonl")
    assert [by_task[t].transcript for t in "bcd"] == [None, None, None]
    assert [p.name for p in (tmp_path / "merged" / "merged.transcripts").iterdir()] == \
        ["a-r0.jsonl"]
    trace = run_trace(by_task["a"], out)  # readable beside the merged file, as after a run
    assert trace is not None and trace.steps() == ["bash echo", "(final answer)"]
    assert trace.final == "wrote alpha"

    # a shard's whole transcripts directory a symlink: not followed either
    (tmp_path / "s1.transcripts").rename(tmp_path / "real")
    (tmp_path / "s1.transcripts").symlink_to(tmp_path / "real")
    res = CliRunner().invoke(main, ["merge", str(tmp_path / "again.json"), str(s1), str(s2)])
    assert res.exit_code == 0, res.output
    assert f"{tmp_path}/s1.transcripts is a symlink (never followed)" in res.stderr
    assert "(0 transcripts carried)" in res.stdout
    assert all(r.transcript is None for r in load_results(tmp_path / "again.json").runs)
    assert not (tmp_path / "again.transcripts").exists()
