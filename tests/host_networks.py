"""Tenant networks a test leaves on the host: namespaces, bridges and nftables tables of
the local compute driver. They outlive the controller by design (a restart finds them), so
tests that throw their cloud directories away remove them, or hundreds pile up and slow
every later ``nft`` call down."""

from __future__ import annotations

from pathlib import Path

from vpod.cloud.drivers.local_networks import remove_host_networks
from vpod.cloud.drivers.tenant_network import network_problem

_DEPTHS = ("networks", "*/networks", "*/*/networks", "*/*/*/networks")


def network_dirs(root: Path) -> set[Path]:
    """The local driver's ``networks`` directories under ``root`` (a few levels down)."""
    return {p for pattern in _DEPTHS for p in root.glob(pattern) if p.is_dir()}


def remove_networks(directories: set[Path]) -> None:
    if network_problem() is not None:
        return
    for networks in sorted(directories):
        remove_host_networks(networks.parent)
