"""A container with network reaches the outside, never the host's own services.

A container on Docker's bridge routes everything through the bridge's gateway — an address of
the host — so a service the host binds on ``0.0.0.0`` (a database, a metrics endpoint, a
resolver, the cloud's metadata service behind the host) answers a task that opted in to a
network. The guard closes that from inside the container's own network namespace, without
touching the host's firewall: after the container starts, and before its command runs, the
gate appends to the namespace's own ``OUTPUT`` chain a ``REJECT`` rule for every address of
the host (all its interfaces' IPv4 and IPv6 addresses, loopback excepted: inside the
container, loopback is the container's own), for the container's gateway, and for the
link-local range ``169.254.0.0/16`` (where cloud metadata services answer), through ``nsenter
-t <container pid> -n iptables-restore``; then it reads the rules back. Traffic to anything
else still leaves through the gateway (only packets *addressed* to the host are refused). The
rules belong to the namespace, so they hold when a network is detached and attached again
(Harbor's phases); the task's user has no capability in the container (``cap_drop ALL``), so
it cannot remove them.

The command is held until then: it starts as a small ``sh`` loop that waits for a marker file
in the command's read-only I/O directory, which the gate writes only once the rules are in
place (a guard that fails kills the container; the command never runs).

It takes ``nsenter``, ``ip`` and ``iptables`` on the host and the privilege to enter another
process's network namespace: root, or password-less ``sudo`` (GitHub's hosted runners). Where
that is missing, a command with network is refused with the reason (``SandboxError``): the
exposure is not accepted silently. Other containers on the same bridge are not covered (they
listen on nothing of the gate's).
"""

from __future__ import annotations

import ipaddress
import json
import os
import secrets
import shutil
import subprocess
from pathlib import Path
from typing import Any

from gate.sandbox._base import SandboxError

LINK_LOCAL = "169.254.0.0/16"
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


class NetGuard:
    """The guard of one command's container: :meth:`hold` its argv, :meth:`apply` once it has
    started. ``io_host`` / ``io_container``: the command's read-only I/O directory, as the
    host and the container see it."""

    def __init__(self, io_host: Path, io_container: str) -> None:
        self.prefix = _privilege()
        self.marker = f".net-ready-{secrets.token_hex(8)}"
        self.io_host = io_host
        self.io_container = io_container

    REFUSAL = ("a command with network would reach this host's own services through "
               "Docker's bridge, and the gate cannot close that here: it needs nsenter, ip and "
               "iptables, and root or password-less sudo to set rules in the container's "
               "network namespace (README: threat model)")

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

    def apply(self, container: Any) -> None:
        """Guard the started ``container`` (:func:`guard_container`), then release the held
        command. Raises ``SandboxError`` (the caller removes the container; the command never
        ran)."""
        assert self.prefix is not None
        guard_container(container, self.prefix)
        (self.io_host / self.marker).write_text("")


def guard_container(container: Any, prefix: list[str] | None = None) -> None:
    """Reject, in the started ``container``'s own network namespace, every packet addressed to
    the host (:func:`host_addresses`), to the container's gateway and to ``169.254.0.0/16``,
    and read the rules back; ``SandboxError`` when that cannot be done. The rules belong to
    the namespace, not to an interface: they hold across a network detached and attached again
    (Harbor's phases), so one call after the container starts guards it for good."""
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
    hosts = host_addresses()
    v4 = {f"{a}/32" for a in hosts if ":" not in a}
    v4 |= {f"{r['gateway']}/32" for r in routes if r.get("gateway")}
    _reject(enter, "iptables", {*v4, LINK_LOCAL}, "icmp-admin-prohibited")
    v6 = {f"{a.split('%')[0]}/128" for a in hosts if ":" in a}
    if v6 and _has_ipv6(enter):
        _reject(enter, "ip6tables", v6, "icmp6-adm-prohibited")


def _reject(enter: list[str], tool: str, nets: set[str], why: str) -> None:
    """Append a REJECT rule to the namespace's OUTPUT chain for each of ``nets`` it does not
    have yet (``iptables-restore --noflush``: one call), then check every one is there."""
    def present() -> set[str]:
        rules = _run([*enter, tool, "-w", "-S", "OUTPUT"]).splitlines()
        return {r.split()[3] for r in rules
                if r.startswith("-A OUTPUT -d ") and r.endswith(f"-j REJECT --reject-with {why}")}

    missing = nets - present()
    if missing:
        lines = [f"-A OUTPUT -d {n} -j REJECT --reject-with {why}" for n in sorted(missing)]
        _run([*enter, f"{tool}-restore", "-w", "--noflush"],
             "\n".join(["*filter", *lines, "COMMIT"]) + "\n")
    if left := nets - present():
        raise SandboxError(f"network guard: no rule in place for {sorted(left)[:3]}")


def _has_ipv6(enter: list[str]) -> bool:
    """Whether the namespace speaks IPv6 at all (an address other than loopback's)."""
    data = json.loads(_run([*enter, "ip", "-j", "-6", "addr", "show"]) or "[]")
    addrs = (ipaddress.ip_address(i["local"].split("%")[0])
             for link in data for i in link.get("addr_info") or () if i.get("local"))
    return any(not a.is_loopback for a in addrs)
