"""Pod shapes and IPU identities."""

import pytest

from vpod.domain.catalog import MachineType
from vpod.domain.errors import InvalidSpec
from vpod.domain.topology import GwTopology, IldTopology, build_pod, shape


@pytest.mark.parametrize(
    ("name", "machines", "domains", "gw"),
    [
        ("pod16", 4, 1, GwTopology.LOOPED),
        ("pod64", 16, 1, GwTopology.LOOPED),
        ("pod128", 32, 2, GwTopology.LOOPED),
        ("pod256", 64, 4, GwTopology.LOOPED),
        ("pod1024", 256, 16, GwTopology.SWITCHED),
        ("pod4096", 1024, 64, GwTopology.SWITCHED),
    ],
)
def test_ready_made_shapes(name: str, machines: int, domains: int, gw: GwTopology) -> None:
    """Each shape has the machines, domains and GW topology of the real pod."""
    pod = shape(name)
    assert pod.num_machines == machines
    assert len(pod.domains) == domains
    assert pod.gw_topology is gw
    assert pod.machine_type is MachineType.BOW2000


def test_m2000_prefix_picks_machine_type() -> None:
    assert shape("m2000-pod64").machine_type is MachineType.M2000
    assert shape("m2000-pod4096").machine_type is MachineType.M2000


def test_pod4096_is_the_whole_fabric() -> None:
    """The seeds' fabric: 1,024 machines (the limit), 64 domains of 16, the last IPU's identity."""
    pod = shape("pod4096")
    assert pod.num_ipus == 4096
    assert {d.num_machines for d in pod.domains} == {16}
    last = pod.ipu(4095)
    assert (last.machine, last.domain, last.position, last.device_id) == (1023, 63, 63, 0)
    assert pod.slot_of(63, 63) == 4095
    with pytest.raises(InvalidSpec, match="at most 1024 machines"):
        build_pod(1028, num_domains=257)


def test_device_ids_run_3_to_0_in_ladder_order() -> None:
    """Routing order inside a machine visits IPUoF devices 3, 2, 1, 0."""
    pod = shape("pod128")
    assert [pod.ipu(s).device_id for s in range(8)] == [3, 2, 1, 0, 3, 2, 1, 0]
    ref = pod.ipu(64 + 5)
    assert (ref.machine, ref.domain, ref.position, ref.device_id) == (17, 1, 5, 2)
    assert pod.slot_of(1, 5) == 69
    assert pod.slot_of_device(17, 2) == 69


def test_every_slot_round_trips() -> None:
    pod = shape("pod256")
    for slot in range(pod.num_ipus):
        ref = pod.ipu(slot)
        assert pod.slot_of(ref.domain, ref.position) == slot
        assert pod.slot_of_device(ref.machine, ref.device_id) == slot


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"num_machines": 32, "num_domains": 1}, "at most 16 machines"),
        ({"num_machines": 10, "num_domains": 3}, "cannot be split"),
        ({"num_machines": 2048, "num_domains": 128}, "at most 1024 machines"),
        (
            {"num_machines": 128, "num_domains": 8, "gw_topology": GwTopology.LOOPED},
            "use switched",
        ),
    ],
)
def test_impossible_pods_are_refused_with_a_reason(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(InvalidSpec, match=message):
        build_pod(**kwargs)  # type: ignore[arg-type]


def test_unknown_shape_lists_the_known_ones() -> None:
    with pytest.raises(InvalidSpec, match="use pod16, pod64"):
        shape("pod32")


def test_mesh_topology_is_kept() -> None:
    pod = build_pod(8, num_domains=2, topology=IldTopology.MESH)
    assert all(d.topology is IldTopology.MESH for d in pod.domains)
