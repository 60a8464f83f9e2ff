"""A container with network reaches the outside, never the host's own services nor a
private network (but for its resolvers and proxies, and what the suite allows).

A container on Docker's bridge routes everything through the bridge's gateway — an address of
the host — so a service the host binds on ``0.0.0.0`` (a database, a metrics endpoint, a
resolver, the cloud's metadata service behind the host) answers a task that opted in to a
network. The guard closes that from inside the container's own network namespace, without
touching the host's firewall. The container is created on the bridge but taken off it before it
starts (:func:`detach`): it starts with loopback only, so nothing in it — the image's
``ENTRYPOINT`` runs first — reaches anything yet. Then the gate writes the namespace's own
``OUTPUT`` chain: what goes out through ``lo`` is the namespace's own (accepted), then a
``REJECT`` rule for every address of the host (all its interfaces' IPv4 and
IPv6 addresses, loopback excepted: inside the container, loopback is the container's own), for
the bridge's gateway, for the link-local range ``169.254.0.0/16`` (where cloud metadata
services answer), and for every broadcast and multicast destination (``255.255.255.255``, the
bridge subnet's broadcast by address type, ``224.0.0.0/4``, IPv6's ``ff00::/8`` and
``fe80::/10`` but for ICMPv6: a host's UDP service on 0.0.0.0 receives and answers those),
and then for the private ranges (:data:`gate.core.config.PRIVATE_RANGES`: RFC 1918's, CGNAT's
``100.64.0.0/10``, IPv6's ``fc00::/7``: a self-hosted runner's LAN, a cloud's internal
services), but for what the container needs there: the host's resolvers (DNS, port 53: the
nameservers of the host's resolv.conf files and the engine's ``dns`` setting, which Docker's
default bridge copies into the container; never the container's own file, which root in it may
rewrite before the guard), the runner's proxies (``HTTP(S)_PROXY``, ``ALL_PROXY``, lowercase
too: that address and TCP port) and the networks ``[suite].allow_private`` names (the base
branch's on a PR). The chain is written whole, in that order (:func:`rules`: an address of the
host stays rejected even when it is a resolver or a proxy), through ``nsenter -t <container
pid> -n iptables-restore``; it is read back, and only then is the bridge attached
(:func:`attach`). Traffic to anything else still leaves through the gateway (only packets
*addressed* to the host or a private network are refused). The rules belong to the namespace,
so they hold when a network is attached, detached and attached again (Harbor's phases). Nothing
in the container can remove them: the docker sandbox's commands have no capability at all
(``cap_drop ALL``), Harbor's containers the engine's defaults less ``NET_RAW`` (no
``NET_ADMIN``; without ``NET_RAW`` no packet socket hand-builds frames past the rules either:
``_harbor``).

A command is held until then: it starts as a small ``sh`` loop that waits for a marker file
in the command's read-only I/O directory, which the gate writes only once the rules are in
place and the bridge attached (a guard that fails kills the container; the command never runs).

It takes ``nsenter``, ``ip`` and ``iptables`` on the host and the privilege to enter another
process's network namespace: root, or password-less ``sudo`` (GitHub's hosted runners). Where
that is missing, a command with network is refused with the reason (``SandboxError``): the
exposure is not accepted silently. Other containers on the same bridge are out of reach too
where its subnet is private (Docker's default, ``172.17.0.0/16``, is). An image's build
(``docker build`` of a task's Dockerfile) is not guarded: its ``RUN`` steps have the engine's
network, host services and private networks included.
"""

from __future__ import annotations

import ipaddress
import json
import os
import secrets
import shutil
import socket
import subprocess
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import docker.errors

from gate.core.config import PRIVATE_RANGES
from gate.sandbox._base import SandboxError

LINK_LOCAL = "169.254.0.0/16"
BRIDGE = "bridge"  # Docker's default bridge: the only network a guarded container joins
#: rejected in every guarded namespace, whatever the host's addresses: the link-local range
#: (cloud metadata), every multicast group and broadcast address (the bridge's own subnet's
#: too, by address type: a host's UDP service on 0.0.0.0 receives and answers those)
V4_ALWAYS = (f"-d {LINK_LOCAL}", "-d 224.0.0.0/4", "-d 255.255.255.255/32",
             "-m addrtype --dst-type BROADCAST")
#: IPv6 multicast and link-local (the host's side of each container's link gets an address of
#: its own once attached, after the guard) but ICMPv6: neighbour discovery, without which IPv6
#: has no neighbours
V6_ALWAYS = ("-d ff00::/8 ! -p ipv6-icmp", "-d fe80::/10 ! -p ipv6-icmp")
#: where the host's resolvers are written: Docker's default bridge copies the first into a
#: container (loopback dropped), or systemd-resolved's upstream list when the first names only
#: its stub; the engine's own ``dns`` setting replaces both
RESOLV_CONFS = (Path("/etc/resolv.conf"), Path("/run/systemd/resolve/resolv.conf"))
DAEMON_JSON = Path("/etc/docker/daemon.json")
#: the runner's proxy settings (their host and port: a corporate proxy lives in a private range)
PROXY_VARS = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy")
PROXY_PORTS = {"http": 80, "https": 443, "socks": 1080, "socks4": 1080, "socks4a": 1080,
               "socks5": 1080, "socks5h": 1080}
_HOLD_S = 60  # how long a held command waits for the guard before it gives up
_TOOL_TIMEOUT_S = 20


def _privilege() -> list[str] | None:
    """The prefix that runs ``nsenter`` with the right to enter a container's network
    namespace: none as root, ``sudo -n`` where that works without a password; None: neither."""
    if any(shutil.which(tool) is None for tool in ("nsenter", "ip", "iptables",
                                                     "iptables-restore")):
        return None
    if os.geteuid() == 0:
        return []
    if shutil.which("sudo") is not None:
        try:
            ok = subprocess.run(["sudo", "-n", "true"], capture_output=True,
                                timeout=_TOOL_TIMEOUT_S).returncode == 0
        except (OSError, subprocess.TimeoutExpired):
            ok = False
        if ok:
            return ["sudo", "-n"]
    return None


def _run(argv: list[str], stdin: str | None = None) -> str:
    try:
        p = subprocess.run(argv, input=stdin, capture_output=True, text=True,
                           timeout=_TOOL_TIMEOUT_S, env={"PATH": os.environ.get("PATH", ""),
                                                          "LC_ALL": "C"})
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise SandboxError(f"network guard: {argv[0]} failed: {exc}") from None
    if p.returncode != 0:
        why = (p.stderr.strip().splitlines() or [f"exit {p.returncode}"])[-1][:200]
        raise SandboxError(f"network guard: {' '.join(argv[-4:])}: {why}")
    return p.stdout


def host_addresses() -> list[str]:
    """Every address of this host's interfaces (``ip -j addr``), loopback excepted."""
    data: list[dict[str, Any]] = json.loads(_run(["ip", "-j", "addr", "show"]) or "[]")
    found: list[str] = []
    for link in data:
        for info in link.get("addr_info") or ():
            local = info.get("local")
            if not local:
                continue
            addr = ipaddress.ip_address(local.split("%")[0])
            if not addr.is_loopback and str(addr) not in found:
                found.append(str(addr))
    return found


@dataclass(frozen=True)
class Reach:
    """What a guarded container may still reach inside :data:`~gate.core.config.PRIVATE_RANGES`:
    the host's resolvers (DNS: port 53, UDP and TCP), the runner's proxies (address, TCP port)
    and the networks ``[suite].allow_private`` names (the base branch's on a PR)."""

    resolvers: tuple[str, ...] = ()
    proxies: tuple[tuple[str, int], ...] = ()
    allowed: tuple[str, ...] = ()


def host_resolvers(files: Sequence[Path] = RESOLV_CONFS,
                   daemon: Path = DAEMON_JSON) -> tuple[str, ...]:
    """The ``nameserver`` addresses of ``files`` and the engine's ``dns`` setting (``daemon``):
    never the container's own resolv.conf, which root in it may have rewritten before its
    guard (the image's ``ENTRYPOINT`` runs first)."""
    named: list[str] = []
    for path in files:
        try:
            lines = path.read_text(errors="replace").splitlines()
        except OSError:
            continue
        named += [w[1] for w in map(str.split, lines) if len(w) > 1 and w[0] == "nameserver"]
    try:
        dns = json.loads(daemon.read_text()).get("dns")
        if isinstance(dns, list):
            named += [str(a) for a in dns]
    except (OSError, ValueError, AttributeError):
        pass
    return tuple(dict.fromkeys(a for a in map(_address, named) if a))


def runner_proxies(environ: Mapping[str, str]) -> tuple[tuple[str, int], ...]:
    """The address and port of each proxy ``environ`` sets (:data:`PROXY_VARS`; a name is
    resolved here, on the host). The values may hold a password: none is ever said."""
    found: list[tuple[str, int]] = []
    for name in PROXY_VARS:
        value = environ.get(name, "").strip()
        parts = urlsplit(value if "://" in value else f"http://{value}")
        try:
            port = parts.port or PROXY_PORTS.get(parts.scheme.lower())
        except ValueError:
            continue
        if value and parts.hostname and port:
            found += [(a, port) for a in _resolve(parts.hostname)]
    return tuple(dict.fromkeys(found))


def _address(text: str) -> str | None:
    try:
        return str(ipaddress.ip_address(text.split("%")[0]))
    except ValueError:
        return None


def _resolve(host: str) -> list[str]:
    try:
        infos = socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError):
        return []
    return [a for a in (_address(str(i[4][0])) for i in infos) if a]


def rules(hosts: Iterable[str], reach: Reach, *, v6: bool) -> list[str]:
    """One family's ``OUTPUT`` chain, in order, each rule as ``iptables -S`` prints it: accept
    what goes out through ``lo`` (the namespace's own); reject the host's addresses and what
    :data:`V4_ALWAYS` / :data:`V6_ALWAYS` name; then accept what ``reach`` allows inside the
    private ranges (a resolver or a proxy that is the host's own address stays rejected: its
    rule comes first); then reject the private ranges."""
    family, bits = (6, 128) if v6 else (4, 32)
    reject = " -j REJECT --reject-with " + ("icmp6-adm-prohibited" if v6 else
                                           "icmp-admin-prohibited")
    private = [ipaddress.ip_network(n) for n in PRIVATE_RANGES
               if ipaddress.ip_network(n).version == family]

    def inside(addr: str) -> bool:
        return any(ipaddress.ip_address(addr) in net for net in private)

    own = sorted({a for a in map(_address, hosts) if a and ":" in a} if v6 else
                 {a for a in map(_address, hosts) if a and ":" not in a})
    first = [*(f"-d {a}/{bits}" for a in own), *(V6_ALWAYS if v6 else V4_ALWAYS)]
    # first of all, the namespace's own traffic (loopback and its own addresses, which go out
    # through lo): the ICMP error a REJECT sends back to the container's own (private) address
    # must not meet the private ranges' rule, or a refused connect hangs instead of failing
    mine = "-o lo -j ACCEPT"
    accept = [f"-d {a}/{bits} -p {proto} -m {proto} --dport 53"
              for a in reach.resolvers if _family(a) == family and inside(a)
              for proto in ("udp", "tcp")]
    accept += [f"-d {a}/{bits} -p tcp -m tcp --dport {port}"
               for a, port in reach.proxies if _family(a) == family and inside(a)]
    accept += [f"-d {n}" for n in reach.allowed if ipaddress.ip_network(n).version == family]
    return [mine, *(spec + reject for spec in dict.fromkeys(first)),
            *(spec + " -j ACCEPT" for spec in dict.fromkeys(accept)),
            *(f"-d {net}{reject}" for net in private)]


def _family(addr: str) -> int:
    return ipaddress.ip_address(addr).version


class NetGuard:
    """The guard of one command's container: :meth:`hold` its argv, :meth:`apply` once it has
    started. ``io_host`` / ``io_container``: the command's read-only I/O directory, as the
    host and the container see it; ``allow``: ``[suite].allow_private``."""

    def __init__(self, io_host: Path, io_container: str, allow: Sequence[str] = ()) -> None:
        self.prefix = _privilege()
        self.allow = tuple(allow)
        self.marker = f".net-ready-{secrets.token_hex(8)}"
        self.io_host = io_host
        self.io_container = io_container

    REFUSAL = ("a command with network would reach this host's own services through "
               "Docker's bridge, and the gate cannot close that here: it needs nsenter, ip and "
               "iptables, and root or password-less sudo to set rules in the container's "
               "network namespace (docs/security.md: threat model)")

    def refusal(self) -> str | None:
        return self.REFUSAL if self.prefix is None else None

    def hold(self, argv: list[str]) -> list[str]:
        """``argv``, started only once the marker exists (so only after :meth:`apply`)."""
        if (why := self.refusal()) is not None:
            raise SandboxError(why)
        wait = (f'i=0; while [ ! -e "$0" ]; do i=$((i+1)); if [ $i -gt {_HOLD_S * 20} ]; then '
                'echo "gate: the network guard was never set" >&2; exit 125; fi; '
                'sleep 0.05 2>/dev/null || sleep 1; done; exec "$@"')
        return ["sh", "-c", wait, f"{self.io_container}/{self.marker}", *argv]

    def detach(self, container: Any) -> None:
        """Before the ``container`` starts: off the bridge until :meth:`apply` (:func:`detach`)."""
        detach(container)

    def apply(self, container: Any) -> None:
        """Guard the ``container``, started on no network (:func:`detach`), give it the
        bridge (:func:`attach`), then release the held command. Raises ``SandboxError`` (the
        caller removes the container; the command never ran)."""
        assert self.prefix is not None
        guard_container(container, self.prefix, self.allow)
        attach(container)
        (self.io_host / self.marker).write_text("")


def detach(container: Any) -> None:
    """Take the created, not yet started ``container`` off the bridge: it starts with loopback
    only, so nothing in it (the image's ``ENTRYPOINT`` first) reaches anything before
    :func:`guard_container` has set its rules; :func:`attach` then gives it the bridge."""
    _bridge_call(container, "disconnect")


def attach(container: Any) -> None:
    """Attach the guarded ``container`` to Docker's default bridge."""
    _bridge_call(container, "connect")


def _bridge_call(container: Any, what: str) -> None:
    try:
        bridge = container.client.networks.get(BRIDGE)
        if what == "connect":
            bridge.connect(container.id)
        else:
            bridge.disconnect(container.id, force=True)
    except docker.errors.DockerException as exc:
        why = str(getattr(exc, "explanation", None) or exc).strip().splitlines() or ["?"]
        raise SandboxError(f"network guard: cannot {what} the bridge: {why[0][:200]}") from None


def _bridge_gateways(container: Any) -> set[str]:
    """The gateways Docker's bridge declares (its IPAM configuration; often none: the bridge's
    own address, a host address, is the gateway then)."""
    try:
        config = (container.client.networks.get(BRIDGE).attrs.get("IPAM") or {}).get("Config")
    except docker.errors.DockerException as exc:
        raise SandboxError(f"network guard: cannot inspect the bridge: {exc}") from None
    return {c["Gateway"].split("/")[0] for c in config or () if c.get("Gateway")}


def guard_container(container: Any, prefix: list[str] | None = None,
                    allow: Sequence[str] = ()) -> None:
    """Reject, in the started ``container``'s own network namespace, every packet addressed to
    the host (:func:`host_addresses`), to the bridge's gateway, to ``169.254.0.0/16``, to a
    broadcast or multicast address (a host's UDP service on 0.0.0.0 answers those), and to the
    private ranges but for the host's resolvers, the runner's proxies and the networks
    ``allow`` names (:func:`rules`), and read the rules back; ``SandboxError`` when that cannot
    be done. The rules belong to the
    namespace, not to an interface: they hold across a network attached, detached and attached
    again (Harbor's phases), so one call once the container starts (on no network:
    :func:`detach`) guards it for good."""
    if prefix is None:
        prefix = _privilege()
        if prefix is None:
            raise SandboxError(NetGuard.REFUSAL)
    container.reload()
    pid = int((container.attrs.get("State") or {}).get("Pid") or 0)
    if pid <= 0:
        raise SandboxError("network guard: the container has no process to enter")
    enter = [*prefix, "nsenter", "-t", str(pid), "-n"]
    routes = json.loads(_run([*enter, "ip", "-j", "-4", "route", "show", "default"]) or "[]")
    hosts = [*host_addresses(), *_bridge_gateways(container),
             *(r["gateway"] for r in routes if r.get("gateway"))]
    reach = Reach(host_resolvers(), runner_proxies(os.environ), tuple(allow))
    _set_chain(enter, "iptables", rules(hosts, reach, v6=False))
    if any(":" in a for a in hosts) or _has_ipv6(enter):  # IPv6 on the host, or in the namespace
        _set_chain(enter, "ip6tables", rules(hosts, reach, v6=True))


def _set_chain(enter: list[str], tool: str, chain: list[str]) -> None:
    """Make the namespace's ``OUTPUT`` chain ``chain`` (its rules in order, as ``iptables -S``
    prints them: an accepted exception counts only before the range it opens), in one
    ``iptables-restore`` of the namespace's own filter table, and read it back."""

    def present() -> list[str]:
        return [r[len("-A OUTPUT "):] for r in _run([*enter, tool, "-w", "-S", "OUTPUT"])
                .splitlines() if r.startswith("-A OUTPUT ")]

    if present() != chain:
        table = ["*filter", ":INPUT ACCEPT [0:0]", ":FORWARD ACCEPT [0:0]",
                 ":OUTPUT ACCEPT [0:0]", *(f"-A OUTPUT {rule}" for rule in chain), "COMMIT"]
        _run([*enter, f"{tool}-restore", "-w"], "\n".join(table) + "\n")
    if (got := present()) != chain:
        off = [r for r in chain if r not in got] or ["their order"]
        raise SandboxError(f"network guard: the rules read back differ: {off[:3]}")


def _has_ipv6(enter: list[str]) -> bool:
    """Whether the namespace speaks IPv6 at all (an address other than loopback's)."""
    data = json.loads(_run([*enter, "ip", "-j", "-6", "addr", "show"]) or "[]")
    addrs = (ipaddress.ip_address(i["local"].split("%")[0])
             for link in data for i in link.get("addr_info") or () if i.get("local"))
    return any(not a.is_loopback for a in addrs)
