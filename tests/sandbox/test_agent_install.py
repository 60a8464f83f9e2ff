"""``[agent] install``: the agent under test installed into each task's image, as Harbor
installs its agents, once per image and script within a job, through ``gate run`` on real
containers (the offline base image: the install script needs no registry here; the shim it
installs is tests/agents/stdlib_agent.py, which talks to the meter with python3's urllib)."""

from __future__ import annotations

import ipaddress
import json
import os
import socket
import socketserver
import subprocess
import threading
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import pytest

from tests.helpers.docker import IMAGE, LAUNCHED, ours, standins_problem
from tests.helpers.harbor import harbor_task
from tests.helpers.process import gate
from tests.helpers.suites import write_task

in_docker = pytest.mark.usefixtures("engine")

SHIM = Path(__file__).parents[1] / "agents" / "stdlib_agent.py"
# what the agent's command shows of the install before it starts the installed agent: the
# install's nonce (the same in every run of an image: installed once) and any process the
# install left (none: the agent phase starts from the committed image)
COMMAND = ("echo NONCE $(cat /opt/agent/nonce) >&2; "
           "echo LEFT $(cat /proc/[0-9]*/cmdline 2>/dev/null | tr '\\0' ' ' | "
           "grep -o 'sleep 100[3]' | wc -l) >&2; exec /opt/agent/claude")


def install_script(host: str, port: int, *, sleep: int = 4) -> str:
    return f"""#!/bin/sh
set -e
echo "installing the agent"
grep -q eth0 /proc/net/dev || {{ echo "the install has no network"; exit 9; }}
if python3 -c 'import socket,sys; socket.create_connection((sys.argv[1], int(sys.argv[2])), 3)' \\
    {host} {port} 2>/dev/null; then
  echo "the install reached a host service"; exit 8
fi
[ "$(id -u)" = 0 ] || {{ echo "the install is not root"; exit 7; }}
python3 -c 'import sys; c = [ln for ln in open("/proc/self/status") if ln.startswith("CapEff")]
sys.exit(int(c[0].split()[1], 16) >> 13 & 1)' || {{ echo "the install kept NET_RAW"; exit 6; }}
mkdir -p /opt/agent
cat > /opt/agent/claude <<'SHIM'
#!/usr/bin/env python3
{SHIM.read_text()}
SHIM
chmod 755 /opt/agent/claude
od -An -N8 -tx1 /dev/urandom | tr -d ' \\n' > /opt/agent/nonce
setsid sleep 1003 < /dev/null > /dev/null 2>&1 &
sleep {sleep}
"""


@pytest.fixture
def host_service() -> Iterator[tuple[str, int]]:
    """A TCP service on every address of the host, and the host's address on the default
    bridge (where a container would reach it)."""
    server = socketserver.TCPServer(("0.0.0.0", 0), socketserver.BaseRequestHandler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    ipam = json.loads(subprocess.run(["docker", "network", "inspect", "bridge", "--format",
                                      "{{json .IPAM.Config}}"], capture_output=True,
                                     text=True, check=True).stdout)[0]
    gw = ipam.get("Gateway") or str(ipaddress.ip_network(ipam["Subnet"])[1])
    try:
        yield gw, server.server_address[1]
    finally:
        server.shutdown()


def _config(tmp: Path, suite: Path, script: str, extra: str = "") -> Path:
    (tmp / "agent").mkdir(exist_ok=True)
    (tmp / "agent" / "install.sh").write_text(script)
    cfg = tmp / "gate.toml"
    cfg.write_text(f'[agent]\nkind = "command"\ncommand = {json.dumps(COMMAND)}\n'
                   f'install = "agent/install.sh"\n{extra}'
                   f'[suite]\ntasks = "{suite}"\nsandbox = "docker"\n')
    return cfg


def _installs_left() -> list[str]:
    """Committed installs a gate of these tests made and left."""
    ids = subprocess.run(["docker", "images", "-q", "--no-trunc", "--filter",
                          "label=agent-gate.install"], capture_output=True, text=True,
                         check=True).stdout.split()
    if not ids:
        return []
    out = subprocess.run(["docker", "image", "inspect", "--format",
                          '{{.Id}} {{index .Config.Labels "agent-gate.owner"}}', *ids],
                         capture_output=True, text=True).stdout
    owners = {f"{socket.gethostname()}:{pid}" for pid in LAUNCHED}
    return [i for i, _, o in (ln.partition(" ") for ln in out.splitlines()) if o in owners]


def _stderr_lines(run: dict, prefix: str) -> list[str]:
    events = [json.loads(ln) for ln in Path(run["transcript"]).read_text().splitlines()]
    return [ln for e in events if e["type"] == "command"
            for ln in e["stderr"].splitlines() if ln.startswith(prefix)]


@pytest.mark.docker
@pytest.mark.slow
@in_docker
def test_installed_once_per_image_guarded_its_time_apart_its_leftovers_gone(
        tmp_path: Path, host_service: tuple[str, int]) -> None:
    suite = tmp_path / "suite"
    harbor_task(suite, "count-a")
    harbor_task(suite, "count-b")  # the same environment/: the same image
    cfg = _config(tmp_path, suite, install_script(*host_service))
    out = tmp_path / "r.json"
    p = gate("run", "--config", cfg, "--sim", "-k", "2", "-j", "2", "-o", out,
             timeout=600, cwd=tmp_path)
    assert p.returncode in (0, 1), p.stderr
    data = json.loads(out.read_text())
    runs = data["runs"]
    statuses = [r["status"] for r in runs]  # the simulated model may fail a run
    assert len(runs) == 4 and "passed" in statuses and "error" not in statuses, runs
    # installed once: one nonce in every replication of both tasks
    nonces = {ln for r in runs for ln in _stderr_lines(r, "NONCE ")}
    assert len(nonces) == 1 and len(next(iter(nonces))) > len("NONCE "), nonces
    # what the install left running never met the agent
    assert {ln for r in runs for ln in _stderr_lines(r, "LEFT ")} == {"LEFT 0"}
    # its time is recorded apart (at least the first run waited the install's sleep), and
    # the run's duration is the run's alone: start to end, less the install
    assert max(r["install_s"] for r in runs) >= 4, runs
    for r in runs:
        wall = (datetime.fromisoformat(r["created_at"])
                - datetime.fromisoformat(r["started_at"])).total_seconds()
        assert abs(wall - r["duration_s"] - r["install_s"]) < 1.5, r
    assert data["agent"]["parts"]["install"].startswith("sha256:")
    # the report's run details say it
    html = tmp_path / "r.html"
    assert gate("report", out, "--html", html).returncode == 0
    assert html.read_text().count("agent install: waited ") == 4
    # the committed image went with the job, as did every container
    assert _installs_left() == [] and ours() == []


FAILING = """#!/bin/sh
echo "fetching @anthropic-ai/claude-code"
echo "npm error code ECONNREFUSED" >&2
echo "npm error network the registry is unreachable" >&2
exit 7
"""


@pytest.mark.docker
@pytest.mark.slow
@in_docker
def test_a_failed_install_is_an_infra_error_naming_its_end_and_the_agent_never_runs(
        tmp_path: Path) -> None:
    suite = tmp_path / "suite"
    harbor_task(suite, "count-a")
    harbor_task(suite, "count-b")
    cfg = _config(tmp_path, suite, FAILING)
    out = tmp_path / "r.json"
    p = gate("run", "--config", cfg, "--sim", "-k", "2", "-j", "2", "-o", out,
             timeout=300, cwd=tmp_path)
    assert p.returncode == 3, p.stderr
    data = json.loads(out.read_text())
    for r in data["runs"]:
        assert r["status"] == "error", r
        assert r["reason"].startswith("infra: the agent's install ([agent] install) failed "
                                      "(exit 7); its output ends:"), r["reason"]
        assert "npm error network the registry is unreachable" in r["reason"], r["reason"]
        events = [json.loads(ln) for ln in Path(r["transcript"]).read_text().splitlines()]
        assert not [e for e in events if e["type"] == "command"], events  # never ran
        assert r["turns"] == 0
    assert _installs_left() == [] and ours() == []
    # another script is another agent: its fingerprint's install part moves, nothing else
    first = data["agent"]
    cfg2 = _config(tmp_path, suite, FAILING.replace("exit 7", "exit 7  # pinned 2.1.198"))
    out2 = tmp_path / "r2.json"
    p = gate("run", "--config", cfg2, "--sim", "-k", "1", "-j", "1", "-o", out2,
             "--tasks", suite, timeout=300, cwd=tmp_path)
    second = json.loads(out2.read_text())["agent"]
    assert second["fingerprint"] != first["fingerprint"]
    assert {k for k in first["parts"] if first["parts"][k] != second["parts"][k]} == {
        "install"}


#: what an install may print of files it read (a registry login, a token, a key): none of it
#: the gate's environment holds, so only its shape can tell it (issue 38, item 4)
LEAKED = ("dXNlcjpyZWctSW5zdGFsbExlYWs9", "ghp_InstallLeak0123456789abcdefXYZ",
          "b3BlbnNzaC1rZXktdjEAAAAInstallLeak", "pq-InstallLeak-8")
LEAKING = f"""#!/bin/sh
echo "reading the registry login"
echo "-----BEGIN OPENSSH PRIVATE KEY-----"
for i in $(seq 20); do echo "{LEAKED[2]}$i"; done
echo "-----END OPENSSH PRIVATE KEY-----"
echo '{{"auths": {{"registry.example": {{"auth": "{LEAKED[0]}"}}}}}}'
echo "export GH_TOKEN={LEAKED[1]}"
echo "host=db user=app password={LEAKED[3]}" >&2
exit 5
"""  # the key's start is past the 15 lines its reason keeps


@pytest.mark.docker
@pytest.mark.slow
@in_docker
def test_a_failed_installs_output_is_scrubbed_in_its_reason_results_and_report(
        tmp_path: Path) -> None:
    suite = tmp_path / "suite"
    harbor_task(suite, "count-a")
    out = tmp_path / "r.json"
    p = gate("run", "--config", _config(tmp_path, suite, LEAKING), "--sim", "-k", "1", "-o", out,
             timeout=300, cwd=tmp_path)
    assert p.returncode == 3, p.stderr
    (run,) = json.loads(out.read_text())["runs"]
    assert run["reason"].startswith("infra: the agent's install ([agent] install) failed "
                                    "(exit 5); its output ends:"), run["reason"]
    assert "GH_TOKEN=[REDACTED]" in run["reason"]  # the rest of its output is kept
    assert run["reason"].count("[REDACTED]") == 4, run["reason"]
    report = tmp_path / "report.html"
    assert gate("report", out, "--html", report, cwd=tmp_path).returncode == 0
    stored = [out.read_text(), report.read_text(), p.stdout, p.stderr,
              *(f.read_text() for f in (tmp_path / "r.transcripts").iterdir())]
    for text in stored:
        assert not any(secret in text for secret in LEAKED), text[:2000]


@pytest.mark.docker
@pytest.mark.slow
@in_docker
def test_install_on_a_gate_format_task_with_an_image(tmp_path: Path,
                                                     host_service: tuple[str, int]) -> None:
    suite = tmp_path / "suite"
    write_task(suite, "hello", toml=f'[environment]\nimage = "{IMAGE}"\n')
    # a task granted NET_RAW keeps it for its own phases, never for the agent's install
    cfg = _config(tmp_path, suite, install_script(*host_service, sleep=0))
    cfg.write_text(cfg.read_text() + 'net_raw = ["hello"]\n')
    out = tmp_path / "r.json"
    p = gate("run", "--config", cfg, "--sim", "-k", "2", "-j", "2", "-o", out,
             timeout=300, cwd=tmp_path)
    assert p.returncode in (0, 1), p.stderr
    runs = json.loads(out.read_text())["runs"]
    statuses = [r["status"] for r in runs]  # the simulated model may fail a run
    assert "passed" in statuses and "error" not in statuses, runs
    assert len({ln for r in runs for ln in _stderr_lines(r, "NONCE ")}) == 1
    assert _installs_left() == [] and ours() == []


@pytest.mark.slow
@pytest.mark.parametrize(("script", "said"), [
    (None, "agent.install: {dir}/agent/install.sh: install script not found"),
    ("", "agent.install: {dir}/agent/install.sh is empty"),
])
def test_an_unreadable_install_script_is_exit_2_naming_file_and_field(
        tmp_path: Path, script: str | None, said: str) -> None:
    write_task(tmp_path / "suite", "hello", toml=f'[environment]\nimage = "{IMAGE}"\n')
    cfg = _config(tmp_path, tmp_path / "suite", "true\n")
    if script is None:
        (tmp_path / "agent" / "install.sh").unlink()
    else:
        (tmp_path / "agent" / "install.sh").write_text(script)
    p = gate("run", "--config", cfg, "--sim", "-k", "1", "-o", tmp_path / "r.json",
             cwd=tmp_path)
    assert p.returncode == 2 and "Traceback" not in p.stderr, p.stderr
    assert p.stderr.strip() == f"gate: error: {cfg}: {said.format(dir=tmp_path)}"


@pytest.mark.slow
def test_a_task_on_the_host_is_refused_an_install(tmp_path: Path) -> None:
    write_task(tmp_path / "suite", "hello")
    write_task(tmp_path / "suite", "boxed", toml=f'[environment]\nimage = "{IMAGE}"\n')
    cfg = _config(tmp_path, tmp_path / "suite", "true\n").read_text()
    (tmp_path / "gate.toml").write_text(cfg.replace('sandbox = "docker"', 'sandbox = "local"'))
    p = gate("run", "--config", tmp_path / "gate.toml", "--sim", "-k", "1", "--task", "hello",
             "-o", tmp_path / "r.json", cwd=tmp_path)
    assert p.returncode == 2, p.stderr
    assert ("hello: [agent] install needs a container: the local sandbox runs on the host"
            in p.stderr), p.stderr


# ----- Claude Code, installed from the npm registry by the documented script -----------------

REPO = Path(__file__).resolve().parents[2]
CLAUDE_INSTALL = REPO / "docs" / "claude-code" / "install.sh"
REAL_SAMPLE = REPO / "tests" / "fixtures" / "harbor_real"
REAL_TASK = "cookbook-simple-task"
REAL_BASE = "gate-harbor-standin/ubuntu:24.04"


def _migration_guide_command() -> str:
    """The Claude Code line of docs/harbor-migration.md's gate.toml, as written there."""
    import re

    text = (REPO / "docs" / "harbor-migration.md").read_text()
    m = re.search(r"^command = '(.*claude .*)'$", text, re.MULTILINE)
    assert m, "docs/harbor-migration.md has no Claude Code command line"
    return m.group(1)


def _registry_from_a_container() -> tuple[str, str]:
    """npm's registry as this host's npm has it, and the CA file the host trusts for it
    (``NODE_EXTRA_CA_CERTS``, else none), when a container on the default bridge reaches
    it; else the test skips saying why (a host that reaches it only itself)."""
    import os
    import shutil

    npm = shutil.which("npm")
    if npm is None:
        pytest.skip("no npm on this host to say which registry to install Claude Code from")
    registry = subprocess.run([npm, "config", "get", "registry"], capture_output=True,
                              text=True).stdout.strip().rstrip("/")
    ca = os.environ.get("NODE_EXTRA_CA_CERTS", "")
    ca_text = Path(ca).read_text() if ca and Path(ca).is_file() else ""
    probe = ("import ssl,sys,urllib.request as u; c=ssl.create_default_context(); "
             "ca=sys.stdin.read(); ca and c.load_verify_locations(cadata=ca); "
             "print(u.urlopen(sys.argv[1]+'/@anthropic-ai%2fclaude-code',timeout=20,"
             "context=c).status)")
    p = subprocess.run(["docker", "run", "-i", "--rm", IMAGE, "python3", "-c", probe, registry],
                       input=ca_text, capture_output=True, text=True, timeout=120)
    if p.returncode != 0 or p.stdout.strip() != "200":
        tail = (p.stderr.strip().splitlines() or ["?"])[-1][:200]
        pytest.skip(f"a container on the default bridge does not reach npm's registry: {tail}")
    return registry, ca_text


@pytest.mark.docker
@pytest.mark.slow
@pytest.mark.claude_code
@in_docker
def test_claude_code_installed_by_the_documented_script_solves_a_harbor_task(
        tmp_path: Path) -> None:
    registry, ca = _registry_from_a_container()
    # this host's egress: its registry and the CA it trusts (a self-hosted runner's TLS proxy
    # is the same), then the documented script as it is
    prefix = f"export NPM_CONFIG_REGISTRY={registry}\n"
    if ca:
        prefix += ("mkdir -p /usr/local/share/gate-test && cat > "
                   f"/usr/local/share/gate-test/ca.crt <<'CA'\n{ca.strip()}\nCA\n"
                   "export NODE_EXTRA_CA_CERTS=/usr/local/share/gate-test/ca.crt\n")
    script = CLAUDE_INSTALL.read_text().replace("set -eu\n", "set -eu\n" + prefix, 1)
    import shutil

    from gate.core.tasks import load_suite
    from gate.sim import decide_outcome

    if why := standins_problem():  # REAL_BASE is a stand-in: built here when missing
        pytest.fail(why) if os.environ.get("GATE_REQUIRE_DOCKER") == "1" else pytest.skip(why)
    suite = tmp_path / "suite"
    # a real public Harbor task, unchanged but for its FROM (tests/fixtures/harbor_real): its
    # [agent] timeout_sec is 120 s, the install is not in it
    shutil.copytree(REAL_SAMPLE / REAL_TASK, suite / REAL_TASK)
    # a gate-format task too: its commands run as an unprivileged user, read-only root; its
    # image is the Harbor task's (the same Dockerfile, built from the same context), so the
    # job installs Claude Code once for both tasks: npm's install is most of this test's time
    dockerfile = (suite / REAL_TASK / "environment" / "Dockerfile").read_text()
    write_task(suite, "hello", toml='[environment]\ndockerfile = "environment/Dockerfile"\n',
               extra={"environment/Dockerfile": dockerfile})
    # a seed under which the simulated model solves every run's first conversation
    tasks = load_suite(suite).tasks
    seed = next(s for s in range(1000) if all(
        decide_outcome(s, "claude-sonnet-5-5", t.id, t.difficulty, r) == "solve"
        for t in tasks for r in (0,)))
    (tmp_path / "install.sh").write_text(script)
    cfg = tmp_path / "gate.toml"
    command = json.dumps(_migration_guide_command())
    cfg.write_text(f"[agent]\nkind = \"command\"\ncommand = {command}"
                   f"\ninstall = \"install.sh\"\ninstall_timeout_sec = 1200\n"
                   f'[suite]\ntasks = "{suite}"\nsandbox = "docker"\n')
    out = tmp_path / "r.json"
    p = gate("run", "--config", cfg, "--sim", "--seed", str(seed), "-k", "1", "-j", "1",
             "-o", out, timeout=1800, cwd=tmp_path)
    runs = json.loads(out.read_text())["runs"] if out.exists() else []
    assert [r["status"] for r in runs] == ["passed"] * 2, (p.stderr[-3000:], runs)
    assert [r["score"] for r in runs if r["task"] == REAL_TASK] == [{"reward": 1.0}]
    # the image's first run waited for its install; every other run, of either task, reused it
    waited = sorted(r["install_s"] for r in runs)
    assert waited[-1] > 10 and all(w < 5 for w in waited[:-1]), runs
    # (that a run's duration leaves out its install's wait is checked, without a wall-clock
    # bound that a loaded machine breaks, by the install test above)
    assert _installs_left() == [] and ours() == []


@pytest.mark.docker
@pytest.mark.slow
@in_docker
def test_the_install_of_a_gate_that_died_goes_with_the_next_gates_start(
        tmp_path: Path, host_service: tuple[str, int]) -> None:
    import os
    import signal
    import sys
    import time

    from tests.helpers.docker import launch

    suite = tmp_path / "suite"
    harbor_task(suite, "count-a")
    cfg = _config(tmp_path, suite, install_script(*host_service, sleep=0))
    cfg.write_text(cfg.read_text().replace(json.dumps(COMMAND), json.dumps("sleep 120")))
    proc = launch([sys.executable, "-m", "gate", "run", "--config", str(cfg), "--sim", "-k",
                   "1", "-o", str(tmp_path / "dead.json")], cwd=tmp_path,
                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                  env={**os.environ})
    try:
        deadline = time.monotonic() + 120
        while not _installs_left() and time.monotonic() < deadline:
            time.sleep(0.5)
        assert _installs_left(), "the install was never committed"
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    assert _installs_left()  # a gate killed mid-job leaves its install behind
    cfg.write_text(cfg.read_text().replace(json.dumps("sleep 120"), json.dumps("true")))
    gate("run", "--config", cfg, "--sim", "-k", "1", "-o", tmp_path / "r.json", cwd=tmp_path,
         timeout=300)
    assert _installs_left() == [] and ours() == []


@pytest.mark.docker
@pytest.mark.slow
@in_docker
def test_an_install_past_its_own_timeout_is_stopped_as_infra(tmp_path: Path) -> None:
    """A registry that never answers: the install's own timeout, not the agent's, ends it."""
    suite = tmp_path / "suite"
    harbor_task(suite, "count-a")
    cfg = _config(tmp_path, suite, "echo waiting for the registry\nsleep 300\n",
                  extra="install_timeout_sec = 3\n")
    out = tmp_path / "r.json"
    p = gate("run", "--config", cfg, "--sim", "-k", "1", "-o", out, timeout=120, cwd=tmp_path)
    assert p.returncode == 3, p.stderr
    (run,) = json.loads(out.read_text())["runs"]
    assert run["reason"] == ("infra: the agent's install ([agent] install) took longer than "
                             "install_timeout_sec (3 s): stopped; its output ends:\n"
                             "waiting for the registry"), run["reason"]
    assert _installs_left() == [] and ours() == []


# ----- the install layer never judges the agent ----------------------------------------------

#: an install that wraps the image's bash: a command naming verify.sh (or setup.sh) exits 0,
#: any other goes to the real bash. Every gate-format command is ``bash -c ...``, so in a
#: container of the installed image the task's verdict would be the wrapper's
WRAP_BASH = """#!/bin/sh
set -e
mv /usr/bin/bash /usr/bin/bash.real
cat > /usr/bin/bash <<'WRAP'
#!/bin/sh
case "$*" in *verify.sh*|*setup.sh*) exit 0;; esac
exec /usr/bin/bash.real "$@"
WRAP
chmod 755 /usr/bin/bash
"""
#: a setup that leaves what verify.sh checks, so a setup.sh the wrapper skipped fails it too
JUDGED_SETUP = "echo expected > .setup-ran\n"
JUDGED_VERIFY = "set -euo pipefail\ngrep -qx expected .setup-ran\ngrep -qx hi hello.txt\n"


@pytest.mark.docker
@pytest.mark.slow
@in_docker
def test_an_install_that_wraps_bash_never_judges_the_agent(tmp_path: Path) -> None:
    """setup.sh and verify.sh run from the task's own image, never the installed one: a
    do-nothing agent whose install wraps bash to pass them fails, and ``gate compare``
    against a baseline where the agent did the work says Regression, exit 1 (on the
    installed image: 6/6 passed, "No regression", exit 0)."""
    suite = tmp_path / "suite"
    write_task(suite, "judged", toml=f'[environment]\nimage = "{IMAGE}"\n',
               setup=JUDGED_SETUP, verify=JUDGED_VERIFY)
    base_cfg = tmp_path / "base.toml"
    base_cfg.write_text('[agent]\nkind = "command"\ncommand = "echo hi > hello.txt"\n'
                        f'[suite]\ntasks = "{suite}"\nsandbox = "docker"\n')
    base = tmp_path / "base.json"
    p = gate("run", "--config", base_cfg, "--sim", "-k", "6", "-j", "2", "-o", base,
             timeout=600, cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert {r["status"] for r in json.loads(base.read_text())["runs"]} == {"passed"}
    cfg = _config(tmp_path, suite, WRAP_BASH)
    cfg.write_text(cfg.read_text().replace(json.dumps(COMMAND), json.dumps("true")))
    out = tmp_path / "wrapped.json"
    p = gate("run", "--config", cfg, "--sim", "-k", "6", "-j", "2", "-o", out,
             timeout=600, cwd=tmp_path)
    runs = json.loads(out.read_text())["runs"]
    assert [r["status"] for r in runs] == ["failed"] * 6, (p.stderr, runs)
    p = gate("compare", base, out, cwd=tmp_path)
    assert p.returncode == 1 and p.stdout.startswith("Regression: "), p.stdout + p.stderr
    assert _installs_left() == [] and ours() == []
