"""Host networks: who may reach a partition's IPUs over IPUoF.

An allocation names the hosts whose applications may attach to its IPUs as
IP addresses or CIDRs (``10.1.2.3``, ``10.1.2.0/24``, ``::1/128``); the agent
checks each IPUoF connection's peer address against them. Pure: parsing and
matching only.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Sequence

from .errors import InvalidSpec

Network = ipaddress.IPv4Network | ipaddress.IPv6Network

MAX_HOSTS = 64
"""Entries in one host list: enough for a rack of servers, small enough to send each configure."""

DEFAULT_TRUSTED_HOSTS = ("127.0.0.0/8", "::1/128")
"""The operator's trusted host network when none is configured: this host only."""


def parse_hosts(hosts: Iterable[str]) -> tuple[Network, ...]:
    """Each address or CIDR as a network (an address is a /32 or /128); order kept,
    duplicates dropped. InvalidSpec names the first entry that is neither."""
    networks: list[Network] = []
    for raw in hosts:
        text = raw.strip()
        try:
            network = ipaddress.ip_network(text, strict=False)
        except ValueError:
            raise InvalidSpec(
                f"{raw[:80]!r} is not an IP address or CIDR: give hosts as addresses"
                " (10.1.2.3, ::1) or networks (10.1.2.0/24), separated by commas"
            ) from None
        if network not in networks:
            networks.append(network)
    if len(networks) > MAX_HOSTS:
        raise InvalidSpec(
            f"{len(networks)} hosts given: at most {MAX_HOSTS}; use CIDRs to cover a range"
        )
    return tuple(networks)


def normalise_hosts(hosts: Iterable[str]) -> tuple[str, ...]:
    """The hosts as canonical CIDR strings (``10.1.2.3`` -> ``10.1.2.3/32``)."""
    return tuple(str(n) for n in parse_hosts(hosts))


def split_hosts(text: str) -> list[str]:
    """``"a, b,c"`` -> ``["a", "b", "c"]`` (the CLIs' comma-separated form)."""
    return [part.strip() for part in text.split(",") if part.strip()]


def peer_ip(address: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    """The IP of a peer address, IPv4-mapped IPv6 addresses as IPv4; None if not an IP."""
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return None
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    return ip


def host_allowed(address: str, networks: Sequence[Network]) -> bool:
    """Whether the peer ``address`` lies in one of ``networks``."""
    ip = peer_ip(address)
    return ip is not None and any(ip.version == n.version and ip in n for n in networks)
