"""A server's network made again after the controller stopped half-way (a restart mid-task):
every state the steps can leave is finished, not refused."""

from __future__ import annotations

import subprocess
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from vpod.cloud.drivers.tenant_network import (
    ClusterNet,
    NetworkSettings,
    _short,
    cluster_net,
    ensure_bridge,
    ensure_server,
    netns_name,
    network_problem,
    remove_cluster,
    remove_server,
)

pytestmark = [
    pytest.mark.system,
    pytest.mark.skipif(network_problem() is not None, reason=str(network_problem())),
]


def ip(*args: str) -> str:
    return subprocess.run(("ip", *args), check=True, capture_output=True, text=True).stdout


@pytest.fixture
def net(tmp_path: Path) -> Iterator[tuple[ClusterNet, str]]:
    cluster = cluster_net(uuid.uuid4().hex[:16], "169.254.199.0/28")
    ensure_bridge(cluster, NetworkSettings(registry=tmp_path / "leases.json"))
    server = uuid.uuid4().hex[:16]
    try:
        yield cluster, server
    finally:
        remove_server(server)
        remove_cluster(cluster)


def _made_pair(server: str, ns: str) -> subprocess.Popen[bytes] | None:
    ip("link", "add", _short("vpv", server), "type", "veth", "peer", "name", _short("vpp", server))

    return None


def _moved_unnamed(server: str, ns: str) -> subprocess.Popen[bytes] | None:
    _made_pair(server, ns)
    ip("link", "set", _short("vpp", server), "netns", ns)
    return None


def _namespace_replaced(server: str, ns: str) -> subprocess.Popen[bytes] | None:
    _moved_unnamed(server, ns)
    ip("-n", ns, "link", "set", _short("vpp", server), "name", "eth0")
    # Still held by a process, the old namespace lives on without its name.
    holder = subprocess.Popen(("ip", "netns", "exec", ns, "sleep", "60"))
    time.sleep(0.2)
    ip("netns", "delete", ns)
    ip("netns", "add", ns)
    return holder


@pytest.mark.parametrize(
    "left_half_made",
    [_made_pair, _moved_unnamed, _namespace_replaced],
    ids=["pair-made", "moved-not-renamed", "namespace-replaced"],
)
def test_a_half_made_server_network_is_finished(
    net: tuple[ClusterNet, str],
    left_half_made: Callable[[str, str], subprocess.Popen[bytes] | None],
) -> None:
    cluster, server = net
    ns = netns_name(server)
    ip("netns", "add", ns)
    holder = left_half_made(server, ns)
    assert ensure_server(cluster, server, "169.254.199.5") == ns
    assert "169.254.199.5/28" in ip("-n", ns, "-4", "addr", "show", "dev", "eth0")
    if holder is not None:  # the old namespace ends now, its end of the old pair with it
        holder.kill()
        holder.wait()
    assert ensure_server(cluster, server, "169.254.199.5") == ns  # and again: nothing to do
    assert "169.254.199.5/28" in ip("-n", ns, "-4", "addr", "show", "dev", "eth0")
