"""The rules a vPOD's network is made of, and the host-wide subnet leases."""

from __future__ import annotations

import ipaddress
import shutil
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from vpod.cloud.drivers import NetworkReach
from vpod.cloud.drivers.tenant_network import (
    NetworkError,
    NetworkSettings,
    Ruleset,
    bridge_name,
    cluster_net,
    lease_subnet,
    netns_name,
    release_subnet,
)

NET = cluster_net("/data#cl-1", "169.254.64.0/26")
REACH = NetworkReach(
    services=(("127.0.0.1", 8090), ("127.0.0.1", 8080), ("s3.example.net", 443)),
    ipuof_hosts=("169.254.192.1", "169.254.192.2"),
)


def test_loopback_services_are_reached_at_the_gateway_and_nothing_else_is() -> None:
    text = Ruleset(NET, REACH, outbound=False).text()
    br = NET.bridge
    assert f'iifname "{br}" ip daddr 169.254.64.1 tcp dport 8090 dnat ip to 127.0.0.1:8090' in text
    assert f'iifname "{br}" ip daddr 169.254.64.1 tcp dport 8080 dnat ip to 127.0.0.1:8080' in text
    assert "169.254.192.1, 169.254.192.2" in text
    assert "ip daddr s3.example.net tcp dport 443 accept" not in text  # names are not rules
    input_chain = text.split("chain input")[1].split("chain forward")[0]
    assert input_chain.rstrip().endswith(
        f'iifname "{br}" reject with icmpx admin-prohibited\n  }}'.rstrip()
    )
    assert "masquerade" not in text
    forward = text.split("chain forward")[1]
    assert f'iifname "{br}" oifname "vpb*" reject' in forward  # never into another vPOD
    assert f'iifname "{br}" reject with icmpx admin-prohibited' in forward  # outbound closed


def test_outbound_open_is_masqueraded_and_still_never_reaches_another_vpod() -> None:
    text = Ruleset(NET, REACH, outbound=True).text()
    forward = text.split("chain forward")[1].split("chain postrouting")[0]
    lines = [line.strip() for line in forward.splitlines()]
    refuse_vpods = lines.index(
        f'iifname "{NET.bridge}" oifname "vpb*" reject with icmpx admin-prohibited'
    )
    accept_out = lines.index(f'iifname "{NET.bridge}" accept')
    assert refuse_vpods < accept_out
    assert f"ip saddr {NET.subnet}" in text
    assert "masquerade" in text


def test_no_reach_means_only_each_other() -> None:
    text = Ruleset(NET, NetworkReach(), outbound=False).text()
    assert "dnat ip to" not in text
    assert "l4proto tcp accept" not in text


def test_names_fit_the_kernels_limits_and_differ_per_controller() -> None:
    for key in ("/a#cl-1", "/b#cl-1", "x" * 500):
        assert len(bridge_name(key)) <= 15
        assert len(netns_name(key)) <= 64
    assert bridge_name("/a#cl-1") != bridge_name("/b#cl-1")


needs_ip = pytest.mark.skipif(shutil.which("ip") is None, reason="iproute2 is not installed")


@needs_ip
def test_leases_are_host_wide_stable_and_released(tmp_path: Path) -> None:
    settings = NetworkSettings(registry=tmp_path / "leases")
    first = lease_subnet(settings, "A")
    assert lease_subnet(settings, "A") == first
    second = lease_subnet(settings, "B", wanted=first)  # taken: another one
    assert second != first
    for subnet in (first, second):
        net = ipaddress.IPv4Network(subnet)
        assert net.prefixlen == 26
        assert net.subnet_of(ipaddress.IPv4Network("169.254.64.0/18"))
    release_subnet(settings, "A")
    assert lease_subnet(settings, "C", wanted=first) == first


@needs_ip
def test_concurrent_leases_never_share_a_subnet(tmp_path: Path) -> None:
    settings = NetworkSettings(registry=tmp_path / "leases")
    with ThreadPoolExecutor(8) as pool:
        got = list(pool.map(lambda n: lease_subnet(settings, f"owner-{n}"), range(40)))
    assert len(set(got)) == 40


@needs_ip
def test_a_full_pool_is_refused_with_what_to_change(tmp_path: Path) -> None:
    settings = NetworkSettings(pool="169.254.250.0/25", prefix=26, registry=tmp_path / "l")
    lease_subnet(settings, "A")
    lease_subnet(settings, "B")
    with pytest.raises(NetworkError, match="tenant_network_pool"):
        lease_subnet(settings, "C")
