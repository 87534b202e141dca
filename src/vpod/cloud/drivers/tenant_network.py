"""Tenant networks of the local compute driver: the emulation of a vPOD's own VLAN.

Each vPOD (cluster) gets a Linux bridge on the host, and each of its servers a
network namespace of its own (its own loopback and abstract Unix sockets)
joined to that bridge by a veth pair::

    server netns (eth0 169.254.64.11/26) ─veth─┐
    server netns (eth0 169.254.64.12/26) ─veth─┼─ bridge vpb…  (gateway 169.254.64.1/26, host)
                                               │
    another vPOD's servers ─── another bridge ─┘ (no path between bridges)

Servers of one vPOD talk to each other across the bridge (layer 2, no host
rule in between). Everything else goes through the gateway, where one
nftables table per vPOD (``inet vpodnet_<bridge>``) decides: a server reaches

- the host services the cloud lists for it (the V-IPU user API, the cloud
  API, a dataset storage endpoint on loopback): the gateway's port is
  destination-NATed to the service's loopback address (``route_localnet``
  is set on the bridge so the kernel delivers it), and only such DNATed
  connections are accepted on the host;
- the IPUoF addresses of the machines in its vPOD's allocation (reprogrammed
  whenever the cloud says the allocation moved);
- beyond the host, when the operator leaves outbound traffic open
  (masqueraded, forwarded only from this bridge, never into another one).

Nothing else on the host answers: no agent management port, no admin API,
no other bridge, no database. Subnets come from a pool of link-local
addresses (169.254.64.0/18 in /26 blocks by default, so nothing ever leaves
the machine) handed out host-wide through a lease file under a lock
(``/run/vpod/tenant-networks``), so two controllers on one host never give
two vPODs the same subnet.

Everything here runs ``ip`` and ``nft`` as root; :func:`network_problem` says
in one line why a host cannot (the driver then refuses servers, as it does
without bubblewrap).
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import hashlib
import ipaddress
import json
import os
import shutil
import subprocess
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from .base import NetworkReach

DEFAULT_POOL = "169.254.64.0/18"
DEFAULT_PREFIX = 26
DEFAULT_REGISTRY = Path("/run/vpod/tenant-networks")
NETNS_DIR = Path("/run/netns")
FIRST_SERVER_OFFSET = 10
"""A server at position p has address network + 10 + p (the cloud's numbering)."""
_TIMEOUT_S = 30
_REFUSE = "reject with icmpx admin-prohibited"
"""Refused at once (the caller sees "no route to host"), never left to time out."""


class NetworkError(OSError):
    """A step of building or removing a tenant network failed (the sentence says which)."""


@dataclass(frozen=True)
class NetworkSettings:
    """Where tenant subnets come from and what leaves the host."""

    pool: str = DEFAULT_POOL
    prefix: int = DEFAULT_PREFIX
    outbound: bool = True
    """Whether servers may reach addresses beyond the host (masqueraded)."""
    registry: Path = DEFAULT_REGISTRY

    def subnets(self) -> Iterator[ipaddress.IPv4Network]:
        pool = ipaddress.IPv4Network(self.pool)
        return pool.subnets(new_prefix=self.prefix)


@dataclass(frozen=True)
class ClusterNet:
    """A vPOD's network on this host."""

    key: str
    subnet: ipaddress.IPv4Network
    bridge: str

    @property
    def gateway(self) -> str:
        return str(self.subnet.network_address + 1)

    @property
    def table(self) -> str:
        return f"vpodnet_{self.bridge}"


def _short(kind: str, key: str, length: int = 11) -> str:
    """An interface or namespace name from a key (interface names are at most 15 bytes)."""
    return kind + hashlib.sha256(key.encode()).hexdigest()[:length]


def bridge_name(cluster_key: str) -> str:
    return _short("vpb", cluster_key)


def netns_name(server_key: str) -> str:
    return _short("vpod-", server_key, 16)


def _run(*argv: str, stdin: str | None = None, check: bool = True) -> str:
    try:
        done = subprocess.run(
            argv, input=stdin, capture_output=True, text=True, timeout=_TIMEOUT_S, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise NetworkError(f"{argv[0]} {' '.join(argv[1:3])}: {exc}") from exc
    if check and done.returncode != 0:
        raise NetworkError(f"{' '.join(argv[:4])} failed: {done.stderr.strip()[:300]}")
    return done.stdout


def _ip(*args: str, check: bool = True) -> str:
    return _run("ip", *args, check=check)


def _exists(link: str) -> bool:
    return Path("/sys/class/net", link).exists()


@functools.cache
def network_problem() -> str | None:
    """Why this host cannot give servers networks of their own, in one line; None when it can."""
    for tool, package in (("ip", "iproute2"), ("nft", "nftables"), ("nsenter", "util-linux")):
        if shutil.which(tool) is None:
            return f"{tool} is not installed: apt-get install {package}"
    if os.geteuid() != 0:
        return "the controller does not run as root, so it cannot make network namespaces"
    probe = f"vpod-probe-{os.getpid()}"
    try:
        _ip("netns", "add", probe)
        _run("nft", "list", "tables")
        # What a tenant network is built of, tried where it cannot touch the host: a kernel
        # without veth, bridges or nf_tables (a minimal VM's) passes the two steps above.
        _ip("-n", probe, "link", "add", "vpodprobe0", "type", "veth", "peer", "vpodprobe1")
        _ip("-n", probe, "link", "add", "vpodprobebr", "type", "bridge")
        _run("ip", "netns", "exec", probe, "nft", "-f", "-", stdin=_PROBE_RULES)
    except NetworkError as exc:
        return f"network namespaces, veth, bridges or nftables are not available: {exc}"
    finally:
        _ip("netns", "delete", probe, check=False)  # takes the probe's links and table along
    return None


_PROBE_RULES = """table inet vpodprobe {
  chain post { type nat hook postrouting priority srcnat; masquerade; }
  chain forward { type filter hook forward priority filter; ct state established,related accept; }
}
"""
"""The kinds of rule a tenant network's table holds (NAT and connection tracking)."""


@contextlib.contextmanager
def _leases(registry: Path) -> Iterator[dict[str, str]]:
    """The host's subnet leases (subnet -> owner key), read and written under a lock."""
    registry.mkdir(parents=True, exist_ok=True, mode=0o700)
    path = registry / "leases.json"
    with open(registry / ".lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            leases = dict(json.loads(path.read_text()))
        except (FileNotFoundError, ValueError, TypeError):
            leases = {}
        before = dict(leases)
        yield leases
        if leases != before:
            tmp = path.with_suffix(".tmp")
            tmp.write_text(json.dumps(leases, indent=1, sort_keys=True) + "\n")
            os.replace(tmp, path)


def _host_networks() -> list[ipaddress.IPv4Network]:
    """Networks of the addresses configured on this host's interfaces."""
    found = []
    for link in json.loads(_ip("-j", "-4", "addr", "show") or "[]"):
        for info in link.get("addr_info", []):
            with contextlib.suppress(ValueError, KeyError):
                found.append(ipaddress.IPv4Network(f"{info['local']}/{info['prefixlen']}", False))
    return found


def _in_pool(settings: NetworkSettings, subnet: str) -> bool:
    try:
        net = ipaddress.IPv4Network(subnet)
    except ValueError:
        return False
    pool = ipaddress.IPv4Network(settings.pool)
    return net.prefixlen == settings.prefix and net.subnet_of(pool)


def lease_subnet(settings: NetworkSettings, owner: str, wanted: str | None = None) -> str:
    """The subnet ``owner`` (a vPOD's key) holds on this host, leasing one first if it holds
    none: ``wanted`` when it is free (a vPOD keeps its subnet across restarts), else the
    first free one of the pool that no interface of the host uses."""
    with _leases(settings.registry) as leases:
        for subnet, holder in leases.items():
            if holder == owner:
                return subnet
        if wanted is not None and wanted not in leases and _in_pool(settings, wanted):
            leases[wanted] = owner
            return wanted
        used = _host_networks()
        for candidate in settings.subnets():
            if str(candidate) not in leases and not any(candidate.overlaps(n) for n in used):
                leases[str(candidate)] = owner
                return str(candidate)
    raise NetworkError(
        f"every subnet of the tenant network pool {settings.pool} is in use: give it more"
        " room (tenant_network_pool in cloud.toml)"
    )


def release_subnet(settings: NetworkSettings, owner: str) -> None:
    with _leases(settings.registry) as leases:
        for subnet in [s for s, holder in leases.items() if holder == owner]:
            del leases[subnet]


def cluster_net(cluster_key: str, subnet: str) -> ClusterNet:
    return ClusterNet(cluster_key, ipaddress.IPv4Network(subnet), bridge_name(cluster_key))


def ensure_bridge(net: ClusterNet, settings: NetworkSettings) -> None:
    """The vPOD's bridge with the gateway address, up (idempotent)."""
    if not _exists(net.bridge):
        _ip("link", "add", net.bridge, "type", "bridge")
    address = f"{net.gateway}/{net.subnet.prefixlen}"
    if address not in _ip("-4", "addr", "show", "dev", net.bridge):
        _ip("addr", "add", address, "dev", net.bridge)
    _ip("link", "set", net.bridge, "up")
    conf = Path("/proc/sys/net/ipv4/conf", net.bridge)
    (conf / "route_localnet").write_text("1\n")  # so the gateway's DNAT to loopback is delivered
    (conf / "forwarding").write_text("1\n" if settings.outbound else "0\n")


def ensure_server(net: ClusterNet, server_key: str, address: str) -> str:
    """The server's namespace, joined to the vPOD's bridge at ``address`` (idempotent);
    returns the namespace's name."""
    ns = netns_name(server_key)
    if not (NETNS_DIR / ns).exists():
        _ip("netns", "add", ns)
    host_end = _short("vpv", server_key)
    inside = f"{address}/{net.subnet.prefixlen}"
    peer = _short("vpp", server_key)
    # Each step is checked on its own: a controller stopped between two of them (a restart
    # mid-task) leaves the pair half made, and the retry finishes it.
    if (
        _exists(host_end)
        and not _exists(peer)
        and not _in_netns(ns, "eth0")
        and not _in_netns(ns, peer)
    ):
        # Its other end is in a namespace no longer named ns (deleted while a process held it).
        _ip("link", "delete", host_end, check=False)  # gone already if that namespace ended
    if not _exists(host_end):
        _ip("link", "add", host_end, "type", "veth", "peer", "name", peer)
    if _exists(peer):
        _ip("link", "set", peer, "netns", ns)
    if not _in_netns(ns, "eth0"):
        _ip("-n", ns, "link", "set", peer, "name", "eth0")
    _ip("link", "set", host_end, "master", net.bridge, "up")
    _ip("-n", ns, "link", "set", "lo", "up")
    if inside not in _ip("-n", ns, "-4", "addr", "show", "dev", "eth0"):
        _ip("-n", ns, "addr", "flush", "dev", "eth0")
        _ip("-n", ns, "addr", "add", inside, "dev", "eth0")
    _ip("-n", ns, "link", "set", "eth0", "up")
    _ip("-n", ns, "route", "replace", "default", "via", net.gateway)
    return ns


def _in_netns(ns: str, link: str) -> bool:
    return _ip("-n", ns, "link", "show", link, check=False) != ""


def remove_server(server_key: str) -> None:
    """The server's namespace and veth pair (gone with the namespace), if any."""
    _ip("link", "delete", _short("vpv", server_key), check=False)
    if (NETNS_DIR / netns_name(server_key)).exists():
        _ip("netns", "delete", netns_name(server_key), check=False)


def remove_cluster(net: ClusterNet) -> None:
    _run("nft", "delete", "table", "inet", net.table, check=False)
    if _exists(net.bridge):
        _ip("link", "delete", net.bridge, check=False)


def _ipv4(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).version == 4
    except ValueError:
        return False


def _loopback(host: str) -> bool:
    with contextlib.suppress(ValueError):
        return ipaddress.ip_address(host).is_loopback
    return host == "localhost"


@dataclass(frozen=True)
class Ruleset:
    """The nftables table of one vPOD: pure text from what it may reach."""

    net: ClusterNet
    reach: NetworkReach
    outbound: bool
    pool: str = DEFAULT_POOL
    forwards: tuple[tuple[int, str, int], ...] = field(init=False)

    def __post_init__(self) -> None:
        forwards = []
        for host, port in self.reach.services:
            if _loopback(host):
                target = "127.0.0.1" if host == "localhost" else host
                forwards.append((port, target, port))
        object.__setattr__(self, "forwards", tuple(sorted(set(forwards))))

    def text(self) -> str:
        br, gw, table = self.net.bridge, self.net.gateway, self.net.table
        ipuof = sorted({h for h in self.reach.ipuof_hosts if ipaddress.ip_address(h).version == 4})
        direct = sorted(  # address literals only: a rule never waits on name resolution
            {(h, p) for h, p in self.reach.services if _ipv4(h) and not _loopback(h)}
        )
        lines = [
            f"table inet {table} {{",
            "  chain prerouting {",
            "    type nat hook prerouting priority dstnat; policy accept;",
        ]
        for port, target, target_port in self.forwards:
            lines.append(
                f'    iifname "{br}" ip daddr {gw} tcp dport {port}'
                f" dnat ip to {target}:{target_port}"
            )
        lines += [
            "  }",
            "  chain input {",
            "    type filter hook input priority filter; policy accept;",
            f'    iifname "{br}" ct state established,related accept',
            f'    iifname "{br}" ct status dnat accept',
        ]
        if ipuof:
            lines.append(
                f'    iifname "{br}" ip daddr {{ {", ".join(ipuof)} }} meta l4proto tcp accept'
            )
        lines += [
            f'    iifname "{br}" icmp type {{ echo-request }} ip daddr {gw} accept',
            f'    iifname "{br}" {_REFUSE}',
            "  }",
            "  chain forward {",
            "    type filter hook forward priority filter; policy accept;",
            # servers of one vPOD meet on the bridge (seen here where br_netfilter is loaded)
            f'    iifname "{br}" oifname "{br}" accept',
            f'    oifname "{br}" ct state established,related accept',
            f'    oifname "{br}" {_REFUSE}',
        ]
        for host, port in direct:
            lines.append(f'    iifname "{br}" ip daddr {host} tcp dport {port} accept')
        lines += [
            f'    iifname "{br}" ip daddr {self.pool} {_REFUSE}',
            f'    iifname "{br}" oifname "vpb*" {_REFUSE}',
            f'    iifname "{br}" {"accept" if self.outbound else _REFUSE}',
            "  }",
        ]
        if self.outbound:
            lines += [
                "  chain postrouting {",
                "    type nat hook postrouting priority srcnat; policy accept;",
                f'    ip saddr {self.net.subnet} oifname != "{br}" oifname != "lo" masquerade',
                "  }",
            ]
        lines.append("}")
        return "\n".join(lines) + "\n"


def apply_rules(rules: Ruleset) -> None:
    """Replace the vPOD's table atomically (one ``nft -f`` transaction)."""
    table = rules.net.table
    script = f"table inet {table}\ndelete table inet {table}\n" + rules.text()
    _run("nft", "-f", "-", stdin=script)


def enter(ns: str) -> list[str]:
    """The command prefix that runs a program in the server's network namespace."""
    return ["nsenter", f"--net={NETNS_DIR / ns}", "--"]


def addresses_of(subnet: str, positions: Sequence[int]) -> list[str]:
    net = ipaddress.IPv4Network(subnet)
    return [str(net.network_address + FIRST_SERVER_OFFSET + p) for p in positions]


__all__ = [
    "ClusterNet",
    "NetworkError",
    "NetworkSettings",
    "Ruleset",
    "apply_rules",
    "cluster_net",
    "ensure_bridge",
    "ensure_server",
    "enter",
    "lease_subnet",
    "network_problem",
    "release_subnet",
    "remove_cluster",
    "remove_server",
]
