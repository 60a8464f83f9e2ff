"""A public phase never reaches a private network but its resolvers, its proxies and what
``[suite].allow_private`` names.

The rule is a pure function (:func:`gate.sandbox._netguard.rules`), checked as a table: the
chain it returns is walked first match wins, as the kernel walks it. Through the real CLI and a
real Docker engine, a task with network (the docker sandbox's per-command container and a
Harbor task's long-lived one) tries to connect to a listener this test starts on a private
address that is none of this host's: the far end of a veth pair in a network namespace of its
own (root only; removed after). Nothing is aimed anywhere else.
"""

from __future__ import annotations

import ipaddress
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner

from gate.cli import main
from gate.sandbox._netguard import Reach, host_resolvers, rules, runner_proxies
from tests.helpers.docker import IMAGE, engine_problem
from tests.helpers.process import gate

# ----- the rule, as a table ---------------------------------------------------------------

HOSTS = ("192.0.2.2", "172.17.0.1", "fd00::2", "fe80::1:2")
REACH = Reach(resolvers=("10.255.255.53", "8.8.8.8", "172.17.0.1", "fd00::53"),
              proxies=(("10.1.2.3", 3128), ("192.168.5.5", 8080), ("fd00::31", 3128)),
              allowed=("10.20.0.0/16", "fd12:3456::/32"))


def verdict(chain: list[str], dest: str, proto: str, port: int, out: str = "eth0") -> str:
    """What ``chain`` (rules as ``iptables -S`` prints them) does with a unicast packet that
    leaves through ``out``: the first rule that matches decides; none: the policy, ACCEPT."""
    for rule in chain:
        w = rule.split()
        if "-o" in w and w[w.index("-o") + 1] != out:
            continue
        if "addrtype" in w:  # broadcast by address type: no unicast destination is one
            continue
        if "-d" in w and ipaddress.ip_address(dest) not in ipaddress.ip_network(
                w[w.index("-d") + 1]):
            continue
        if "!" in w and w[w.index("!") + 2] == proto:
            continue
        if "-p" in w and "!" not in w and w[w.index("-p") + 1] != proto:
            continue
        if "--dport" in w and int(w[w.index("--dport") + 1]) != port:
            continue
        return "accept" if w[-1] == "ACCEPT" else "reject"
    return "accept"


@pytest.mark.parametrize(("dest", "proto", "port", "expected"), [
    # RFC 1918, CGNAT: rejected, their edges exactly
    ("10.1.1.1", "tcp", 80, "reject"),
    ("172.16.0.5", "tcp", 80, "reject"),
    ("172.31.255.254", "udp", 161, "reject"),
    ("172.32.0.1", "tcp", 80, "accept"),
    ("172.17.0.3", "tcp", 8080, "reject"),  # another container on Docker's default bridge
    ("192.168.1.1", "tcp", 22, "reject"),
    ("100.64.0.1", "tcp", 80, "reject"),
    ("100.127.255.254", "tcp", 80, "reject"),
    ("100.128.0.1", "tcp", 80, "accept"),
    ("203.0.113.80", "tcp", 443, "accept"),  # a public address (the registries' here)
    ("8.8.8.8", "udp", 53, "accept"),
    # link-local (cloud metadata) and the host's own addresses: rejected whatever is allowed
    ("169.254.169.254", "tcp", 80, "reject"),
    ("192.0.2.2", "tcp", 443, "reject"),
    ("172.17.0.1", "udp", 53, "reject"),  # the host's own, though its resolv.conf names it
    # the host's resolver in a private range: DNS only
    ("10.255.255.53", "udp", 53, "accept"),
    ("10.255.255.53", "tcp", 53, "accept"),
    ("10.255.255.53", "tcp", 80, "reject"),
    # the runner's proxies: their port only
    ("10.1.2.3", "tcp", 3128, "accept"),
    ("10.1.2.3", "tcp", 22, "reject"),
    ("192.168.5.5", "tcp", 8080, "accept"),
    ("192.168.5.5", "udp", 8080, "reject"),
    # [suite].allow_private
    ("10.20.3.4", "tcp", 5432, "accept"),
    ("10.21.0.1", "tcp", 5432, "reject"),
    # IPv6: unique local addresses rejected, the same exceptions
    ("fc00::1", "tcp", 80, "reject"),
    ("fdff:ffff::1", "tcp", 80, "reject"),
    ("fd00::2", "tcp", 443, "reject"),  # the host's
    ("fd00::53", "udp", 53, "accept"),
    ("fd00::53", "tcp", 80, "reject"),
    ("fd00::31", "tcp", 3128, "accept"),
    ("fd12:3456::1", "tcp", 80, "accept"),
    ("fd12:3457::1", "tcp", 80, "reject"),
    ("2001:db8::1", "tcp", 443, "accept"),
    ("fe80::9", "tcp", 80, "reject"),
    ("fe80::9", "ipv6-icmp", 0, "accept"),  # neighbour discovery
    ("ff02::1", "udp", 5353, "reject"),
])
def test_the_guards_chain_as_a_table(dest: str, proto: str, port: int, expected: str) -> None:
    chain = rules(HOSTS, REACH, v6=":" in dest)
    assert verdict(chain, dest, proto, port) == expected, chain


def test_the_namespaces_own_traffic_is_never_rejected() -> None:
    """The ICMP error a REJECT answers a refused connect with goes to the container's own
    address (private, on Docker's bridge) through lo: rejected in turn, the connect would hang
    until its timeout instead of failing at once."""
    for own in ("172.17.0.2", "10.0.3.4", "fd00:1::2"):
        chain = rules(HOSTS, REACH, v6=":" in own)
        assert verdict(chain, own, "ipv6-icmp" if ":" in own else "icmp", 0, out="lo") == \
            "accept", chain
        assert verdict(chain, own, "tcp", 80, out="eth0") == "reject", chain


def test_without_exceptions_the_resolver_and_the_proxy_are_rejected_too() -> None:
    for dest, proto, port in (("10.255.255.53", "udp", 53), ("10.1.2.3", "tcp", 3128),
                              ("fd00::53", "udp", 53)):
        assert verdict(rules(HOSTS, Reach(), v6=":" in dest), dest, proto, port) == "reject"


def test_the_hosts_resolvers_come_from_its_resolv_confs_and_the_engines_dns(
        tmp_path: Path) -> None:
    (tmp_path / "resolv.conf").write_text("# nameserver 1.2.3.4\nsearch corp.example\n"
                                          "nameserver 127.0.0.53\noptions edns0\n")
    (tmp_path / "upstream.conf").write_text("nameserver 10.0.0.2\nnameserver fd00::53%eth0\n"
                                            "nameserver not-an-address\n")
    (tmp_path / "daemon.json").write_text(json.dumps({"dns": ["10.9.9.9", "10.0.0.2"]}))
    found = host_resolvers([tmp_path / "resolv.conf", tmp_path / "upstream.conf",
                            tmp_path / "missing"], tmp_path / "daemon.json")
    assert found == ("127.0.0.53", "10.0.0.2", "fd00::53", "10.9.9.9")
    assert host_resolvers([], tmp_path / "missing.json") == ()


def test_the_runners_proxies_are_their_address_and_port() -> None:
    env = {"HTTPS_PROXY": "http://user:pw@10.1.2.3:3128", "http_proxy": "10.1.2.4",
           "ALL_PROXY": "socks5h://127.0.0.1", "HTTP_PROXY": "http://[fd00::31]:8080/",
           "https_proxy": "http://10.1.2.5:notaport", "all_proxy": "",
           "NO_PROXY": "10.0.0.0/8"}
    assert runner_proxies(env) == (("fd00::31", 8080), ("10.1.2.3", 3128),
                                   ("127.0.0.1", 1080), ("10.1.2.4", 80))


# ----- [suite].allow_private: validated ----------------------------------------------------

@pytest.mark.parametrize(("value", "why"), [
    ("10.0.0.300/8", "is not a network in CIDR form"),
    ("10.0.0.1/8", "has host bits set"),
    ("8.8.8.0/24", "is not inside a private range"),
    ("169.254.0.0/16", "is not inside a private range"),
    ("fe80::/10", "is not inside a private range"),
    ("10.0.0.0/7", "is not inside a private range"),
])
def test_a_bad_allow_private_is_exit_2_naming_the_file_and_the_key(
        tmp_path: Path, value: str, why: str) -> None:
    cfg = tmp_path / "gate.toml"
    cfg.write_text(f'[suite]\ntasks = "tasks"\nallow_private = ["10.20.0.0/16", "{value}"]\n')
    res = CliRunner().invoke(main, ["run", "--config", str(cfg), "--sim", "-o",
                                    str(tmp_path / "r.json")])
    assert res.exit_code == 2, res.output
    (line,) = res.output.strip().splitlines()
    assert "gate.toml" in line and "suite.allow_private" in line and why in line, line
    assert "Traceback" not in res.output and not (tmp_path / "r.json").exists()


# ----- through the real container: a listener on a private address that is not the host's --

PROBE = r'''
import socket, sys
host, port = sys.argv[1], int(sys.argv[2])
for attempt in range(3):
    try:
        socket.create_connection((host, port), timeout=2).close()
        print("reached-private")
        break
    except OSError as exc:
        print(f"blocked: {exc}")
'''

SERVE = r'''
import socket, sys
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((sys.argv[1], 0))
s.listen(8)
print(s.getsockname()[1], flush=True)
while True:
    conn, _ = s.accept()
    with open(sys.argv[2], "a") as log:
        log.write("accepted\n")
    conn.close()
'''


@dataclass(frozen=True)
class Peer:
    """A TCP listener on ``address`` (a private address, in a network namespace of its own,
    reached through the host's routing as a LAN host is); ``log`` gets a line per accept."""

    address: str
    port: int
    network: str
    log: Path

    def accepted(self) -> int:
        return len(self.log.read_text().splitlines()) if self.log.exists() else 0


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, timeout=30)


@pytest.fixture
def private_peer(tmp_path: Path) -> Iterator[Peer]:
    why = engine_problem() or (None if os.geteuid() == 0 and shutil.which("ip") else
                               "needs root and ip to make a network namespace")
    if why:
        if os.environ.get("GATE_REQUIRE_DOCKER") == "1":
            pytest.fail(why)
        pytest.skip(why)
    pid = os.getpid()
    ns, near, far = f"gng{pid}", f"gng{pid}h", f"gng{pid}p"
    net = ipaddress.ip_network(f"10.213.{pid % 250}.0/30")
    here, there = str(net[1]), str(net[2])
    log = tmp_path / "peer.log"
    server = None
    try:
        _ip("netns", "add", ns)
        _ip("link", "add", near, "type", "veth", "peer", "name", far)
        _ip("link", "set", far, "netns", ns)
        _ip("addr", "add", f"{here}/30", "dev", near)
        _ip("link", "set", near, "up")
        for args in (("addr", "add", f"{there}/30", "dev", far), ("link", "set", far, "up"),
                     ("link", "set", "lo", "up"), ("route", "add", "default", "via", here)):
            _ip("netns", "exec", ns, "ip", *args)
        server = subprocess.Popen(["ip", "netns", "exec", ns, sys.executable, "-c", SERVE,
                                   there, str(log)], stdout=subprocess.PIPE, text=True)
        assert server.stdout is not None
        port = int(server.stdout.readline())
        yield Peer(there, port, str(net), log)
    finally:
        if server is not None:
            server.kill()
            server.wait(timeout=30)
        subprocess.run(["ip", "link", "del", near], capture_output=True, timeout=30)
        subprocess.run(["ip", "netns", "del", ns], capture_output=True, timeout=30)


def _suite(tmp_path: Path, layout: str, peer: Peer, allow: bool) -> Path:
    solve = f"python3 - {peer.address} {peer.port} <<'EOF'\n{PROBE}\nEOF\n"
    if layout == "harbor":  # Harbor's agent phase is public by default
        from tests.helpers.harbor import harbor_task

        task = harbor_task(tmp_path / "suite", "lan",
                           solve="#!/bin/bash\n" + solve + "wc -l < data.txt > count.txt\n")
        tasks = task.parent
    else:
        from tests.helpers.suites import write_task

        tasks = tmp_path / "suite"
        write_task(tasks, "lan", solve=solve + "echo hi > hello.txt\n",
                   toml=f'[environment]\nimage = "{IMAGE}"\nnetwork = true\n')
    cfg = tmp_path / "gate.toml"
    allowed = f'allow_private = ["{peer.network}"]\n' if allow else ""
    cfg.write_text(f'[suite]\ntasks = "{tasks}"\nsandbox = "docker"\n{allowed}')
    return cfg


@pytest.mark.docker
@pytest.mark.slow
@pytest.mark.parametrize("allow", [False, True], ids=["default", "allowed"])
@pytest.mark.parametrize("layout", ["docker", "harbor"])
def test_a_task_with_network_reaches_a_private_address_only_when_the_suite_allows_it(
        private_peer: Peer, tmp_path: Path, layout: str, allow: bool) -> None:
    cfg = _suite(tmp_path, layout, private_peer, allow)
    out = tmp_path / "r.json"
    p = gate("run", "--config", cfg, "--agent", "oracle", "-k", "1", "-o", out, timeout=300)
    said = (tmp_path / "r.transcripts" / "lan-r0.jsonl").read_text()
    assert p.returncode == 0, p.stderr + said
    (run,) = json.loads(out.read_text())["runs"]
    assert run["status"] == "passed", run
    time.sleep(0.2)  # the listener logs an accept it already made
    if allow:
        assert "reached-private" in said and private_peer.accepted() >= 1, said
    else:
        # refused at once (the REJECT's ICMP error reaches the prober), not left to time out
        assert "reached-private" not in said and "No route to host" in said, said
        assert private_peer.accepted() == 0, said


@pytest.mark.docker
@pytest.mark.slow
@pytest.mark.parametrize("allow", [False, True], ids=["default", "allowed"])
def test_the_agents_install_reaches_a_private_address_only_when_the_suite_allows_it(
        private_peer: Peer, tmp_path: Path, allow: bool) -> None:
    """``[agent] install`` runs as root with network (a public phase): it probes the listener
    and leaves what it saw in the image, which the agent's command then prints."""
    from tests.helpers.harbor import harbor_task

    suite = tmp_path / "suite"
    harbor_task(suite, "lan")
    (tmp_path / "install.sh").write_text(
        f"#!/bin/sh\npython3 - {private_peer.address} {private_peer.port} > /opt/probe.txt "
        f"<<'EOF'\n{PROBE}\nEOF\n")
    allowed = f'allow_private = ["{private_peer.network}"]\n' if allow else ""
    cfg = tmp_path / "gate.toml"
    cfg.write_text('[agent]\nkind = "command"\ncommand = "cat /opt/probe.txt >&2"\n'
                   f'install = "install.sh"\n[suite]\ntasks = "{suite}"\n{allowed}')
    out = tmp_path / "r.json"
    p = gate("run", "--config", cfg, "--sim", "-k", "1", "-o", out, timeout=300, cwd=tmp_path)
    (run,) = json.loads(out.read_text())["runs"]
    assert run["status"] != "error", (p.stderr, run)
    said = Path(run["transcript"]).read_text()
    time.sleep(0.2)
    if allow:
        assert "reached-private" in said and private_peer.accepted() >= 1, said
    else:
        # refused at once (the REJECT's ICMP error reaches the prober), not left to time out
        assert "reached-private" not in said and "No route to host" in said, said
        assert private_peer.accepted() == 0, said


@pytest.mark.docker
@pytest.mark.slow
def test_a_pull_request_cannot_open_a_private_network_to_itself(
        private_peer: Peer, tmp_path: Path) -> None:
    """``[suite]`` measures, so on a PR it is the base branch's: a PR that adds the listener's
    network to ``allow_private`` is still refused it (``gate run --base-ref``: the yardstick
    ``gate ci`` opens on a pull request)."""
    repo = tmp_path / "repo"
    cfg = _suite(repo, "docker", private_peer, allow=False)
    cfg.write_text(cfg.read_text().replace(str(repo / "suite"), "suite"))
    for args in (["init", "-q", "-b", "main"], ["add", "-A"],
                 ["-c", "user.email=t@example.invalid", "-c", "user.name=t", "commit", "-q",
                  "-m", "base"]):
        subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True)
    cfg.write_text(cfg.read_text() + f'allow_private = ["{private_peer.network}"]\n')
    out = tmp_path / "pr.json"
    p = gate("run", "--config", cfg, "--base-ref", "main", "--agent", "oracle", "-k", "1",
             "-o", out, cwd=repo, timeout=300)
    assert p.returncode == 0, p.stderr
    said = (tmp_path / "pr.transcripts" / "lan-r0.jsonl").read_text()
    assert "reached-private" not in said and "No route to host" in said, said
    assert private_peer.accepted() == 0, said
