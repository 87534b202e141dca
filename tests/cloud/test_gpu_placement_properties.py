"""GPU placement from live inventory, property-tested: however hosts, held slots and GPU
health are drawn, servers placed one after another never share a GPU, never get an unhealthy
one (nor one of a host whose agent is silent), and a bare-metal server takes a whole host."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from vpod.cloud.flavors import HostRole, find_flavor
from vpod.cloud.gpu_rules import GpuState, unusable_slots
from vpod.cloud.host_placement import HostView, capacity, place_servers
from vpod.placement import Rejected

FLAVORS = [
    find_flavor("g3-ai-24-232-1250-h100-80-1"),
    find_flavor("g3-ai-48-464-2500-h100-80-2"),
    find_flavor("bm3-ai-1xlarge-h100-80-8"),
]


@st.composite
def fleets(draw: st.DrawFn) -> tuple[list[HostView], dict[str, set[int]]]:
    """Hosts (each with an agent) and the slots that must not be handed out."""
    hosts: list[HostView] = []
    bad: dict[str, set[int]] = {}
    for index in range(draw(st.integers(1, 5))):
        host_id = f"h{index}"
        slots = draw(st.integers(1, 8))
        role = draw(st.sampled_from([HostRole.BAREMETAL, HostRole.HYPERVISOR]))
        held = draw(st.sets(st.integers(0, slots - 1)))
        gpus = [
            GpuState(i, f"GPU-{index}-{i}", draw(st.booleans()) or draw(st.booleans()), "XID 79")
            for i in range(slots)
        ]
        silent = draw(st.sampled_from([None, None, None, 30.0]))
        unusable = unusable_slots(host_id, gpus, silent, slots)
        bad[host_id] = set(unusable)
        free = tuple(s for s in range(slots) if s not in held and s not in unusable)
        fabric = draw(st.sampled_from(["ib-1", "ib-2"]))
        hosts.append(HostView(host_id, role, "h100-80", fabric, slots, free))
    return hosts, bad


@settings(max_examples=300, deadline=None)
@given(fleets(), st.sampled_from(FLAVORS), st.integers(1, 6))
def test_servers_placed_one_by_one_never_share_a_gpu_nor_get_an_unhealthy_one(
    fleet: tuple[list[HostView], dict[str, set[int]]], flavor: object, requests: int
) -> None:
    hosts, bad = fleet
    taken: set[tuple[str, int]] = set()
    for _ in range(requests):
        before = capacity(hosts, flavor)  # type: ignore[arg-type]
        placed = place_servers(hosts, flavor, 1)  # type: ignore[arg-type]
        if isinstance(placed, Rejected):
            assert before == 0
            break
        assert before >= 1
        (choice,) = placed
        host = next(h for h in hosts if h.id == choice.host_id)
        gpus = {(choice.host_id, s) for s in choice.slots}
        assert not gpus & taken, "two servers share a GPU"
        assert not set(choice.slots) & bad[choice.host_id], "an unhealthy GPU was handed out"
        if flavor.bare_metal:  # type: ignore[attr-defined]
            assert set(choice.slots) == set(range(host.slots))
        else:
            assert len(choice.slots) == flavor.gpus_per_server  # type: ignore[attr-defined]
        taken |= gpus
        hosts = [
            replace(h, free=tuple(s for s in h.free if s not in choice.slots))
            if h.id == choice.host_id
            else h
            for h in hosts
        ]


def test_unusable_slots_name_the_gpu_and_its_error_or_the_silent_agent() -> None:
    gpus = [GpuState(0, "GPU-a", True, ""), GpuState(1, "GPU-b", False, "XID 79 (lost)")]
    assert unusable_slots("h1", gpus, None, 3) == {
        1: "GPU 1 (GPU-b) of host h1: XID 79 (lost)",
        2: "GPU 2 of host h1 is missing from its inventory",
    }
    silent = unusable_slots("h1", gpus, 42.0, 2)
    assert silent == dict.fromkeys((0, 1), "the GPU agent of host h1 is silent (42 s)")
