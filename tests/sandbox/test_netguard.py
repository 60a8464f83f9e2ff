"""A container with network reaches the internet's side of the bridge, never the host's services.

Through the real CLI and a real Docker engine: a task with ``[environment] network = true``
tries (three attempts, two seconds each) to connect to a listener this test starts on the
host's 0.0.0.0, through this machine's own Docker bridge address; the listener counts what
reaches it. Nothing is aimed anywhere else. Marked ``docker``: skipped with the reason where no
engine or base image is present.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.helpers.docker import IMAGE, engine_problem

PROBE = r'''
import socket, sys
host, port = sys.argv[1], int(sys.argv[2])
route = open("/proc/net/route").read().splitlines()[1:]
print("default-route" if any(l.split()[1] == "00000000" for l in route) else "no-default-route")
for attempt in range(3):
    try:
        socket.create_connection((host, port), timeout=2).close()
        print("reached-host")
        break
    except OSError as exc:
        print(f"blocked: {exc}")
'''


def _bridge_address() -> str | None:
    """This machine's own address on Docker's default bridge (the containers' gateway)."""
    p = subprocess.run(["docker", "network", "inspect", "bridge", "--format",
                        '{{range .IPAM.Config}}{{.Gateway}} {{end}}'
                        '{{index .Options "com.docker.network.bridge.name"}}'],
                       capture_output=True, text=True, timeout=30)
    words = p.stdout.split()
    gateways = [w for w in words[:-1] if w.count(".") == 3]
    if gateways:
        return gateways[0]
    if not words:
        return None
    addr = subprocess.run(["ip", "-4", "-o", "addr", "show", "dev", words[-1]],
                          capture_output=True, text=True, timeout=30).stdout.split()
    return addr[3].split("/")[0] if len(addr) > 3 else None


class Listener:
    """A TCP listener on the host's 0.0.0.0 that counts the connections it accepts."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("0.0.0.0", 0))
        self.sock.listen(8)
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.accepted = 0
        self._stop = threading.Event()
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            self.accepted += 1
            conn.close()

    def close(self) -> None:
        self._stop.set()
        self.sock.close()


@pytest.fixture
def listener() -> Iterator[Listener]:
    why = engine_problem()
    if why:
        if os.environ.get("GATE_REQUIRE_DOCKER") == "1":
            pytest.fail(why)
        pytest.skip(why)
    lst = Listener()
    yield lst
    lst.close()


@pytest.mark.docker
@pytest.mark.slow
def test_a_container_with_network_does_not_reach_the_hosts_services(
        listener: Listener, make_task: Callable[..., Path], suite_dir: Path,
        tmp_path: Path) -> None:
    bridge = _bridge_address()
    assert bridge, "no address of this machine on Docker's bridge"
    make_task("net", toml=f'[environment]\nimage = "{IMAGE}"\nnetwork = true\n',
              solve=f"python3 - {bridge} {listener.port} <<'EOF'\n{PROBE}\nEOF\n"
                    "echo hi > hello.txt\n")
    cfg = tmp_path / "gate.toml"
    cfg.write_text(f'[suite]\ntasks = "{suite_dir}"\nsandbox = "docker"\n')
    out = tmp_path / "r.json"
    p = subprocess.run([sys.executable, "-m", "gate", "run", "--config", str(cfg), "--agent",
                        "oracle", "-k", "1", "-o", str(out)], capture_output=True, text=True,
                       timeout=240)
    assert p.returncode == 0, p.stderr
    events = [json.loads(line) for line in
              (tmp_path / "r.transcripts" / "net-r0.jsonl").read_text().splitlines()]
    said = "\n".join(json.dumps(e) for e in events)
    assert "default-route" in said and "no-default-route" not in said  # it had a network
    assert listener.accepted == 0, said
    assert "reached-host" not in said
    assert "blocked" in said


def test_without_the_privilege_to_guard_a_command_with_network_is_refused(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Where the gate can neither enter the namespace as root nor through password-less sudo,
    the exposure is refused with the reason, never accepted in silence."""
    from gate.sandbox import SandboxError
    from gate.sandbox._netguard import NetGuard

    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    monkeypatch.setenv("PATH", str(tmp_path))  # no sudo (nor nsenter, nor ip) to be found
    guard = NetGuard(tmp_path, "/run/gate-io")
    with pytest.raises(SandboxError, match="would reach this host's own services"):
        guard.hold(["bash", "-c", "true"])


@pytest.mark.docker
@pytest.mark.slow
def test_a_harbor_phase_with_network_does_not_reach_the_hosts_services(
        listener: Listener, tmp_path: Path) -> None:
    """Harbor's agent phase is ``public`` by default: its container is on the bridge, and the
    guard set once at its start keeps it off the host's services (a listener this test starts
    on 0.0.0.0, probed through this machine's own bridge address)."""
    bridge = _bridge_address()
    assert bridge, "no address of this machine on Docker's bridge"
    task = tmp_path / "suite" / "net"
    files = {
        "instruction.md": "Write hi into /app/hello.txt.\n",
        "task.toml": 'version = "1.0"\n[agent]\ntimeout_sec = 120\n'
                     '[verifier]\ntimeout_sec = 60\n',
        "environment/Dockerfile": f"FROM {IMAGE}\nWORKDIR /app\n",
        "solution/solve.sh": f"#!/bin/bash\npython3 - {bridge} {listener.port} <<'EOF'\n"
                             f"{PROBE}\nEOF\necho hi > /app/hello.txt\n",
        "tests/test.sh": "#!/bin/bash\nmkdir -p /logs/verifier\n"
                         "if grep -qx hi /app/hello.txt; then echo 1; else echo 0; fi "
                         "> /logs/verifier/reward.txt\n",
    }
    for rel, body in files.items():
        (task / rel).parent.mkdir(parents=True, exist_ok=True)
        (task / rel).write_text(body)
    cfg = tmp_path / "gate.toml"
    cfg.write_text(f'[suite]\ntasks = "{task.parent}"\nsandbox = "docker"\n')
    out = tmp_path / "r.json"
    p = subprocess.run([sys.executable, "-m", "gate", "run", "--config", str(cfg), "--agent",
                        "oracle", "-k", "1", "-o", str(out)], capture_output=True, text=True,
                       timeout=300)
    said = (tmp_path / "r.transcripts" / "net-r0.jsonl").read_text()
    assert p.returncode == 0, p.stderr + said
    assert "default-route" in said and "no-default-route" not in said  # it had a network
    assert listener.accepted == 0, said
    assert "reached-host" not in said and "blocked" in said
