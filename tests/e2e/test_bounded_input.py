"""Issue 9, items 9 and 10: every file the gate reads is bounded, and bad input is exit 2.

Through the real CLI (a subprocess, with a timeout: the failure this guards against is a gate
that hangs or eats memory). Each error is one line naming the file and the field.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from functools import partial
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from gate._files import (
    CONFIG_LIMIT,
    PROMPT_LIMIT,
    RESULTS_LIMIT,
    RESULTS_MAX_VALUES,
    TASK_META_LIMIT,
)
from gate.cli import main
from gate.compare._synthetic import reference_rates, synthetic_results
from gate.core.results import write_results
from tests.helpers.process import gate as run_gate

#: a gate reading its input without bound fails the test within a minute
gate = partial(run_gate, timeout=60)


def in_process(*args: str | Path) -> subprocess.CompletedProcess[str]:
    """The CLI in this process (cheaper), where a broken gate would fail rather than hang."""
    res = CliRunner().invoke(main, [str(a) for a in args])
    return subprocess.CompletedProcess(list(args), res.exit_code, res.stdout, res.stderr)


def one_line_error(p: subprocess.CompletedProcess[str], *needles: str) -> str:
    """Exit 2, one line on stderr (no traceback, no forged second line), naming ``needles``."""
    assert p.returncode == 2, (p.returncode, p.stdout, p.stderr)
    assert "Traceback" not in p.stderr and "internal error" not in p.stderr, p.stderr
    lines = p.stderr.splitlines()
    assert len(lines) == 1, p.stderr
    for n in needles:
        assert n in lines[0], (n, lines[0])
    return lines[0]


@pytest.fixture()
def spoilable(tmp_path: Path) -> tuple[Path, dict]:
    """A baseline file and the JSON of a results file of the same suite (to be spoiled)."""
    rng = np.random.default_rng(0)
    base = tmp_path / "baseline.json"
    write_results(base, synthetic_results(reference_rates(5), 4, rng))
    cand = tmp_path / "good.json"
    write_results(cand, synthetic_results(reference_rates(5), 2, rng))
    return base, json.loads(cand.read_text())


# ---- item 9: bounded ---------------------------------------------------------------------------

def _sim_config(tmp_path: Path, suite: Path, prompt: str | Path) -> Path:
    cfg = tmp_path / "gate.toml"
    cfg.write_text(f'[agent]\nsystem_prompt = "{prompt}"\n[suite]\ntasks = "{suite}"\n')
    return cfg


@pytest.mark.slow
def test_system_prompt_dev_zero_fifo_or_huge_is_exit_2_at_once(make_task, suite_dir: Path,
                                                               tmp_path: Path) -> None:
    make_task("a")
    fifo = tmp_path / "prompt.fifo"
    os.mkfifo(fifo)
    huge = tmp_path / "huge.md"
    huge.write_text("x" * (PROMPT_LIMIT + 1))
    binary = tmp_path / "binary.md"
    binary.write_bytes(b"hello \xff\xfe")
    (tmp_path / "zero").symlink_to("/dev/zero")  # [agent] paths stay in the repository:
    p = gate("run", "--sim", "--config", _sim_config(tmp_path, suite_dir, "zero"),
             "-o", tmp_path / "r.json", timeout=60)  # /dev/zero unbounded: never returns
    one_line_error(p, "gate.toml", "agent.system_prompt", "out of the repository")
    for prompt, why in ((fifo, "not a regular file"), (huge, "too large"),
                        (tmp_path, "directory"), (binary, "not UTF-8")):
        rel = prompt.relative_to(tmp_path).as_posix()
        p = gate("run", "--sim", "--config", _sim_config(tmp_path, suite_dir, rel),
                 "-o", tmp_path / "r.json", timeout=60)
        one_line_error(p, "[agent].system_prompt", str(prompt), "system prompt", why)


@pytest.mark.slow  # a fresh interpreter: this one has imported the SDK long ago
def test_a_bad_system_prompt_is_refused_before_the_sdk_loads(tmp_path: Path) -> None:
    """Exit 2 *at once*: the prompt file is checked before the anthropic SDK (~2 s of CPU to
    import) is, so a bad one costs a CI job well under a second."""
    cfg = tmp_path / "gate.toml"
    os.mkfifo(tmp_path / "prompt.fifo")
    cfg.write_text('[agent]\nkind = "builtin"\nsystem_prompt = "prompt.fifo"\n')
    probe = ("import sys\nfrom gate.agents import agent_kind\nfrom gate.core.config import "
             "load_config\nfrom gate.errors import BadInput\ntry:\n"
             f"    agent_kind('builtin').build(load_config({str(cfg)!r}), 'm', 'l')\n"
             "except BadInput as exc:\n    print(exc)\nprint('anthropic' in sys.modules)\n")
    p = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                       timeout=60)
    assert p.returncode == 0, p.stderr
    assert p.stdout.splitlines()[-1] == "False" and "not a regular file" in p.stdout, p.stdout


@pytest.mark.slow
def test_huge_or_special_config_is_exit_2(spoilable: tuple[Path, dict], tmp_path: Path) -> None:
    base, _ = spoilable
    big = tmp_path / "big.toml"
    big.write_text("# padding\n" * (CONFIG_LIMIT // 10 + 1))
    one_line_error(gate("compare", base, base, "--config", big), str(big), "too large")
    one_line_error(gate("compare", base, base, "--config", "/dev/zero"), "/dev/zero",
                   "not a regular file")
    deep = tmp_path / "deep.toml"
    deep.write_text("x = " + "[" * 50_000 + "\n")
    one_line_error(in_process("compare", base, base, "--config", deep), str(deep),
                   "nested too deeply")


@pytest.mark.slow
def test_compare_on_a_huge_results_file_fails_fast(spoilable: tuple[Path, dict],
                                                   tmp_path: Path) -> None:
    """Tens of GB (sparse, so the test costs nothing) are refused by size, before reading."""
    base, _ = spoilable
    huge = tmp_path / "huge.json"
    with huge.open("wb") as fh:
        fh.truncate(20 * 1024**3)
    # an unbounded read would take minutes and tens of GB: gate()'s timeout fails the test
    one_line_error(gate("compare", base, huge), str(huge), "too large", "256 MiB")
    one_line_error(gate("compare", huge, base), str(huge), "too large")
    one_line_error(gate("baseline", huge, "--baseline", tmp_path / "b.json"), str(huge))


@pytest.mark.slow
def test_compare_on_a_hostile_file_under_the_byte_limit_fails_fast(
        spoilable: tuple[Path, dict], tmp_path: Path) -> None:
    """Millions of tiny values would cost gigabytes once parsed: counted before parsing."""
    base, _ = spoilable
    hostile = tmp_path / "hostile.json"
    n = RESULTS_MAX_VALUES + 10
    hostile.write_bytes(b'{"runs": [' + b"{}," * n + b"{}]}")
    assert hostile.stat().st_size < RESULTS_LIMIT
    # parsed, this costs gigabytes and over a minute: gate()'s timeout fails the test
    one_line_error(gate("compare", base, hostile), str(hostile), "too many JSON values")


@pytest.mark.slow
def test_results_that_are_not_regular_files(spoilable: tuple[Path, dict], tmp_path: Path) -> None:
    base, _ = spoilable
    fifo = tmp_path / "results.fifo"
    os.mkfifo(fifo)
    one_line_error(gate("compare", base, fifo, timeout=60), str(fifo), "not a regular file")
    one_line_error(gate("compare", base, "/dev/zero", timeout=60), "not a regular file")


@pytest.mark.slow
def test_history_is_bounded(spoilable: tuple[Path, dict], tmp_path: Path) -> None:
    base, _ = spoilable
    one_line_error(gate("compare", base, base, "--history", "/dev/zero", timeout=60),
                   "/dev/zero", "history", "not a regular file")


@pytest.mark.slow
def test_task_files_are_bounded(make_task, suite_dir: Path) -> None:
    make_task("big-prompt", prompt="x" * (PROMPT_LIMIT + 1))
    make_task("big-toml", toml="# pad\n" * (TASK_META_LIMIT // 6 + 1))
    d = make_task("big-metadata")
    (d / "metadata.json").write_text(json.dumps({"notes": "x" * TASK_META_LIMIT}))
    d = make_task("fifo-prompt")
    (d / "task.md").unlink()
    os.mkfifo(d / "task.md")
    d = make_task("binary-prompt")
    (d / "task.md").write_bytes(b"\xff\xfe")
    d = make_task("nan-metadata")
    (d / "metadata.json").write_text('{"difficulty": "easy", "weight": NaN}')
    make_task("fine")
    p = gate("validate", "--tasks", suite_dir, timeout=60)
    assert p.returncode == 1, p.stdout + p.stderr
    rows = {ln.split()[0]: ln for ln in p.stdout.splitlines() if ln.strip()}
    assert "task.md is too large" in rows["big-prompt"]
    assert "task.toml is too large" in rows["big-toml"]
    assert "metadata.json is too large" in rows["big-metadata"]
    assert "missing task.md" in rows["fifo-prompt"]  # not a regular file: not a task.md
    assert "not UTF-8" in rows["binary-prompt"]
    assert "weight: nan is not a finite number" in rows["nan-metadata"]
    assert "1 sound, 6 broken" in p.stdout


# ---- item 10: bad input is exit 2 ----------------------------------------------------------------

def _spoiled(tmp_path: Path, name: str, data: dict | bytes | str) -> Path:
    p = tmp_path / name
    if isinstance(data, bytes):
        p.write_bytes(data)
    elif isinstance(data, str):
        p.write_text(data)
    else:
        p.write_text(json.dumps(data, allow_nan=True))
    return p


def test_hostile_results_files_are_exit_2_naming_file_and_field(
        spoilable: tuple[Path, dict], tmp_path: Path) -> None:
    base, good = spoilable
    run0 = good["runs"][0]
    deep: dict = {}
    node = deep
    for _ in range(100):
        node["x"] = {}
        node = node["x"]
    cases: dict[str, tuple[dict | bytes | str, str]] = {
        "latin1.json": (json.dumps(good).replace('"t00"', '"t\u00e9"').encode("latin-1"),
                        "not UTF-8"),
        "nested.json": ("[" * 200_000 + "]" * 200_000, "nested deeper than"),
        "deep-extra.json": ({**good, "extra": deep}, "extra.x.x.x"),
        "nan.json": ({**good, "runs": [{**run0, "cost_usd": float("nan")}]},
                     "runs.0.cost_usd: nan is not a finite number"),
        "inf.json": ({**good, "runs": [{**run0, "duration_s": float("inf")}]},
                     "runs.0.duration_s: inf is not a finite number"),
        "overflow.json": (json.dumps(good).replace('"cost_usd": ', '"cost_usd": 1e400', 1)
                          .replace("1e400" + str(run0["cost_usd"]), "1e400"),
                          "runs.0.cost_usd: inf is not a finite number"),
        "bigint.json": (json.dumps(good).replace('"turns": ', '"turns": ' + "9" * 5000, 1),
                        "not valid JSON"),
        "duplicate.json": ({**good, "runs": [run0, run0]},
                           "runs.1: duplicate run t00 #0 (the same as runs.0)"),
        "foreign.json": ({**good, "runs": [{**run0, "task": "not-in-suite"}]},
                         "runs.0.task: 'not-in-suite' is not a task of suite.tasks"),
        "newline-run.json": ({**good, "runs": [{**run0, "task": "t00\ngate: forged"}]},
                             "runs.0.task: String should match pattern"),
        "newline-suite.json": ({**good, "suite": {**good["suite"], "tasks": {
            **good["suite"]["tasks"], "x\ngate: forged": {"digest": "d"}}}},
            "suite.tasks.x\\ngate: forged"),
    }
    for name, (data, field) in cases.items():
        path = _spoiled(tmp_path, name, data)
        one_line_error(in_process("compare", base, path), str(path), field)
        # as the baseline: the same
        one_line_error(in_process("compare", path, base), str(path), field)
        one_line_error(in_process("baseline", path, "--baseline", tmp_path / "b.json"),
                       str(path), field)
    assert not (tmp_path / "b.json").exists()


@pytest.mark.slow
def test_a_newline_in_a_task_directory_is_a_broken_task_escaped(make_task, suite_dir: Path,
                                                                 tmp_path: Path) -> None:
    make_task("fine")
    make_task("evil\nPASS forged #0 (1 turns, $0.0000, 0.0s)")
    make_task("has space")
    p = gate("validate", "--tasks", suite_dir)
    assert p.returncode == 1
    assert "forged" not in "\n".join(ln for ln in p.stdout.splitlines()
                                     if ln.lstrip().startswith("PASS"))
    assert "evil\\nPASS forged" in p.stdout and "not a valid task id" in p.stdout
    assert "1 sound, 2 broken" in p.stdout
    # gate run: refused naming the broken task on one escaped line; with --skip-broken it is
    # not run, said on one escaped line, recorded escaped
    cfg = tmp_path / "gate.toml"
    cfg.write_text(f'[agent]\nkind = "oracle"\n[suite]\ntasks = "{suite_dir}"\n')
    out = tmp_path / "r.json"
    p = gate("run", "--config", cfg, "-k", "1", "-o", out, timeout=120)
    assert p.returncode == 2 and p.stderr.strip().count("\n") == 0, p.stderr
    assert "task evil\\nPASS forged #0" in p.stderr and "--skip-broken" in p.stderr
    p = gate("run", "--config", cfg, "-k", "1", "-o", out, "--skip-broken", timeout=120)
    assert p.returncode == 0, p.stderr
    assert not any(ln.startswith("PASS forged") for ln in p.stderr.splitlines()), p.stderr
    assert "gate: warning: task evil\\nPASS forged #0" in p.stderr
    data = json.loads(out.read_text())
    assert [r["task"] for r in data["runs"]] == ["fine"]
    assert set(data["problems"]) == {"evil\\nPASS forged #0 (1 turns, $0.0000, 0.0s)",
                                     "has space"}


@pytest.mark.slow
def test_unknown_task_toml_key_is_an_error_naming_it(make_task, suite_dir: Path) -> None:
    make_task("typo", toml="verify_timout = 5\n")
    make_task("fine", toml='difficulty = "easy"\nverify_timeout = 5\n')
    p = gate("validate", "--tasks", suite_dir)
    rows = {ln.split()[0]: ln for ln in p.stdout.splitlines() if ln.strip()}
    assert "unknown key 'verify_timout'" in rows["typo"], p.stdout
    assert rows["fine"].rstrip().endswith("ok")


@pytest.mark.slow
def test_environment_needs_the_container_sandbox_and_never_runs_on_the_host(
        make_task, suite_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # no Docker engine reachable (the docker SDK reads DOCKER_HOST): refused, never run locally
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-engine.sock")
    marker = tmp_path / "ran-on-host"
    make_task("in-image", toml='[environment]\nimage = "python:3.12"\n',
              solve=f"touch {marker}\necho hi > hello.txt\n")
    make_task("with-dockerfile", extra={"environment/Dockerfile": "FROM python:3.12\n"},
              solve=f"touch {marker}\necho hi > hello.txt\n")
    make_task("fine")
    cfg = tmp_path / "gate.toml"
    cfg.write_text(f'[agent]\nkind = "oracle"\n[suite]\ntasks = "{suite_dir}"\n')
    out = tmp_path / "r.json"
    p = gate("run", "--config", cfg, "-k", "1", "-o", out, timeout=120)
    assert p.returncode == 0, p.stderr
    assert not marker.exists(), "a container task ran on the host"
    data = json.loads(out.read_text())
    assert [r["task"] for r in data["runs"]] == ["fine"]
    assert "needs the container sandbox" in data["problems"]["in-image"]
    assert "needs the container sandbox" in data["problems"]["with-dockerfile"]
    assert "task in-image not run: task.toml: [environment] needs the container sandbox" \
        in p.stderr
    assert "no Docker engine reachable" in data["problems"]["in-image"]


def test_nan_and_inf_in_toml_are_exit_2_naming_the_field(spoilable: tuple[Path, dict], make_task,
                                                         suite_dir: Path, tmp_path: Path) -> None:
    base, _ = spoilable
    for body, field in (('[agent.prices.m]\ninput = inf\noutput = 1\n', "agent.prices.m.input"),
                        ("[suite]\nverify_timeout = inf\n", "suite.verify_timeout"),
                        ("[gate]\nturns_margin = nan\n", "gate.turns_margin")):
        cfg = tmp_path / "gate.toml"
        cfg.write_text(body)
        one_line_error(in_process("compare", base, base, "--config", cfg), str(cfg), field,
                       "finite number")
    make_task("forever", toml="verify_timeout = inf\n")
    p = in_process("validate", "--tasks", suite_dir)
    assert "task.toml: verify_timeout: Input should be a finite number" in p.stdout, p.stdout


@pytest.mark.slow
def test_a_trailing_newline_does_not_slip_past_the_task_id_check(make_task,
                                                                  suite_dir: Path) -> None:
    """``$`` in a Python pattern also matches before a final newline: the id check must not."""
    make_task("fine")
    make_task("sneaky\n")
    p = gate("validate", "--tasks", suite_dir)
    assert p.returncode == 1, p.stdout
    assert "sneaky\\n " in p.stdout and "not a valid task id" in p.stdout
    assert "1 sound, 1 broken" in p.stdout


def test_numbers_out_of_range_are_exit_2_naming_the_field(spoilable: tuple[Path, dict],
                                                          tmp_path: Path) -> None:
    """A huge integer written out (10^30: not a float, so it passed as an int), a float that is
    finite but absurd, or a negative count: refused as results and as a baseline."""
    base, good = spoilable
    run0 = good["runs"][0]
    huge = 10**30

    def run(**changes: object) -> dict:
        return {**good, "runs": [{**run0, **changes}, *good["runs"][1:]]}

    usage = run0["usage"]
    cases: dict[str, tuple[dict, str]] = {
        "replication": (run(replication=huge), "runs.0.replication"),
        "turns": (run(turns=huge), "runs.0.turns"),
        "tokens": (run(usage={**usage, "input_tokens": huge}), "runs.0.usage.input_tokens"),
        "tokens-2^53": (run(usage={**usage, "output_tokens": 2**53 + 1}),
                        "runs.0.usage.output_tokens"),
        "negative-tokens": (run(usage={**usage, "cache_read_input_tokens": -5}),
                            "runs.0.usage.cache_read_input_tokens"),
        "billed": (run(billed_usage={**usage, "output_tokens": 10**13}),
                   "runs.0.billed_usage.output_tokens"),
        "cost": (run(cost_usd=1e300), "runs.0.cost_usd"),
        "overhead": (run(overhead_usd=1e300), "runs.0.overhead_usd"),
        "duration": (run(duration_s=1e300), "runs.0.duration_s"),
        "source-rep": (run(source_replication=huge), "runs.0.source_replication"),
        "summary": ({**good, "summary": {**good["summary"], "passed": huge}}, "summary.passed"),
        "summary-cost": ({**good, "summary": {**good["summary"], "cost_usd": 1e300}},
                         "summary.cost_usd"),
        "schedule": ({**good, "schedule": {"replications": 10**20}}, "schedule.replications"),
        "missing": ({**good, "interrupted": {"reason": "x", "missing": [
            {"task": "t00", "replication": huge}]}}, "interrupted.missing.0.replication"),
        "schema": ({**good, "schema_version": huge}, "schema_version"),
    }
    for name, (data, field) in cases.items():
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps(data))
        assert str(huge) not in field
        one_line_error(in_process("compare", base, path), str(path), field)
        one_line_error(in_process("compare", path, base), str(path), field)
        one_line_error(in_process("baseline", path, "--baseline", tmp_path / "b.json"),
                       str(path), field)
    assert not (tmp_path / "b.json").exists()
