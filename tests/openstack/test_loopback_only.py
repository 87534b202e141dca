"""The test OpenStack listens on loopback only, as scripts/openstack-up promises.

Every TCP port the script gives its services (``DIR/port-base`` up: Keystone to noVNC, and
RabbitMQ's AMQP, Erlang distribution and epmd ports) is listened on at a loopback address
and nowhere else: Erlang's distribution port, left to itself, listens on every interface.
"""

from __future__ import annotations

import ipaddress
import shutil
import subprocess

import pytest

from .conftest import DIR, LocalOpenStack

pytestmark = pytest.mark.openstack

PORTS = 11
"""How many ports from the base the script uses (scripts/openstack-up: BASE to BASE + 10)."""


def _listening() -> list[tuple[str, int]]:
    """(address, port) of every listening TCP socket on this host, as ``ss`` shows them."""
    out = subprocess.run(["ss", "-Hltn"], capture_output=True, text=True, check=True).stdout
    found = []
    for line in out.splitlines():
        local = line.split()[3]
        address, _, port = local.rpartition(":")
        found.append((address.strip("[]").split("%")[0], int(port)))
    return found


def test_every_service_port_listens_on_loopback_only(openstack_cloud: LocalOpenStack) -> None:
    if shutil.which("ss") is None:
        pytest.skip("needs ss (iproute2)")
    base = int((DIR / "port-base").read_text())
    ours = [(a, p) for a, p in _listening() if base <= p < base + PORTS]
    assert {p for _, p in ours} >= {base, base + 7, base + 8}, ours  # Keystone, AMQP, Erlang
    wide = [(a, p) for a, p in ours if a == "*" or not ipaddress.ip_address(a).is_loopback]
    assert not wide, f"listening beyond loopback: {wide}"
