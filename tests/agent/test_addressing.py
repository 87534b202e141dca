"""Address plans: one loopback address per machine, or one address with offset ports."""

from __future__ import annotations

import pytest

from vpod.agent.addressing import (
    AddressMode,
    AddressPlan,
    agent_ids,
    join_host_port,
    split_host_port,
)


def test_per_machine_addresses_keep_the_spec_ports() -> None:
    """Machine i gets base+i; every machine has ports 50052-50055 and 7471-7474."""
    plan = AddressPlan(base_host="127.1.0.254")
    addrs = plan.addresses(3)
    assert [a.host for a in addrs] == ["127.1.0.254", "127.1.0.255", "127.1.1.0"]
    assert {a.agent_port for a in addrs} == {8092}
    assert all(a.server_ports == (50052, 50053, 50054, 50055) for a in addrs)
    assert all(a.rdma_ports == (7471, 7472, 7473, 7474) for a in addrs)
    assert all(a.ipuof_host == a.host for a in addrs)


def test_shared_address_offsets_ports() -> None:
    plan = AddressPlan(
        mode=AddressMode.SHARED,
        base_host="localhost",
        agent_port=9000,
        server_port=51000,
        rdma_port=52000,
    )
    second = plan.addresses(2)[1]
    assert (second.host, second.agent_port) == ("localhost", 9001)
    assert second.server_ports == (51004, 51005, 51006, 51007)
    assert second.rdma_ports == (52004, 52005, 52006, 52007)


def test_separate_ipuof_addresses() -> None:
    plan = AddressPlan(base_host="127.1.0.1", ipuof_base_host="127.2.0.1")
    assert [a.ipuof_host for a in plan.addresses(2)] == ["127.2.0.1", "127.2.0.2"]


def test_port_zero_means_any_port_for_every_machine() -> None:
    plan = AddressPlan(mode=AddressMode.SHARED, agent_port=0, server_port=0, rdma_port=0)
    assert all(a.agent_port == 0 and set(a.server_ports) == {0} for a in plan.addresses(4))


@pytest.mark.parametrize(
    ("plan", "count", "words"),
    [
        (AddressPlan(base_host="127.255.255.250"), 10, "leave 127.0.0.0/8"),
        (AddressPlan(base_host="pod.example"), 2, "not an IPv4 address"),
        (AddressPlan(mode=AddressMode.SHARED, agent_port=65530), 10, "no room"),
        (
            AddressPlan(mode=AddressMode.SHARED, agent_port=50060, server_port=50052),
            4,
            "overlaps",
        ),
        (AddressPlan(agent_port=70000), 1, "not a port"),
        (AddressPlan(), 0, "at least 1 machine"),
    ],
)
def test_impossible_plans_say_what_to_change(plan: AddressPlan, count: int, words: str) -> None:
    with pytest.raises(ValueError, match=words):
        plan.addresses(count)


def test_host_port_helpers() -> None:
    assert join_host_port("::1", 80) == "[::1]:80"
    assert split_host_port("[::1]:80") == ("::1", 80)
    assert split_host_port("127.0.0.1:8091") == ("127.0.0.1", 8091)
    with pytest.raises(ValueError, match="HOST:PORT"):
        split_host_port("localhost")


def test_agent_ids_count_from_first_index() -> None:
    assert agent_ids("ag", 3) == ["ag1", "ag2", "ag3"]
    assert agent_ids("m", 2, first_index=17) == ["m17", "m18"]
