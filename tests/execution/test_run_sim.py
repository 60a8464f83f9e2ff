"""`gate run` end to end against the simulator: metering to the token, caching, faults, keys."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gate.agents._builtin import BuiltinAgent
from gate.core.config import GateConfig, load_config
from gate.core.cost import price_table
from gate.core.results import Results, load_results
from gate.execution.run import RunRequest, run_suite
from gate.sim import FaultConfig, Simulator, key_id, ledger_totals, read_ledger
from gate.usage import Usage
from tests.helpers.process import gate
from tests.helpers.suites import rooted_at

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
SDK_AGENT = Path(__file__).parents[1] / "agents" / "sdk_agent.py"
EASY = ["fix-slugify-whitespace", "fix-low-stock-report", "fix-version-compare"]


def _config(tmp_path: Path, **agent: object) -> GateConfig:
    cfg = load_config(REPO / "gate.toml")
    update = {"agent": cfg.agent.model_copy(update=agent)} if agent else {}
    return cfg.model_copy(update=update)


@pytest.fixture
def quick_retries(monkeypatch: pytest.MonkeyPatch) -> None:
    """The builtin agent's retries back off 10 ms, not 0.5 s doubling (up to ~15 s of sleep a
    run): these tests check what a retried or failed turn leaves, not how long it waited (the
    backoff's own test: test_meter.py)."""
    init = BuiltinAgent.__init__

    def quick(self: BuiltinAgent, *args: object, **kwargs: object) -> None:
        init(self, *args, **{**kwargs, "backoff_s": 0.01})  # type: ignore[arg-type]

    monkeypatch.setattr(BuiltinAgent, "__init__", quick)


def _assert_meter_equals_ledger(results: Results) -> None:
    ledger = results.model_extra["simulator"]["ledger"]  # type: ignore[index]
    served = ledger_totals(ledger)
    # the billed numbers equal the ledger to the token; the measured ones differ from them only
    # by writes counted as reads (warm starts), never in the prompt's size or the output
    metered = sum((r.billed_usage or r.usage for r in results.runs), Usage())
    for field in ("input_tokens", "output_tokens", "cache_creation_input_tokens",
                  "cache_read_input_tokens", "cache_creation_5m", "cache_creation_1h"):
        assert getattr(metered, field) == getattr(served, field), field
    measured = sum((r.usage for r in results.runs), Usage())
    assert (measured.input_tokens, measured.output_tokens, measured.prompt_tokens) == (
        served.input_tokens, served.output_tokens, served.prompt_tokens)
    # cost: measured cost + overhead (the warm starts' write premium) per run equals a hand
    # computation from what the ledger served
    prices = price_table()
    by_request = sum(prices.cost(e["requested_model"] if "requested_model" in e else
                                 e["model"].removesuffix("-sim"), Usage.from_api(e["usage"]))
                     for e in read_ledger(ledger) if e.get("usage"))
    assert all(r.overhead_usd is not None and r.overhead_usd >= 0 for r in results.runs)
    assert sum(r.cost_usd + (r.overhead_usd or 0) for r in results.runs) == pytest.approx(
        by_request, rel=1e-6)
    assert results.summary.spend_usd == pytest.approx(by_request, rel=1e-4)
    assert results.summary.cost_usd + (results.summary.overhead_usd or 0) == pytest.approx(
        by_request, rel=1e-4)
    assert results.schedule is not None and results.schedule.metering == "warm-prefix-v1"
    assert sum(r.turns for r in results.runs) == sum(
        1 for e in read_ledger(ledger) if e.get("usage"))


def test_builtin_agent_metered_to_the_token(tmp_path: Path) -> None:
    out = tmp_path / "results.json"
    res = run_suite(RunRequest(config=_config(tmp_path), output=out, task_ids=EASY,
                               replications=2, jobs=2, sim=True, seed=3))
    assert res.model == "claude-sonnet-5-5 (simulator)"
    assert res.agent.kind == "builtin" and res.agent.parts["model"] == "claude-sonnet-5-5"
    assert len(res.runs) == 6 and res.summary.errors == 0
    assert res.summary.passed >= 3
    assert all(r.turns >= 3 for r in res.runs)
    _assert_meter_equals_ledger(load_results(out))
    assert res.summary.cache_hit_rate is not None and res.summary.cache_hit_rate >= 0.85
    transcript = (tmp_path / "results.transcripts" / f"{EASY[0]}-r0.jsonl").read_text()
    kinds = {json.loads(line)["type"] for line in transcript.splitlines()}
    assert {"model", "tool", "verify", "final"} <= kinds


def test_command_agent_metered_to_the_token_and_never_sees_the_key(
    tmp_path: Path, secret_env: dict[str, str]
) -> None:
    dump = tmp_path / "agent-env.json"
    cfg = _config(tmp_path, kind="command",
                  command=f"DUMP_ENV={dump} {sys.executable} {SDK_AGENT}")
    out = tmp_path / "results.json"
    res = run_suite(RunRequest(config=cfg, output=out, task_ids=EASY[:2], replications=1,
                               jobs=1, sim=True, seed=1))
    assert res.agent.kind == "command" and res.summary.errors == 0, res.runs
    assert res.summary.passed >= 1
    _assert_meter_equals_ledger(load_results(out))
    env = json.loads(dump.read_text())
    for name, value in secret_env.items():
        assert value not in json.dumps(env), f"{name}'s value reached the agent"
    assert env["ANTHROPIC_API_KEY"].startswith("gate-run-")
    assert env["ANTHROPIC_BASE_URL"].startswith("http://127.0.0.1:")
    assert env["GATE_TASK_ID"] in EASY[:2] and env["GATE_REPLICATION"] == "0"
    assert "TASK_DIR" not in env
    text = out.read_text() + "".join(
        p.read_text() for p in (tmp_path / "results.transcripts").iterdir())
    for value in secret_env.values():
        assert value not in text


def test_now_in_the_system_prompt_destroys_cache_hits(tmp_path: Path) -> None:
    prompt = tmp_path / "now.md"  # in gate.toml's folder, as [agent] paths must be
    prompt.write_text("Current time: {{ now }}\n" + (REPO / "agent" / "system.md").read_text())
    cfg = rooted_at(_config(tmp_path), tmp_path)
    cfg = cfg.model_copy(update={"agent": cfg.agent.model_copy(
        update={"system_prompt": "now.md"})})
    res = run_suite(RunRequest(config=cfg, output=tmp_path / "r.json", task_ids=EASY[:2],
                               replications=1, jobs=1, sim=True))
    assert res.summary.cache_hit_rate is not None and res.summary.cache_hit_rate < 0.30
    baseline = run_suite(RunRequest(config=_config(tmp_path), output=tmp_path / "b.json",
                                    task_ids=EASY[:2], replications=1, jobs=1, sim=True))
    assert baseline.summary.cache_hit_rate is not None
    assert baseline.summary.cache_hit_rate >= 0.75  # two cold runs; the whole suite: ≥ 0.90
    assert res.agent.fingerprint != baseline.agent.fingerprint
    assert res.agent.parts["prompt"] != baseline.agent.parts["prompt"]


def test_bundled_suite_cache_hit_rate_at_least_0_90(tmp_path: Path) -> None:
    res = run_suite(RunRequest(config=_config(tmp_path), output=tmp_path / "r.json",
                               replications=1, jobs=2, sim=True, transcripts=False))
    assert len(res.runs) == 16 and res.summary.errors == 0
    assert res.summary.cache_hit_rate is not None and res.summary.cache_hit_rate >= 0.90
    assert res.summary.passed >= 8  # the simulated sonnet solves most of the suite


@pytest.mark.usefixtures("quick_retries")
def test_faults_at_ten_percent_never_become_task_failures(tmp_path: Path) -> None:
    faults = FaultConfig(rate_429=0.02, rate_529=0.02, rate_500=0.02, rate_stream_error=0.02,
                         rate_disconnect=0.02, retry_after=0.01)
    cfg = _config(tmp_path)
    clean = run_suite(RunRequest(config=cfg, output=tmp_path / "clean.json", task_ids=EASY,
                                 replications=2, jobs=1, sim=True, seed=5))
    faulty = run_suite(RunRequest(config=cfg, output=tmp_path / "faulty.json", task_ids=EASY,
                                  replications=2, jobs=1, sim=True, seed=5,
                                  sim_options={"faults": faults}))
    served = read_ledger(faulty.model_extra["simulator"]["ledger"])  # type: ignore[index]
    assert any(e.get("fault") or e.get("status") != 200 for e in served), "no fault injected"
    assert faulty.summary.errors == 0
    assert [(r.task, r.status) for r in faulty.runs] == [(r.task, r.status) for r in clean.runs]
    _assert_meter_equals_ledger(load_results(tmp_path / "faulty.json"))


def test_same_code_path_to_a_real_base_url_with_the_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without --sim the meter forwards to ANTHROPIC_BASE_URL with the real key."""
    with Simulator(tasks_dir=REPO / "tasks", ledger_path=tmp_path / "ledger.jsonl") as sim:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", sim.base_url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-a-real-looking-key-123456")
        res = run_suite(RunRequest(config=_config(tmp_path), output=tmp_path / "r.json",
                                   task_ids=EASY[:1], replications=1, jobs=1))
    assert res.model == "claude-sonnet-5-5"  # not labelled simulated: the gate did not start it
    assert res.model_extra["upstream"] == "custom-base-url"  # type: ignore[index]
    entries = read_ledger(tmp_path / "ledger.jsonl")
    assert entries and {e["key_id"] for e in entries} == {
        key_id("sk-ant-a-real-looking-key-123456")}


def test_without_key_and_without_sim_exit_3(tmp_path: Path) -> None:
    import os

    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "GATE_"))}
    p = gate("run", "--config", str(REPO / "gate.toml"), "-o", str(tmp_path / "r.json"),
             base=env, cwd=tmp_path)
    assert p.returncode == 3
    assert "no ANTHROPIC_API_KEY" in p.stderr and "--sim" in p.stderr
    assert not (tmp_path / "r.json").exists()


def test_unknown_model_exit_2_with_how_to(tmp_path: Path) -> None:
    p = gate("run", "--config", str(REPO / "gate.toml"), "--sim", "--model", "claude-nova-9",
             "-o", str(tmp_path / "r.json"), cwd=tmp_path)
    assert p.returncode == 2
    assert 'agent.prices."claude-nova-9"' in p.stderr


@pytest.mark.usefixtures("quick_retries")
def test_model_api_failing_after_retries_is_infra_and_billed_tokens_count(
    tmp_path: Path,
) -> None:
    faults = FaultConfig(rate_stream_error=1.0, retry_after=0.01)
    res = run_suite(RunRequest(config=_config(tmp_path), output=tmp_path / "r.json",
                               task_ids=EASY[:1], replications=1, jobs=1, sim=True,
                               sim_options={"faults": faults}))
    (run,) = res.runs
    assert run.status == "error"
    assert run.reason is not None and "model API failed after retries" in run.reason
    assert res.summary.total == 0 and res.summary.errors == 1
    assert run.usage.prompt_tokens > 0 and run.cost_usd > 0  # billed input still counted
    _assert_meter_equals_ledger(load_results(tmp_path / "r.json"))


def test_too_many_infra_errors_exit_3_with_results_kept(make_task, suite_dir: Path,
                                                        tmp_path: Path) -> None:
    make_task("broken-setup", setup="exit 7\n")
    out = tmp_path / "r.json"
    p = gate("run", "--tasks", str(suite_dir), "--agent", "oracle", "-k", "1", "-o", str(out),
             cwd=tmp_path)
    assert p.returncode == 3, p.stderr
    assert "1 of 1 runs were infra errors" in p.stderr
    assert load_results(out).runs[0].status == "error"


def test_agent_cannot_read_the_key_from_the_gate_process(tmp_path: Path) -> None:
    """/proc/$PPID/environ of the gate holds no credential, though the gate was given them."""
    import os

    dump = tmp_path / "parent-environ"
    cfg = tmp_path / "gate.toml"
    cfg.write_text(
        (REPO / "gate.toml").read_text()
        .replace('kind = "builtin"', 'kind = "command"\n'
                 f'command = "tr \\"\\\\\\\\0\\" \\"\\\\\\\\n\\" < /proc/$PPID/environ > {dump}"')
        .replace('tasks = "tasks"', f'tasks = "{REPO / "tasks"}"')
        .replace('skills = "skills/"', "")
        .replace('system_prompt = "agent/system.md"', "")
    )
    env = dict(os.environ)
    env.update({"ANTHROPIC_API_KEY": "sk-ant-parent-SECRET-123456",
                "GITHUB_TOKEN": "ghp_parentSECRET1234567890"})
    p = gate("run", "--config", str(cfg), "--sim", "--task", EASY[0], "-k", "1",
             "-o", str(tmp_path / "r.json"), base=env, cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    text = dump.read_text()
    assert "PATH=" in text  # it did read the gate's environment
    assert "sk-ant-parent-SECRET-123456" not in text
    assert "ghp_parentSECRET1234567890" not in text


@pytest.mark.parametrize("template,needle", [("Hi {{ task_id ", "template error"),
                                              ("Hi {{ nope }}", "'nope' is undefined")])
def test_bad_system_prompt_template_is_exit_2_before_anything_runs(
    tmp_path: Path, template: str, needle: str
) -> None:

    prompt = tmp_path / "system.md"
    prompt.write_text(template)
    cfg = tmp_path / "gate.toml"
    cfg.write_text(f'[agent]\nsystem_prompt = "system.md"\n[suite]\ntasks = "{REPO / "tasks"}"\n')
    p = gate("run", "--config", str(cfg), "--sim", "-o", str(tmp_path / "r.json"), cwd=tmp_path)
    assert p.returncode == 2
    assert needle in p.stderr and "system.md:1:" in p.stderr and "Traceback" not in p.stderr
    assert not (tmp_path / "r.json").exists()


def test_agent_max_turns_caps_a_task_that_allows_more(tmp_path: Path) -> None:
    res = run_suite(RunRequest(config=_config(tmp_path, max_turns=2), output=tmp_path / "r.json",
                               task_ids=["rename-get-user"], replications=1, jobs=1, sim=True))
    (run,) = res.runs
    assert run.turns == 2 and run.status == "failed"
    assert run.reason == "max_turns (2) reached"


def test_an_http_proxy_for_the_api_does_not_capture_loopback_hops(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for var in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"):
        monkeypatch.setenv(var, "http://127.0.0.1:9")  # nothing listens there
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    res = run_suite(RunRequest(config=_config(tmp_path), output=tmp_path / "r.json",
                               task_ids=EASY[:1], replications=1, jobs=1, sim=True))
    assert res.summary.errors == 0 and res.runs[0].turns >= 3
    assert res.model_extra["selected_tasks"] == EASY[:1]  # type: ignore[index]
    # the bypass is given to each hop explicitly: the gate's own environment is untouched
    assert "NO_PROXY" not in os.environ and "no_proxy" not in os.environ


def test_a_command_agent_gets_the_loopback_bypass_in_its_own_environment(
    make_task, suite_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An HTTP(S)_PROXY set for the real API must not capture a command agent's hop to the
    meter: NO_PROXY (the inherited value plus loopback) is in the agent's environment."""
    monkeypatch.setenv("NO_PROXY", "example.internal")
    monkeypatch.delenv("no_proxy", raising=False)
    make_task("a")
    cfg = tmp_path / "gate.toml"
    cfg.write_text('[agent]\nkind = "command"\ncommand = "echo \\"$NO_PROXY|$no_proxy\\" > '
                   f'$GATE_FINAL_FILE"\n[suite]\ntasks = "{suite_dir}"\n')
    res = run_suite(RunRequest(config=load_config(cfg), output=tmp_path / "r.json",
                               replications=1, jobs=1, sim=True))
    transcript = Path(res.runs[0].transcript or "").read_text()
    final = next(json.loads(line)["message"] for line in transcript.splitlines()
                 if json.loads(line)["type"] == "final")
    assert final == ("example.internal,127.0.0.1,localhost|127.0.0.1,localhost")
    assert os.environ["NO_PROXY"] == "example.internal" and "no_proxy" not in os.environ


@pytest.mark.parametrize("sig", ["SIGINT", "SIGTERM"])
def test_interrupt_stops_running_agents_promptly(make_task, suite_dir: Path, tmp_path: Path,
                                                 sig: str) -> None:
    """Agents run in their own sessions (no terminal Ctrl-C reaches them): the gate kills them."""
    import signal
    import time

    from tests.helpers.process import _alive

    for name in ("a", "b"):
        make_task(name)
    pids = tmp_path / "pids"
    pids.mkdir()
    cfg = tmp_path / "gate.toml"
    cfg.write_text(f'[agent]\nkind = "command"\ncommand = "echo $$ > {pids}/$GATE_TASK_ID; '
                   f'sleep 1000"\n[suite]\ntasks = "{suite_dir}"\n')
    out = tmp_path / "r.json"
    proc = subprocess.Popen([sys.executable, "-m", "gate", "run", "--config", str(cfg), "--sim",
                             "-k", "1", "-j", "2", "-o", str(out)], cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 30
    while len(list(pids.iterdir())) < 2 and time.monotonic() < deadline:
        time.sleep(0.1)
    agent_pids = [int(p.read_text()) for p in pids.iterdir()]
    assert len(agent_pids) == 2
    proc.send_signal(getattr(signal, sig))
    # the agents sleep 1000 s: a gate that waited for them would time out here
    try:
        _, err = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()  # its launchers take the agents with it
        proc.communicate()
        raise
    assert proc.returncode == 130 and "interrupted" in err and "Traceback" not in err
    time.sleep(0.3)
    assert not any(_alive(p) for p in agent_pids), "an agent outlived the gate"
    assert load_results(out).runs == []  # nothing half-measured was recorded


def _big_file(lines: int = 1600) -> str:
    """About 100 KB of lines no shorter form holds (a digest chain)."""
    import hashlib

    out, h = [], b"seed"
    for _ in range(lines):
        h = hashlib.sha256(h).digest()
        out.append(h.hex())
    return "\n".join(out) + "\n"


def test_a_solution_larger_than_max_tokens_is_replayed_over_several_turns(
        make_task, suite_dir: Path, tmp_path: Path) -> None:
    """A 100 KB solution does not fit in one answer of 4,096 tokens: the simulator writes it
    in parts, one tool call per turn, then runs it, as a model would (it was cut at
    ``max_tokens`` on every solving episode, and the task failed while its oracle passed)."""
    import hashlib

    from gate.sim import decide_outcome

    body = _big_file()
    assert len(body) > 100_000
    digest = hashlib.sha256(body.encode()).hexdigest()
    make_task("big", toml='difficulty = "easy"\n', prompt="Write big.txt as specified.",
              solve=f"set -e\ncat > big.txt <<'EOF_BIG'\n{body}EOF_BIG\necho wrote big.txt\n",
              verify=f'set -e\n[ "$(sha256sum big.txt | cut -d" " -f1)" = "{digest}" ]\n')
    seed = next(s for s in range(100)
                if decide_outcome(s, "claude-sonnet-5-5", "big", "easy", 0) == "solve")
    oracle = gate("run", "--tasks", str(suite_dir), "--agent", "oracle", "-k", "1",
                  "-o", str(tmp_path / "oracle.json"))
    assert oracle.returncode == 0, oracle.stderr
    out = tmp_path / "results.json"
    p = gate("run", "--sim", "--tasks", str(suite_dir), "-k", "1", "--seed", str(seed),
             "-o", str(out))
    results = load_results(out)
    run = results.runs[0]
    assert run.status == "passed", (run.reason, p.stderr[-2000:])
    assert run.turns > 4 + 5  # easy's four turns, and the parts: each under max_tokens
    assert p.returncode == 0, p.stderr
    _assert_meter_equals_ledger(results)
    served = [e for e in read_ledger(results.model_extra["simulator"]["ledger"])  # type: ignore[index]
              if e.get("usage")]
    assert max(e["usage"]["output_tokens"] for e in served) < 4096  # never cut at max_tokens
