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
from tests.helpers.process import gate

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


# ----- UDP to the bridge's broadcast, 255.255.255.255 and a multicast group ------------------

UDP_PROBE = r'''
import socket, sys
port = int(sys.argv[1])
for target in sys.argv[2:]:
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_BROADCAST, 1)
    s.settimeout(1.5)
    try:
        s.sendto(b"knock", (target, port))
        data, peer = s.recvfrom(100)
        print(f"udp-reply {target} from {peer[0]}: {data!r}")
    except OSError as exc:
        print(f"udp-no-reply {target}: {exc}")
'''


class UdpEcho:
    """A UDP echo service on the host's 0.0.0.0 (as the attacker's scenario has it) that
    counts the datagrams it receives."""

    def __init__(self) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("0.0.0.0", 0))
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.received: list[str] = []
        self._stop = threading.Event()
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                data, peer = self.sock.recvfrom(100)
                self.received.append(peer[0])
                self.sock.sendto(b"echo:" + data, peer)
            except OSError:
                continue

    def close(self) -> None:
        self._stop.set()
        self.sock.close()


@pytest.fixture
def udp_echo(listener: Listener) -> Iterator[UdpEcho]:
    echo = UdpEcho()
    yield echo
    echo.close()


def _bridge_broadcast() -> str:
    p = subprocess.run(["docker", "network", "inspect", "bridge", "--format",
                        '{{range .IPAM.Config}}{{.Subnet}} {{end}}'],
                       capture_output=True, text=True, timeout=30)
    import ipaddress

    nets = [ipaddress.ip_network(w) for w in p.stdout.split() if "." in w]
    assert nets, f"no IPv4 subnet on Docker's bridge: {p.stdout!r}"
    return str(nets[0].broadcast_address)


def _harbor_suite(tmp_path: Path, name: str, *, solve: str,
                  dockerfile: str | None = None, extra: dict[str, str] | None = None) -> Path:
    """A Harbor-format task ``name`` (public agent phase: Harbor's default) whose oracle runs
    ``solve`` and writes /app/count.txt; returns the gate.toml running it in docker."""
    from tests.helpers.harbor import DOCKERFILE, harbor_task

    task = harbor_task(tmp_path / "suite", name, dockerfile=dockerfile or DOCKERFILE,
                       solve="#!/bin/bash\n" + solve + "\nwc -l < data.txt > count.txt\n")
    for rel, body in (extra or {}).items():
        (task / rel).write_text(body)
    cfg = tmp_path / "gate.toml"
    cfg.write_text(f'[suite]\ntasks = "{task.parent}"\nsandbox = "docker"\n')
    return cfg


def _native_suite(tmp_path: Path, name: str, *, solve: str, toml: str,
                  extra: dict[str, str] | None = None) -> Path:
    from tests.helpers.suites import write_task

    write_task(tmp_path / "suite", name, solve=solve + "\necho hi > hello.txt\n", toml=toml,
               extra=extra)
    cfg = tmp_path / "gate.toml"
    cfg.write_text(f'[suite]\ntasks = "{tmp_path / "suite"}"\nsandbox = "docker"\n')
    return cfg


def _oracle_run(tmp_path: Path, cfg: Path, name: str) -> str:
    """``gate run`` with the oracle (one run); what the run's transcript says."""
    out = tmp_path / "r.json"
    p = gate("run", "--config", cfg, "--agent", "oracle", "-k", "1", "-o", out, timeout=300)
    said = (tmp_path / "r.transcripts" / f"{name}-r0.jsonl").read_text()
    assert p.returncode == 0, p.stderr + said
    (run,) = json.loads(out.read_text())["runs"]
    assert run["status"] == "passed", run
    return said


@pytest.mark.docker
@pytest.mark.slow
@pytest.mark.parametrize("layout", ["docker", "harbor"])
def test_udp_to_broadcast_and_multicast_gets_no_answer_from_the_hosts_services(
        udp_echo: UdpEcho, tmp_path: Path, layout: str) -> None:
    """A host UDP service on 0.0.0.0 answers what reaches it: a task with network sends to the
    bridge's broadcast address, to 255.255.255.255 and to the all-hosts group 224.0.0.1
    (every interface of the host is in it), unprivileged, and must get no answer."""
    targets = [_bridge_broadcast(), "255.255.255.255", "224.0.0.1"]
    solve = f"python3 - {udp_echo.port} {' '.join(targets)} <<'EOF'\n{UDP_PROBE}\nEOF\n"
    if layout == "harbor":
        cfg = _harbor_suite(tmp_path, "udp", solve=solve)
    else:
        cfg = _native_suite(tmp_path, "udp", solve=solve,
                            toml=f'[environment]\nimage = "{IMAGE}"\nnetwork = true\n')
    said = _oracle_run(tmp_path, cfg, "udp")
    assert all(f"udp-no-reply {t}:" in said for t in targets), said
    assert "udp-reply" not in said, said
    assert udp_echo.received == [], said


# ----- nothing in a container runs before its guard -----------------------------------------

# the knock: bash's /dev/tcp from the very first instant (a Python one starts late enough to
# lose the race it is meant to show), every 20 ms for about four seconds; then a mark, which
# the oracle waits for (so the phase boundary never meets the knock still running)
KNOCK = ("while [ $SECONDS -lt 4 ]; do { : 3<>/dev/tcp/$1/$2; } 2>/dev/null && "
         "echo knock-reached; sleep 0.02; done; : > /tmp/knock.done\n")
WAIT_KNOCK = "while [ ! -e /tmp/knock.done ]; do sleep 0.2; done"


@pytest.mark.docker
@pytest.mark.slow
@pytest.mark.parametrize("layout", ["docker", "harbor"])
def test_an_images_entrypoint_does_not_reach_the_host_before_the_guard(
        listener: Listener, tmp_path: Path, layout: str) -> None:
    """The image's ENTRYPOINT runs first in every container: one that knocks on a host
    service (a listener on 0.0.0.0, through the bridge's address) from the very start, for
    about four seconds, reaches nothing — the container has no network until its guard is set."""
    bridge = _bridge_address()
    assert bridge, "no address of this machine on Docker's bridge"
    dockerfile = (f"FROM {IMAGE}\nWORKDIR /app\nRUN printf 'a\\nb\\nc\\n' > /app/data.txt\n"
                  "COPY knock.sh /opt/knock.sh\n"
                  f'ENTRYPOINT ["/bin/sh", "-c", "bash /opt/knock.sh {bridge} {listener.port} '
                  '& exec \\"$@\\"", "sh"]\n')
    if layout == "harbor":
        cfg = _harbor_suite(tmp_path, "knock", solve=WAIT_KNOCK, dockerfile=dockerfile,
                            extra={"environment/knock.sh": KNOCK})
    else:
        cfg = _native_suite(tmp_path, "knock", solve=WAIT_KNOCK,
                            toml='[environment]\ndockerfile = "env/Dockerfile"\nnetwork = true\n',
                            extra={"env/Dockerfile": dockerfile, "env/knock.sh": KNOCK})
    _oracle_run(tmp_path, cfg, "knock")
    assert listener.accepted == 0


# ----- raw packets: NET_RAW dropped from Harbor's containers unless the suite grants it -----

RAW_AGENT = """#!/bin/bash
python3 - > /app/raw.txt <<'EOF'
import errno, socket
try:
    socket.socket(socket.AF_PACKET, socket.SOCK_RAW).close()
    print("opened")
except OSError as exc:
    print(errno.errorcode.get(exc.errno, exc.errno))
EOF
echo "raw socket: $(cat /app/raw.txt) as $(id -u)"
"""
RAW_TEST = """#!/bin/bash
if grep -qx opened /app/raw.txt; then echo 1; else echo 0; fi > /logs/verifier/reward.txt
"""


@pytest.mark.docker
@pytest.mark.slow
@pytest.mark.usefixtures("engine")
def test_a_harbor_agent_cannot_open_a_packet_socket_unless_the_suite_grants_it(
        tmp_path: Path) -> None:
    """Root in a Harbor container, the agent would hand-build frames on a packet socket past
    the namespace's REJECT rules: NET_RAW is dropped (EPERM), and ``[suite].net_raw``, the
    base branch's list of tasks that need raw sockets, gives it back, said in the comment."""
    from tests.helpers.harbor import DOCKERFILE, harbor_task

    suite = tmp_path / "suite"
    task = harbor_task(suite, "raw", test=RAW_TEST,
                       dockerfile=DOCKERFILE + "COPY agent.sh /opt/agent.sh\n")
    (task / "environment" / "agent.sh").write_text(RAW_AGENT)
    runs = {}
    for name, grant in (("default", ""), ("granted", 'net_raw = ["raw"]\n')):
        cfg = tmp_path / f"{name}.toml"
        cfg.write_text(f'[agent]\nkind = "command"\ncommand = "bash /opt/agent.sh"\n'
                       f'[suite]\ntasks = "{suite}"\n{grant}')
        out = tmp_path / f"{name}.json"
        p = gate("run", "--config", cfg, "-k", "1", "-o", out, "--sim")
        assert p.returncode == 0, p.stderr
        said = (tmp_path / f"{name}.transcripts" / "raw-r0.jsonl").read_text()
        (run,) = json.loads(out.read_text())["runs"]
        runs[name] = (run["status"], said)
    assert runs["default"][0] == "failed" and "raw socket: EPERM as 0" in runs["default"][1]
    assert runs["granted"][0] == "passed" and "raw socket: opened as 0" in runs["granted"][1]
    p = gate("compare", tmp_path / "default.json", tmp_path / "granted.json", "--format",
             "markdown")
    line = "raw sockets (NET_RAW) kept by [suite].net_raw for: raw"
    assert line in p.stdout, p.stdout
    html = tmp_path / "granted.html"
    p = gate("report", tmp_path / "granted.json", "--html", html)
    assert p.returncode == 0, p.stderr
    assert line in html.read_text()


@pytest.mark.docker
@pytest.mark.slow
@pytest.mark.usefixtures("engine")
def test_a_pull_request_cannot_grant_itself_raw_sockets(tmp_path: Path) -> None:
    """``[suite]`` measures, so on a PR it is the base branch's: a PR that adds its task to
    ``net_raw`` is told of the change, and its agent still gets EPERM (``gate run
    --base-ref``: the yardstick ``gate ci`` opens on a pull request)."""
    from tests.helpers.harbor import DOCKERFILE, harbor_task

    repo = tmp_path / "repo"
    task = harbor_task(repo / "tasks", "raw", test=RAW_TEST,
                       dockerfile=DOCKERFILE + "COPY agent.sh /opt/agent.sh\n")
    (task / "environment" / "agent.sh").write_text(RAW_AGENT)
    agent = '[agent]\nkind = "command"\ncommand = "bash /opt/agent.sh"\n'
    (repo / "gate.toml").write_text(agent + '[suite]\ntasks = "tasks"\n')
    for args in (["init", "-q", "-b", "main"], ["add", "-A"],
                 ["-c", "user.email=t@example.invalid", "-c", "user.name=t", "commit", "-q",
                  "-m", "base"]):
        subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True)
    (repo / "gate.toml").write_text(agent + '[suite]\ntasks = "tasks"\nnet_raw = ["raw"]\n')
    out = tmp_path / "pr.json"
    p = gate("run", "--config", repo / "gate.toml", "--base-ref", "main", "-k", "1", "-o", out,
             "--sim", cwd=repo)
    assert p.returncode == 0, p.stderr
    assert "[suite].net_raw" in p.stdout + p.stderr, p.stdout + p.stderr
    (run,) = json.loads(out.read_text())["runs"]
    said = (tmp_path / "pr.transcripts" / "raw-r0.jsonl").read_text()
    assert run["status"] == "failed" and "raw socket: EPERM as 0" in said, said
    assert not json.loads(out.read_text())["suite"]["tasks"]["raw"].get("net_raw")


FRAME = r'''
import socket, struct, sys
mac, host, port = bytes.fromhex(sys.argv[1].replace(":", "")), sys.argv[2], int(sys.argv[3])
probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
probe.connect((host, port))  # a route lookup only: nothing is sent
src = probe.getsockname()[0]
own = bytes.fromhex(open("/sys/class/net/eth0/address").read().strip().replace(":", ""))
payload = b"hand-built"
udp = struct.pack("!HHHH", 40000, port, 8 + len(payload), 0) + payload
ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), 0, 0, 64, 17, 0,
                 socket.inet_aton(src), socket.inet_aton(host))
words = sum(struct.unpack("!10H", ip))
while words >> 16:
    words = (words & 0xFFFF) + (words >> 16)
ip = ip[:10] + struct.pack("!H", ~words & 0xFFFF) + ip[12:]
try:
    raw = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
except OSError as exc:
    print(f"frame-not-sent: {exc}")
    sys.exit(0)
raw.bind(("eth0", 0))
raw.send(mac + own + b"\x08\x00" + ip + udp)
print("frame-sent")
'''


@pytest.mark.docker
@pytest.mark.slow
@pytest.mark.parametrize("granted", [False, True])
def test_a_hand_built_frame_reaches_a_host_service_only_with_net_raw(
        udp_echo: UdpEcho, tmp_path: Path, granted: bool) -> None:
    """What NET_RAW would give the agent: a frame built by hand on a packet socket (Ethernet,
    IPv4, UDP to the host's bridge address) leaves through no ``OUTPUT`` chain, so the
    guard's REJECT rules never see it and a host UDP service on 0.0.0.0 receives it. Without
    the grant the socket cannot be opened and nothing arrives; with it (``[suite].net_raw``)
    it does — the exception the suite's owner accepts for that task."""
    bridge = _bridge_address()
    assert bridge, "no address of this machine on Docker's bridge"
    dev = subprocess.run(["docker", "network", "inspect", "bridge", "--format",
                          '{{index .Options "com.docker.network.bridge.name"}}'],
                         capture_output=True, text=True, timeout=30).stdout.strip()
    mac = Path(f"/sys/class/net/{dev}/address").read_text().strip()
    cfg = _harbor_suite(tmp_path, "frame", solve=f"python3 - {mac} {bridge} {udp_echo.port} "
                                                  f"<<'EOF'\n{FRAME}\nEOF\nsleep 1\n")
    if granted:
        cfg.write_text(cfg.read_text() + 'net_raw = ["frame"]\n')
    said = _oracle_run(tmp_path, cfg, "frame")
    if granted:
        assert "frame-sent" in said and udp_echo.received != [], said
    else:
        assert "frame-not-sent: [Errno 1] Operation not permitted" in said, said
        assert udp_echo.received == [], said


@pytest.mark.docker
@pytest.mark.usefixtures("engine")
def test_the_guard_is_set_on_no_network_and_covers_ipv6_where_the_host_has_it() -> None:
    """A container detached before it starts has loopback only when the guard goes in; the
    rules name the host's IPv6 addresses and ff00::/8 (ICMPv6 aside) whenever the host has
    IPv6, though the namespace has none yet, and they stay once the bridge is attached."""
    import docker

    from gate.sandbox._netguard import (
        V4_ALWAYS,
        V6_ALWAYS,
        attach,
        detach,
        guard_container,
        host_addresses,
    )

    client = docker.from_env()
    container = client.containers.create(IMAGE, ["sleep", "60"], network_mode="bridge",
                                         labels={"agent-gate-test": "netguard"})
    try:
        detach(container)
        container.start()
        routes = container.exec_run(["cat", "/proc/net/route"]).output.decode()
        assert len(routes.strip().splitlines()) == 1, routes  # the header: no route at all
        before = {a for a in host_addresses() if ":" in a}
        guard_container(container)
        # the addresses the host had both before and after the guard went in: another
        # engine's networks (a shared CI machine) may add or drop theirs meanwhile
        v6 = sorted(before & {a for a in host_addresses() if ":" in a})
        attach(container)
        pid = str(client.api.inspect_container(container.id)["State"]["Pid"])
        rules = {tool: subprocess.run(["nsenter", "-t", pid, "-n", tool, "-S", "OUTPUT"],
                                      capture_output=True, text=True, check=True).stdout
                 for tool in ("iptables", "ip6tables")}
        assert all(f"{spec} -j REJECT" in rules["iptables"] for spec in V4_ALWAYS)
        if v6:  # the host's link-local addresses made later (its side of each container's
            # link) are inside fe80::/10
            assert all(f"{spec} -j REJECT" in rules["ip6tables"] for spec in V6_ALWAYS)
            assert all(f"-d {a}/128 -j REJECT" in rules["ip6tables"] for a in v6)
        routes = container.exec_run(["cat", "/proc/net/route"]).output.decode()
        assert "00000000" in routes  # attached: a default route now
    finally:
        container.remove(force=True)
        client.close()
