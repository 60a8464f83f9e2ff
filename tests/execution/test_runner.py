from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import pytest

from gate.agents import OracleAgent
from gate.core.results import load_results
from gate.core.tasks import load_suite
from gate.execution.runner import RunOptions, run_one
from gate.sandbox import LocalSandboxProvider, run_process_group
from tests.helpers.process import _alive


def _run(suite_dir: Path, name: str, tmp_path: Path, **opts: object):
    task = load_suite(suite_dir).get(name)
    provider = LocalSandboxProvider(base_dir=tmp_path / "ws", keep=bool(opts.pop("keep", False)))
    return run_one(task, 0, OracleAgent(), provider=provider,
                   options=RunOptions(**opts))  # type: ignore[arg-type]


def test_oracle_pass_and_workspace_removed(make_task, suite_dir: Path, tmp_path: Path) -> None:
    make_task("ok", starting={"README": "x\n"})
    res = _run(suite_dir, "ok", tmp_path)
    assert res.status == "passed" and res.reason is None
    assert res.turns == 0 and res.cost_usd == 0
    assert list((tmp_path / "ws").iterdir()) == []


def test_keep_workspaces(make_task, suite_dir: Path, tmp_path: Path) -> None:
    make_task("ok")
    _run(suite_dir, "ok", tmp_path, keep=True)
    (ws,) = list((tmp_path / "ws").iterdir())
    assert (ws / "work" / "hello.txt").read_text() == "hi\n"
    assert (ws / "work" / ".runner" / "final.txt").read_text() == "wrote hello.txt"


def test_failed_verify_is_fail_with_reason(make_task, suite_dir: Path, tmp_path: Path) -> None:
    make_task("bad", solve="echo nope > hello.txt\n",
              verify="grep -qx hi hello.txt || { echo 'hello.txt wrong'; exit 3; }\n")
    res = _run(suite_dir, "bad", tmp_path)
    assert res.status == "failed"
    assert res.reason == "verify exited 3: hello.txt wrong"


def test_setup_failure_is_infra_error(make_task, suite_dir: Path, tmp_path: Path) -> None:
    make_task("setup-broken", setup="echo 'cannot prepare' >&2\nexit 4\n")
    res = _run(suite_dir, "setup-broken", tmp_path)
    assert res.status == "error"
    assert res.reason is not None and "setup.sh failed (exit 4): cannot prepare" in res.reason


def test_missing_solution_reported_as_such(make_task, suite_dir: Path, tmp_path: Path) -> None:
    make_task("no-oracle", solve=None)
    res = _run(suite_dir, "no-oracle", tmp_path)
    assert res.status == "error" and res.reason is not None
    assert res.reason.startswith("no-solution")


def test_final_txt_written_before_verify_and_notes_score_recorded(
    make_task, suite_dir: Path, tmp_path: Path
) -> None:
    make_task(
        "answer", solve="echo 'The limit is 4375'\n",
        verify="""\
            set -euo pipefail
            grep -q 4375 "$WORK_DIR/.runner/final.txt"
            echo "offloaded=no" > .runner/notes.txt
            echo '{"score": 0.5}' > .runner/score.json
        """,
    )
    res = _run(suite_dir, "answer", tmp_path)
    assert res.status == "passed"
    assert res.notes == "offloaded=no"
    assert res.score == {"score": 0.5}


def test_hanging_verify_and_its_children_are_killed(
    make_task, suite_dir: Path, tmp_path: Path
) -> None:
    pidfile = tmp_path / "child.pid"
    make_task(
        "hang", toml="verify_timeout = 1\n",
        verify=f"sleep 300 &\necho $! > {pidfile}\nsleep 300\n",
    )
    t0 = time.monotonic()
    res = _run(suite_dir, "hang", tmp_path)
    # the promise is the timeout firing (verify sleeps 300 s): a generous bound on when it did
    assert time.monotonic() - t0 < 20
    assert res.status == "failed" and res.reason == "timeout"
    pid = int(pidfile.read_text())
    time.sleep(0.2)
    assert not _alive(pid), "a background child of verify.sh survived the timeout"


def test_background_child_left_by_passing_verify_is_killed(
    make_task, suite_dir: Path, tmp_path: Path
) -> None:
    pidfile = tmp_path / "child.pid"
    make_task(
        "leaky",
        verify=f"set -e\ngrep -qx hi hello.txt\nnohup sleep 300 >/dev/null 2>&1 &\n"
               f"echo $! > {pidfile}\n",
    )
    res = _run(suite_dir, "leaky", tmp_path)
    assert res.status == "passed"
    time.sleep(0.2)
    assert not _alive(int(pidfile.read_text()))


def test_scripts_never_see_credentials(
    make_task, suite_dir: Path, tmp_path: Path, secret_env: dict[str, str]
) -> None:
    dump = tmp_path / "env"
    make_task(
        "peek",
        setup=f"env > {dump}.setup\n",
        solve=f"env > {dump}.solve\necho hi > hello.txt\n",
        verify=f"env > {dump}.verify\ngrep -qx hi hello.txt\n",
    )
    res = _run(suite_dir, "peek", tmp_path)
    assert res.status == "passed"
    for stage in ("setup", "solve", "verify"):
        text = Path(f"{dump}.{stage}").read_text()
        env = dict(line.split("=", 1) for line in text.splitlines() if "=" in line)
        for name, value in secret_env.items():
            assert name not in env, f"{name} reached {stage}"
            assert value not in text, f"a secret value reached {stage}"
        assert env["WORK_DIR"].endswith("/work")
        assert env["TASK_DIR"] == str(suite_dir.resolve() / "peek")
        assert "PATH" in env


def test_results_file_with_only_required_fields_loads(tmp_path: Path) -> None:
    minimal = {
        "schema_version": 1, "gate_version": "0.1.0", "created_at": "2026-11-30T00:00:00Z",
        "commit": None, "model": "claude-sonnet-5-5",
        "agent": {"kind": "builtin", "fingerprint": "sha256:abc"},
        "suite": {"digest": "sha256:s", "tasks": {"t": {"digest": "sha256:t"}}},
        "runs": [{"task": "t", "replication": 0, "status": "passed", "reason": None,
                  "turns": 3, "usage": {"input_tokens": 1, "output_tokens": 2,
                                        "cache_creation_input_tokens": 3,
                                        "cache_read_input_tokens": 4},
                  "cost_usd": 0.1, "duration_s": 1.5, "notes": None}],
        "summary": {"passed": 1, "failed": 0, "errors": 0, "total": 1, "pass_rate": 1.0,
                    "mean_turns": 3, "cost_usd": 0.1, "cache_hit_rate": 0.4},
    }
    p = tmp_path / "r.json"
    p.write_text(json.dumps(minimal))
    r = load_results(p)
    assert r.runs[0].usage.cache_read_input_tokens == 4
    assert r.summary.pass_rate == 1.0
    os.chmod(p, 0o644)


def test_atomic_write_gives_a_normal_file_mode(tmp_path: Path) -> None:
    from gate._files import atomic_write_text

    p = tmp_path / "f.json"
    atomic_write_text(p, "{}")
    assert p.stat().st_mode & 0o777 == 0o666 & ~_umask()
    os.chmod(p, 0o640)
    atomic_write_text(p, "{}\n")
    assert p.stat().st_mode & 0o777 == 0o640 and p.read_text() == "{}\n"


def _umask() -> int:
    m = os.umask(0)
    os.umask(m)
    return m


def test_suite_path_with_shell_metacharacters(tmp_path: Path) -> None:
    from tests.helpers.suites import write_task

    odd = tmp_path / "su$ite `x` 'q'"
    write_task(odd, "t", setup="echo ok > s.txt\n")
    task = load_suite(odd).get("t")
    res = run_one(task, 0, OracleAgent(), provider=LocalSandboxProvider(base_dir=tmp_path / "w"))
    assert res.status == "passed", res.reason


def test_ca_bundle_paths_pass_through_but_credentials_do_not() -> None:
    from gate.secrets import scrubbed_env

    env = scrubbed_env(environ={"SSL_CERT_FILE": "/etc/ssl/ca.pem", "PATH": "/bin",
                                "MY_API_KEY": "abcdefgh12345", "COPY": "abcdefgh12345",
                                "GH_TOKEN": "ghp_0123456789"})
    assert env == {"SSL_CERT_FILE": "/etc/ssl/ca.pem", "PATH": "/bin"}


def test_workspace_whose_copy_failed_is_removed(make_task, suite_dir: Path,
                                                tmp_path: Path) -> None:
    task_dir = make_task("fifo", starting={"README": "x\n"})
    os.mkfifo(task_dir / "starting" / "pipe")  # copytree refuses a named pipe
    res = _run(suite_dir, "fifo", tmp_path)
    assert res.status == "error"
    assert res.reason is not None and "cannot prepare workspace" in res.reason
    assert "pipe" in res.reason and "named pipe" in res.reason
    assert list((tmp_path / "ws").iterdir()) == []
    _run(suite_dir, "fifo", tmp_path, keep=True)  # --keep-workspaces keeps it to look at
    assert len(list((tmp_path / "ws").iterdir())) == 1


def test_workspace_whose_setup_failed_is_removed(make_task, suite_dir: Path,
                                                 tmp_path: Path) -> None:
    make_task("setup-broken", setup="echo half > made.txt\nexit 4\n")
    res = _run(suite_dir, "setup-broken", tmp_path)
    assert res.status == "error"
    assert list((tmp_path / "ws").iterdir()) == []


def test_huge_output_is_bounded_head_and_tail(tmp_path: Path) -> None:
    res = run_process_group(
        ["bash", "-c", "echo FIRST; head -c 30000000 /dev/zero | tr '\\0' x; echo; echo LAST;"
                       "head -c 5000000 /dev/zero >&2; echo ERR-LAST >&2"],
        cwd=tmp_path, env={"PATH": os.environ["PATH"]}, timeout=60, output_limit=100_000)
    assert res.returncode == 0
    assert len(res.stdout) < 101_000 and len(res.stderr) < 101_000
    assert res.stdout.startswith("FIRST\nxxx") and res.stdout.endswith("xxx\nLAST\n")
    assert "bytes of output cut by the gate" in res.stdout
    assert res.stderr.rstrip().endswith("ERR-LAST") and "cut by the gate" in res.stderr


@pytest.mark.timeout(120)  # a read that blocks on the FIFO hangs: this fails it
def test_runner_files_are_bounded_and_never_block(make_task, suite_dir: Path,
                                                  tmp_path: Path) -> None:
    make_task("noisy", verify="""\
        set -e
        grep -qx hi hello.txt
        head -c 50000000 /dev/zero | tr '\\0' n > .runner/notes.txt
        mkfifo .runner/score.json
        head -c 300000 /dev/zero | tr '\\0' v
    """)
    res = _run(suite_dir, "noisy", tmp_path, transcripts_dir=tmp_path / "tr")
    assert res.status == "passed" and res.score is None
    assert res.notes is not None and len(res.notes) < 4200 and "cut by the gate" in res.notes
    transcript = (tmp_path / "tr" / "noisy-r0.jsonl").read_text()
    events = [json.loads(ln) for ln in transcript.splitlines()]
    (verify,) = [e for e in events if e["type"] == "verify"]
    assert len(verify["output"]) < 8200 and "cut by the gate" in verify["output"]


@pytest.mark.parametrize("plant", ["mkdir -p .runner/final.txt",
                                   "mkdir -p .runner && mkfifo .runner/final.txt",
                                   "ln -s /etc/hostname .runner/final.txt || mkdir -p .runner && "
                                   "ln -sf /etc/hostname .runner/final.txt",
                                   "echo not-a-dir > .runner"])
def test_an_agent_that_blocks_final_txt_fails_not_infra(make_task, suite_dir: Path,
                                                        tmp_path: Path, plant: str) -> None:
    make_task("block", solve=f"echo hi > hello.txt\n{plant}\n")
    res = _run(suite_dir, "block", tmp_path)
    assert res.status == "failed"
    assert res.reason is not None and "left .runner/final.txt unwritable" in res.reason


@pytest.mark.skipif(sys.platform != "linux", reason="the subreaper is Linux-only")
def test_a_setsid_daemon_dies_with_its_command(tmp_path: Path) -> None:
    """The fast check; tests/sandbox/test_reaping.py drives it through `gate run`."""
    pidfile = tmp_path / "daemon.pid"
    res = run_process_group(
        ["bash", "-c", f"setsid bash -c 'echo $$ > {pidfile}; exec sleep 300' & "
                       f"until [ -s {pidfile} ]; do sleep 0.01; done; echo started"],
        cwd=tmp_path, env={"PATH": os.environ["PATH"]}, timeout=30)
    assert res.returncode == 0 and res.stdout == "started\n"
    time.sleep(0.1)
    assert not _alive(int(pidfile.read_text()))
