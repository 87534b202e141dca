"""Choosing hosts for GPU and bare-metal Poplar servers: whole hosts, slices, IB fabrics."""

from __future__ import annotations

from vpod.cloud.flavors import HostRole, find_flavor
from vpod.cloud.host_placement import HostView, ServerChoice, capacity, place_servers
from vpod.placement import Rejected

H100_BM = find_flavor("bm3-ai-1xlarge-h100-80-8")
A100_PCIE = find_flavor("bm2-ai-large-a100-40-8")
H100_VM2 = find_flavor("g3-ai-48-464-2500-h100-80-2")
DEDICATED = find_flavor("bm1-ai-small-v1pod-4")
BM, HV = HostRole.BAREMETAL, HostRole.HYPERVISOR


def host(
    host_id: str,
    model: str = "h100-80",
    fabric: str | None = None,
    *,
    role: HostRole = BM,
    slots: int = 8,
    used: int = 0,
    enabled: bool = True,
) -> HostView:
    return HostView(host_id, role, model, fabric, slots, tuple(range(used, slots)), enabled)


def hosts_of(result: list[ServerChoice] | Rejected) -> list[str]:
    assert not isinstance(result, Rejected), result
    return [c.host_id for c in result]


def test_an_ib_cluster_stays_in_one_fabric_the_fullest_that_fits() -> None:
    """Two servers: fabric B (2 free) is chosen over A (3 free) - best fit keeps A whole."""
    hosts = [host(f"a{i}", fabric="A") for i in range(3)] + [
        host(f"b{i}", fabric="B") for i in range(2)
    ]
    assert hosts_of(place_servers(hosts, H100_BM, 2)) == ["b0", "b1"]
    assert hosts_of(place_servers(hosts, H100_BM, 3)) == ["a0", "a1", "a2"]


def test_no_fabric_has_room_even_if_all_fabrics_together_would() -> None:
    """Four servers never split across two fabrics of 3 and 2 free hosts."""
    hosts = [host(f"a{i}", fabric="A") for i in range(3)] + [
        host(f"b{i}", fabric="B") for i in range(2)
    ]
    result = place_servers(hosts, H100_BM, 4)
    assert isinstance(result, Rejected)
    assert "no InfiniBand fabric has room for 4 servers" in str(result)


def test_growing_a_cluster_is_pinned_to_its_fabric() -> None:
    """A resize lands in the cluster's fabric or nowhere."""
    hosts = [host("a0", fabric="A"), host("b0", fabric="B"), host("b1", fabric="B")]
    assert hosts_of(place_servers(hosts, H100_BM, 1, fabric="A")) == ["a0"]
    refused = place_servers(hosts, H100_BM, 2, fabric="A")
    assert isinstance(refused, Rejected)
    assert "fabric A, where the cluster's servers are" in str(refused)


def test_bare_metal_takes_whole_free_hosts_of_its_model_only() -> None:
    """A partly used, disabled or other-model host is never given to bare metal."""
    hosts = [
        host("used", "a100-40", used=1),
        host("off", "a100-40", enabled=False),
        host("other", "l40s-48"),
        host("free", "a100-40"),
    ]
    result = place_servers(hosts, A100_PCIE, 1)
    assert hosts_of(result) == ["free"]
    assert not isinstance(result, Rejected)
    assert result[0].slots == tuple(range(8))
    assert isinstance(place_servers(hosts, A100_PCIE, 2), Rejected)


def test_vms_pack_onto_the_fullest_hypervisor() -> None:
    """Two-GPU VMs fill the hypervisor with fewest free GPUs first."""
    hosts = [host("hv1", role=HV, used=4), host("hv2", role=HV)]
    result = place_servers(hosts, H100_VM2, 3)
    assert not isinstance(result, Rejected)
    assert [(c.host_id, c.slots) for c in result] == [
        ("hv1", (4, 5)),
        ("hv1", (6, 7)),
        ("hv2", (0, 1)),
    ]


def test_no_registered_host_of_the_model_says_so() -> None:
    """The refusal tells the tenant to ask the administrator."""
    result = place_servers([host("x", "l40s-48")], DEDICATED, 1)
    assert isinstance(result, Rejected)
    assert "no baremetal host of model poplar is registered" in str(result)


def test_capacity_counts_servers_that_fit_one_at_a_time() -> None:
    """Free whole hosts for bare metal; slices for VMs."""
    hosts = [host("a", fabric="A"), host("b", used=1), host("hv", role=HV, used=3)]
    assert capacity(hosts, H100_BM) == 1
    assert capacity(hosts, H100_VM2) == 2
