"""A table of topology edge cases, walked one row at a time.

Each row names a pod, what is already in it, one request, and either the
exact placement expected (slots for a partition, machines for an
allocation) or a phrase the rejection must contain.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import pytest

from vpod.domain.topology import IldTopology, Pod, build_pod, shape
from vpod.placement import (
    AllocationPlacement,
    AllocationRequest,
    PartitionFootprint,
    PartitionPlacement,
    PartitionRequest,
    Rejected,
    Snapshot,
    place,
)


def run(first: int, count: int) -> tuple[int, ...]:
    return tuple(range(first, first + count))


def named(domain: int, first: int, count: int) -> tuple[tuple[int, int], ...]:
    return tuple((domain, first + i) for i in range(count))


@dataclass(frozen=True)
class Case:
    name: str
    pod: Callable[[], Pod]
    request: AllocationRequest | PartitionRequest
    expect: tuple[int, ...] | str
    allocations: Mapping[str, tuple[int, ...]] = field(default_factory=dict)
    partitions: Mapping[str, tuple[str, tuple[int, ...]]] = field(default_factory=dict)
    unavailable_slots: tuple[int, ...] = ()
    unavailable_machines: tuple[int, ...] = ()

    def snapshot(self) -> Snapshot:
        return Snapshot.build(
            self.pod(),
            allocations=self.allocations,
            partitions={
                pid: PartitionFootprint(aid, slots) for pid, (aid, slots) in self.partitions.items()
            },
            unavailable_slots=self.unavailable_slots,
            unavailable_machines=self.unavailable_machines,
        )


def pod64() -> Pod:
    return shape("pod64")


def pod64_mesh() -> Pod:
    return build_pod(16, topology=IldTopology.MESH, name="pod64")


def pod128() -> Pod:
    return shape("pod128")


def pod256() -> Pod:
    return shape("pod256")


def pod16() -> Pod:
    return shape("pod16")


def four_pod16s() -> Pod:
    return build_pod(16, num_domains=4, name="pod16x4")


def three_machine_domains() -> Pod:
    return build_pod(6, num_domains=2, name="odd")


WHOLE64 = {"a": run(0, 16)}

CASES = [
    # -- torus and mesh place alike: topology changes routing, not placement -----------
    Case("torus: 8 IPUs at the start", pod64, PartitionRequest("p", 8, "a"), run(0, 8), WHOLE64),
    Case("mesh: same answer", pod64_mesh, PartitionRequest("p", 8, "a"), run(0, 8), WHOLE64),
    Case("torus: whole domain", pod64, PartitionRequest("p", 64, "a"), run(0, 64), WHOLE64),
    Case("mesh: whole domain", pod64_mesh, PartitionRequest("p", 64, "a"), run(0, 64), WHOLE64),
    # -- alignment inside a partly used domain ------------------------------------------
    Case(
        "8 IPUs are two neighbouring machines aligned to 8",
        pod64,
        PartitionRequest("p", 8, "a"),
        run(8, 8),
        {"a": run(0, 4)},
        {"q": ("a", (0,))},
    ),
    Case(
        "best fit: a pair goes into the lone free pair, not a free machine",
        pod64,
        PartitionRequest("p", 2, "a"),
        (2, 3),
        WHOLE64,
        {"q": ("a", (0,))},
    ),
    Case(
        "a 16 does not straddle an aligned boundary",
        pod64,
        PartitionRequest("p", 16, "a"),
        "no aligned block of 16 free IPUs in allocation a; largest free block: 8 IPUs"
        " (machines m2-m3)",
        {"a": run(0, 8)},
        {"q": ("a", (4,)), "r": ("a", (16,))},
    ),
    Case(
        "an allocation smaller than the request",
        pod64,
        PartitionRequest("p", 16, "a"),
        "allocation a has only 8 IPUs",
        {"a": (0, 1)},
    ),
    Case(
        "allocation in a partly allocated domain: best fit takes the tight run",
        pod64,
        AllocationRequest("b", size=16),
        run(4, 4),
        {"a": run(0, 4)},
    ),
    Case(
        "allocation of 32 needs 8 aligned machines",
        pod64,
        AllocationRequest("b", size=32),
        "no run of 8 free neighbouring machines aligned to 8 in cluster pod64; largest:"
        " 4 machines (m0-m3)",
        {"a": (4,), "c": (12,)},
    ),
    # -- several domains -----------------------------------------------------------------
    Case(
        "128 IPUs: one segment of 64 in each of two domains",
        pod128,
        PartitionRequest("p", 128, "a", num_gcds=2),
        run(0, 128),
        {"a": run(0, 32)},
    ),
    Case(
        "128 IPUs need two wholly free domains",
        pod128,
        PartitionRequest("p", 128, "a", num_gcds=2),
        "only 1 IPU-Link domain of allocation a has an aligned block of 64 free IPUs",
        {"a": run(0, 32)},
        {"q": ("a", (70,))},
    ),
    Case(
        "two segments of 8 from two domains",
        pod128,
        PartitionRequest("p", 16, "a", num_segments=2, num_gcds=2),
        (*run(0, 8), *run(64, 8)),
        {"a": run(0, 32)},
    ),
    Case(
        "segments cannot come from an allocation inside one domain",
        pod128,
        PartitionRequest("p", 16, "a", num_segments=2, num_gcds=2),
        "allocation a spans 1 IPU-Link domain: 2 segments need 2 distinct domains",
        {"a": run(0, 8)},
    ),
    Case(
        "a k x 64 allocation takes whole free domains",
        pod256,
        AllocationRequest("b", size=128),
        run(16, 32),
        {"a": (3,)},
    ),
    Case(
        "a k x 64 allocation says how many domains are free",
        pod256,
        AllocationRequest("b", size=192),
        "takes 3 whole IPU-Link domains of 64 IPUs; only 2 are free",
        {"a": (3,), "c": (20,)},
    ),
    # -- POD16 racks: domains of 16 IPUs ----------------------------------------------
    Case(
        "pod16: a 64 does not fit one rack",
        pod16,
        AllocationRequest("b", size=64),
        "cluster pod16 has only 16 IPUs",
    ),
    Case(
        "four pod16 racks: an allocation of 64 takes the four domains",
        four_pod16s,
        AllocationRequest("b", size=64),
        run(0, 16),
    ),
    Case(
        "four pod16 racks: a 64 in one segment is refused with a hint",
        four_pod16s,
        PartitionRequest("p", 64, "a"),
        "ask for 4 IPU-Link segments of 16 IPUs",
        WHOLE64,
    ),
    Case(
        "four pod16 racks: a 64 in four segments of 16",
        four_pod16s,
        PartitionRequest("p", 64, "a", num_segments=4, num_gcds=4),
        run(0, 64),
        WHOLE64,
    ),
    Case(
        "domains of 3 machines: 8 IPUs at an aligned pair of the next domain",
        three_machine_domains,
        AllocationRequest("b", size=8),
        (3, 4),
        {"a": (0, 1)},
    ),
    Case(
        "domains of 3 machines: 16 IPUs cannot be made of whole domains of 12",
        three_machine_domains,
        AllocationRequest("b", size=16),
        "does not split into whole IPU-Link domains of 12 IPUs",
    ),
    # -- explicit IPUs and machines ------------------------------------------------------
    Case(
        "named IPUs, right",
        pod64,
        PartitionRequest("p", 8, "a", ipus=named(0, 8, 8)),
        run(8, 8),
        WHOLE64,
    ),
    Case(
        "named IPUs, not aligned",
        pod64,
        PartitionRequest("p", 8, "a", ipus=named(0, 4, 8)),
        "segment 0 is not 8 consecutive IPUs starting at a multiple of 8",
        WHOLE64,
    ),
    Case(
        "named IPUs, out of order",
        pod64,
        PartitionRequest("p", 2, "a", ipus=((0, 1), (0, 0))),
        "segment 0 is not 2 consecutive IPUs",
        WHOLE64,
    ),
    Case(
        "named IPUs outside the allocation",
        pod64,
        PartitionRequest("p", 4, "a", ipus=named(0, 16, 4)),
        "IPUs (0, 16), (0, 17), (0, 18), (0, 19) on machine m4 are outside allocation a",
        {"a": run(0, 4)},
    ),
    Case(
        "named IPU already in a partition",
        pod64,
        PartitionRequest("p", 2, "a", ipus=named(0, 2, 2)),
        "IPU (0, 3) on machine m0 is already in partition q",
        WHOLE64,
        {"q": ("a", (3,))},
    ),
    Case(
        "named IPU unavailable",
        pod64,
        PartitionRequest("p", 1, "a", ipus=named(0, 5, 1)),
        "IPU (0, 5) on machine m1 is unavailable",
        WHOLE64,
        unavailable_slots=(5,),
    ),
    Case(
        "named segments in two domains, routing order kept",
        pod128,
        PartitionRequest(
            "p", 8, "a", num_segments=2, num_gcds=2, ipus=named(1, 4, 4) + named(0, 0, 4)
        ),
        (68, 69, 70, 71, 0, 1, 2, 3),
        {"a": run(0, 32)},
    ),
    Case(
        "named segments in one domain",
        pod128,
        PartitionRequest(
            "p", 8, "a", num_segments=2, num_gcds=2, ipus=named(0, 4, 4) + named(0, 0, 4)
        ),
        "segments 0 and 1 are both in IPU-Link domain 0",
        {"a": run(0, 32)},
    ),
    Case(
        "named machines, right",
        pod64,
        AllocationRequest("b", machines=(6, 7)),
        (6, 7),
    ),
    Case(
        "named machines already taken",
        pod64,
        AllocationRequest("b", machines=(2, 3)),
        "machine m3 is already in allocation a",
        {"a": (3,)},
    ),
    Case(
        "named machines not aligned",
        pod64,
        AllocationRequest("b", machines=(5, 6)),
        "must be neighbours aligned to 2 in their IPU-Link domain: for example machines m4-m5",
    ),
    Case(
        "named machines across domains must take them whole",
        pod128,
        AllocationRequest("b", machines=(15, 16)),
        "takes them whole, but the machines named take only part of domains 0 and 1",
    ),
    # -- unavailable hardware -------------------------------------------------------------
    Case(
        "an unavailable machine blocks the run around it",
        pod64,
        AllocationRequest("b", size=32),
        run(8, 8),
        unavailable_machines=(0,),
    ),
    Case(
        "a machine with a faulty IPU is not allocated",
        pod64,
        AllocationRequest("b", size=64),
        "no run of 16 free neighbouring machines aligned to 16 in cluster pod64; largest:"
        " 8 machines (m0-m7)",
        unavailable_slots=(45,),
    ),
    Case(
        "named machine unavailable",
        pod64,
        AllocationRequest("b", machines=(0,)),
        "machine m0 is unavailable",
        unavailable_machines=(0,),
    ),
    Case(
        "partitions avoid an unavailable IPU",
        pod64,
        PartitionRequest("p", 4, "a"),
        run(4, 4),
        {"a": run(0, 4)},
        unavailable_slots=(1,),
    ),
    Case(
        "a pair goes beside the unavailable IPU's free pair",
        pod64,
        PartitionRequest("p", 2, "a"),
        (2, 3),
        {"a": run(0, 4)},
        unavailable_slots=(1,),
    ),
    Case(
        "rejection counts unavailable IPUs",
        pod64,
        PartitionRequest("p", 4, "a"),
        "largest free block: 2 IPUs (machine m0) (1 IPU of it unavailable)",
        {"a": (0,)},
        {"q": ("a", (0,))},
        unavailable_slots=(1,),
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_edge_case(case: Case) -> None:
    """Each row places exactly where it says, or is rejected with the reason it names."""
    result = place(case.snapshot(), case.request)
    if isinstance(case.expect, str):
        assert isinstance(result, Rejected), result
        assert case.expect in str(result)
    elif isinstance(result, PartitionPlacement):
        assert result.slots == case.expect
    else:
        assert isinstance(result, AllocationPlacement), result
        assert result.machines == case.expect
