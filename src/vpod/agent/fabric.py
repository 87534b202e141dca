"""Link-local IPUoF addresses for emulated machines whose IPUs tenants' servers attach to.

A tenant's server runs in a network namespace of its own (docs/security.md):
the host's loopback addresses, where emulated machines listen by default,
are not reachable from it. A real pod's IPU-Machines sit on a network of
their own (the RDMA data network); here their IPUoF endpoints get addresses
of 169.254.192.0/20 on a dummy interface of the host (a portless bridge where the kernel has
no dummy module) (``vpod-fabric``), which
the tenant networks route to and filter per vPOD, and which never leave the
machine.

Addresses are claimed a block at a time with ``ip addr add``, which fails
for an address the interface already holds: two agent processes on one host
(or two test runs) never get the same block, without a registry to keep.
They are released when the agent stops. Needs root and iproute2.
"""

from __future__ import annotations

import ipaddress
import os
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

FABRIC_INTERFACE = "vpod-fabric"
FABRIC_POOL = "169.254.192.0/20"
BLOCK = 16
"""Addresses claimed together (machines of one agent process are consecutive)."""


class FabricError(OSError):
    """The fabric's addresses could not be claimed; the sentence says why."""


def _ip(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["ip", *args], capture_output=True, text=True, timeout=30, check=False)


def fabric_problem() -> str | None:
    """Why this host cannot give IPUoF endpoints fabric addresses; None when it can."""
    if shutil.which("ip") is None:
        return "ip is not installed (apt-get install iproute2)"
    if os.geteuid() != 0:
        return "not root: cannot add addresses to a dummy interface"
    return None


def _ensure_interface(interface: str) -> None:
    if Path("/sys/class/net", interface).exists():
        return
    for kind in ("dummy", "bridge"):  # a portless bridge where the kernel has no dummy module
        made = _ip("link", "add", interface, "type", kind)
        if made.returncode == 0 or Path("/sys/class/net", interface).exists():
            break
    else:
        raise FabricError(f"cannot make the {interface} interface: {made.stderr.strip()}")
    _ip("link", "set", interface, "up")


def claim_addresses(
    count: int, *, interface: str = FABRIC_INTERFACE, pool: str = FABRIC_POOL
) -> list[str]:
    """``count`` consecutive addresses of ``pool`` on ``interface`` that no one else holds."""
    problem = fabric_problem()
    if problem is not None:
        raise FabricError(problem)
    _ensure_interface(interface)
    network = ipaddress.IPv4Network(pool)
    size = max(BLOCK, -(-count // BLOCK) * BLOCK)
    for start in range(1, network.num_addresses - size, size):
        wanted = [str(network.network_address + start + i) for i in range(count)]
        taken: list[str] = []
        for address in wanted:
            if _ip("addr", "add", f"{address}/32", "dev", interface).returncode != 0:
                break
            taken.append(address)
        if len(taken) == count:
            return wanted
        release_addresses(taken, interface=interface)
    raise FabricError(f"no {count} free addresses left in {pool} on {interface}")


def release_addresses(addresses: Sequence[str], *, interface: str = FABRIC_INTERFACE) -> None:
    for address in addresses:
        _ip("addr", "del", f"{address}/32", "dev", interface)


__all__ = [
    "FABRIC_INTERFACE",
    "FabricError",
    "claim_addresses",
    "fabric_problem",
    "release_addresses",
]
