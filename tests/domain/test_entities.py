"""Agents, clusters, allocations and users: checked on construction."""

from typing import Any

import pytest

from vpod.domain.catalog import MachineType
from vpod.domain.entities import Agent, Allocation, Cluster, User, default_gw_topology
from vpod.domain.errors import InvalidSpec
from vpod.domain.topology import GwTopology, IldTopology


def agents(n: int, prefix: str = "ag") -> tuple[str, ...]:
    return tuple(f"{prefix}{i}" for i in range(n))


# -- agents ------------------------------------------------------------------------------


def test_agent_keeps_its_fields_and_formats_its_address() -> None:
    agent = Agent("ag0", "10.0.0.5", 8092, MachineType.M2000, serial="SN123")
    assert (agent.machine_type, agent.serial, agent.address) == (
        MachineType.M2000,
        "SN123",
        "10.0.0.5:8092",
    )
    assert Agent("ag1", "::1", 8092).address == "[::1]:8092"
    assert Agent("ag2", "m2.pod", 1).machine_type is MachineType.BOW2000


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"id": "bad id"}, "agent id 'bad id' is not valid"),
        ({"host": ""}, "give a host name or IP address"),
        ({"host": "a b"}, "without spaces"),
        ({"host": "h" * 254}, "at most 253 characters"),
        ({"port": 0}, "agent ag0 has port 0: use a port in 1..65535"),
        ({"port": 70000}, "use a port in 1..65535"),
    ],
)
def test_agent_refuses_bad_fields(kwargs: dict[str, Any], message: str) -> None:
    fields = {"id": "ag0", "host": "localhost", "port": 8092, **kwargs}
    with pytest.raises(InvalidSpec, match=message):
        Agent(**fields)


# -- clusters ----------------------------------------------------------------------------


def test_cluster_builds_its_pod_in_cabling_order() -> None:
    """Agent i drives machine i; domains are consecutive runs of machines."""
    cluster = Cluster("c1", agents(32), num_domains=2)
    pod = cluster.pod()
    assert pod.name == "c1"
    assert (pod.num_machines, len(pod.domains), cluster.num_ipus) == (32, 2, 128)
    assert pod.gw_topology is GwTopology.LOOPED
    assert cluster.machine_of("ag17") == 17
    assert cluster.agent_of(17) == "ag17"
    assert pod.domain_of_machine(cluster.machine_of("ag17")).index == 1
    assert cluster.domain_agents(1) == agents(32)[16:]
    assert cluster.pod() is pod


def test_cluster_keeps_its_topologies_and_machine_type() -> None:
    cluster = Cluster(
        "c2",
        agents(8),
        num_domains=2,
        ild_topology=IldTopology.MESH,
        gw_topology=GwTopology.SWITCHED,
        machine_type=MachineType.M2000,
    )
    pod = cluster.pod()
    assert all(d.topology is IldTopology.MESH for d in pod.domains)
    assert pod.gw_topology is GwTopology.SWITCHED
    assert pod.machine_type is MachineType.M2000


def test_cluster_agent_ids_become_a_tuple_and_compare_by_value() -> None:
    listed = Cluster("c1", list(agents(4)))  # type: ignore[arg-type]
    assert listed.agent_ids == agents(4)
    assert listed == Cluster("c1", agents(4))
    assert hash(listed) == hash(Cluster("c1", agents(4)))


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"id": "-c"}, "cluster id '-c' is not valid"),
        ({"agent_ids": ()}, "cluster c1 has no agents"),
        ({"agent_ids": ("a1", "a2", "a1")}, "agent 'a1' is listed twice"),
        ({"agent_ids": ("a1", "bad agent")}, "agent id 'bad agent' is not valid"),
        (
            {"agent_ids": agents(32)},
            r"cluster c1 \(32 agents\): an IPU-Link domain holds at most 16 machines, not 32:"
            " use at least 2 domains",
        ),
        ({"agent_ids": agents(10), "num_domains": 3}, "cannot be split into 3 equal"),
        ({"agent_ids": agents(4), "num_domains": 0}, "cannot be split into 0 equal"),
        (
            {"agent_ids": agents(128), "num_domains": 8},
            "looped GW-Links join at most 256 IPUs, not 512: use switched",
        ),
    ],
)
def test_cluster_refuses_what_cannot_be_cabled(kwargs: dict[str, Any], message: str) -> None:
    fields = {"id": "c1", "agent_ids": agents(4), **kwargs}
    with pytest.raises(InvalidSpec, match=message):
        Cluster(**fields)


def test_cluster_lookups_name_the_cluster_when_they_fail() -> None:
    cluster = Cluster("c1", agents(2))
    with pytest.raises(
        InvalidSpec, match="agent ag9 is not in cluster c1: its agents are ag0, ag1"
    ):
        cluster.machine_of("ag9")
    with pytest.raises(InvalidSpec, match=r"cluster c1 has no machine 2: use 0\.\.1"):
        cluster.agent_of(2)
    with pytest.raises(InvalidSpec, match=r"no IPU-Link domain 1: use 0\.\.0"):
        cluster.domain_agents(1)


def test_cluster_checks_its_agents_are_registered_and_alike() -> None:
    """Every agent must exist and drive the cluster's machine type."""
    cluster = Cluster("c1", ("a", "b"))
    registry = {"a": Agent("a", "h1", 1), "b": Agent("b", "h2", 1)}
    cluster.check_agents(registry)
    with pytest.raises(InvalidSpec, match="lists agent b, which is not registered"):
        cluster.check_agents({"a": registry["a"]})
    registry["b"] = Agent("b", "h2", 1, MachineType.M2000)
    with pytest.raises(InvalidSpec, match="agent b drives an IPU-M2000 but cluster c1 is made of"):
        cluster.check_agents(registry)


@pytest.mark.parametrize(
    ("machines", "expected"),
    [(1, GwTopology.LOOPED), (64, GwTopology.LOOPED), (65, GwTopology.SWITCHED)],
)
def test_default_gw_topology_is_looped_up_to_256_ipus(machines: int, expected: GwTopology) -> None:
    assert default_gw_topology(machines) is expected


# -- allocations -------------------------------------------------------------------------


def test_allocation_size_slots_and_agents() -> None:
    """Machines are kept sorted; size is 4 IPUs per machine."""
    cluster = Cluster("c1", agents(16))
    allocation = Allocation("al1", "c1", (5, 4))
    assert allocation.machines == (4, 5)
    assert allocation.size == 8
    assert list(allocation.slots()) == list(range(16, 24))
    assert allocation.agent_ids(cluster) == ("ag4", "ag5")
    assert allocation.holds_machine(5)
    assert not allocation.holds_machine(6)


@pytest.mark.parametrize(
    ("machines", "message"),
    [
        ((), "allocation size 0 is not supported: use 4, 8, 16, 32, 64"),
        ((0, 1, 2), "allocation al1 has 3 machines: allocation size 12 is not supported"),
        ((0, 0), "lists a machine twice"),
        ((-1,), "negative machine index"),
    ],
)
def test_allocation_refuses_bad_machine_lists(machines: tuple[int, ...], message: str) -> None:
    with pytest.raises(InvalidSpec, match=message):
        Allocation("al1", "c1", machines)


def test_allocation_refuses_bad_ids() -> None:
    with pytest.raises(InvalidSpec, match="allocation id"):
        Allocation("", "c1", (0,))
    with pytest.raises(InvalidSpec, match="cluster id"):
        Allocation("al1", "c 1", (0,))


@pytest.mark.parametrize(
    ("machines", "ok"),
    [
        ((0,), True),
        ((7,), True),
        ((2, 3), True),
        ((3, 4), False),  # not aligned to 2
        ((4, 5, 6, 7), True),
        ((2, 3, 4, 5), False),
        ((0, 1, 2, 4), False),  # not neighbours
        (tuple(range(8)), True),
        (tuple(range(8, 16)), True),
        (tuple(range(4, 12)), False),
        (tuple(range(12, 20)), False),  # crosses into domain 1
        (tuple(range(16)), True),
        (tuple(range(16, 32)), True),
        (tuple(range(32)), True),  # two whole domains
        (tuple(range(16)) + tuple(range(32, 48)), True),  # whole domains need not neighbour
        (tuple(range(8, 40)), False),  # parts of three domains
    ],
)
def test_allocation_shape_is_an_aligned_run_or_whole_domains(
    machines: tuple[int, ...], ok: bool
) -> None:
    """Up to a domain: neighbouring machines aligned to their count; beyond: whole domains."""
    pod = Cluster("c1", agents(64), num_domains=4).pod()
    allocation = Allocation("al1", "c1", machines)
    if ok:
        allocation.check_shape(pod)
    else:
        with pytest.raises(InvalidSpec, match="allocation al1"):
            allocation.check_shape(pod)


def test_allocation_shape_on_small_domains_needs_whole_domains() -> None:
    """On POD16 domains (4 machines) an allocation of 32 IPUs is two whole domains."""
    pod = Cluster("c1", agents(16), num_domains=4).pod()
    Allocation("al1", "c1", tuple(range(4, 12))).check_shape(pod)
    with pytest.raises(InvalidSpec, match="holds only part of domain 0"):
        Allocation("al1", "c1", tuple(range(2, 10))).check_shape(pod)


def test_allocation_outside_the_pod_is_refused() -> None:
    pod = Cluster("c1", agents(4)).pod()
    with pytest.raises(InvalidSpec, match=r"names machine 4, but cluster c1 has machines 0\.\.3"):
        Allocation("al1", "c1", (4,)).check_shape(pod)


# -- users -------------------------------------------------------------------------------


def test_user_sees_only_granted_allocations_unless_admin() -> None:
    """A plain user uses the allocations granted to it; an admin uses every allocation."""
    user = User("alice", ("al1", "al2"))
    assert user.can_use("al1")
    assert not user.can_use("al3")
    assert User("root", admin=True).can_use("al3")


def test_user_refuses_bad_or_repeated_ids() -> None:
    with pytest.raises(InvalidSpec, match="user id"):
        User("alice smith")
    with pytest.raises(InvalidSpec, match="allocation 'al1' is listed twice"):
        User("alice", ("al1", "al1"))
    assert User("bob", ["al1"]).allocation_ids == ("al1",)  # type: ignore[arg-type]
