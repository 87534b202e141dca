"""The engine's entry points: request checks, GCDs, policies, place_many and relocate."""

from __future__ import annotations

import pytest

from vpod.domain.errors import InvalidSpec
from vpod.domain.topology import shape
from vpod.placement import (
    BEST_FIT,
    FIRST_FIT,
    TIGHTEST_FIT,
    AllocationPlacement,
    AllocationRequest,
    PartitionFootprint,
    PartitionPlacement,
    PartitionRequest,
    Policy,
    Rejected,
    Segment,
    Snapshot,
    place,
    place_many,
    relocate,
)


def whole(pod_shape: str) -> Snapshot:
    pod = shape(pod_shape)
    return Snapshot.build(pod, allocations={"a": range(pod.num_machines)})


def slots_of(result: object) -> tuple[int, ...]:
    assert isinstance(result, PartitionPlacement), result
    return result.slots


@pytest.mark.parametrize(
    ("request_", "message"),
    [
        (PartitionRequest("p", 3, "a"), "partition size 3 is not supported"),
        (PartitionRequest("p", 32, "a"), "partition size 32 is not supported"),
        (PartitionRequest("p", 64, "a", num_segments=3), "cannot be split into 3"),
        (PartitionRequest("p", 64, "a", num_segments=2), "segments of 32 IPUs are not supported"),
        (PartitionRequest("p", 128, "a", num_segments=1), "segments of 128 IPUs"),
        (PartitionRequest("p", 128, "a"), "use num_gcds 2, 8, 16, 32, 64 or 128"),
        (PartitionRequest("p", 8, "a", num_gcds=3), "3 GCDs do not divide 8 IPUs"),
        (
            PartitionRequest("p", 128, "a", num_gcds=2, reconfigurable=True),
            "a reconfigurable partition lives in one IPU-Link domain",
        ),
        (PartitionRequest("p", 2, "a", ipus=((0, 0),)), "1 IPUs were named"),
        (PartitionRequest("p", 2, "a", ipus=((0, 0), (0, 0))), "an IPU is named twice"),
        (PartitionRequest("p", 1, "a", ipus=((5, 0),)), "IPU-Link domain 5 does not exist"),
        (AllocationRequest("b"), "give a size or the machines"),
        (AllocationRequest("b", size=12), "allocation size 12 is not supported"),
        (AllocationRequest("b", size=8, machines=(0,)), "size 8 does not match"),
        (AllocationRequest("b", machines=(0, 0)), "a machine is named twice"),
        (AllocationRequest("b", machines=(99,)), "machine 99 is outside the pod"),
        (AllocationRequest("a", size=4), "allocation a already exists"),
    ],
)
def test_impossible_requests_are_caller_bugs(
    request_: PartitionRequest | AllocationRequest, message: str
) -> None:
    """Requests that could never be placed raise InvalidSpec, not Rejected."""
    snapshot = Snapshot.build(shape("pod128"), allocations={"a": range(8)})
    with pytest.raises(InvalidSpec, match=message):
        place(snapshot, request_)


def test_an_existing_partition_id_is_a_caller_bug() -> None:
    snapshot = whole("pod64")
    snapshot = snapshot.apply(place(snapshot, PartitionRequest("p", 1, "a")))  # type: ignore[arg-type]
    with pytest.raises(InvalidSpec, match="partition p already exists"):
        place(snapshot, PartitionRequest("p", 1, "a"))


def test_gcds_are_consecutive_routing_ids_and_segments_route_in_order() -> None:
    """GCD g holds routing ids g*size..; segment i is ipulink_domain_routing_id i."""
    result = place(whole("pod256"), PartitionRequest("p", 128, "a", num_gcds=8))
    assert isinstance(result, PartitionPlacement)
    assert [seg.domain for seg in result.segments] == [0, 1]
    assert result.gcds == tuple(tuple(range(g * 16, g * 16 + 16)) for g in range(8))
    assert result.gcd_slots(5) == tuple(range(80, 96))
    assert result.segments[1] == Segment(1, tuple(range(64, 128)))


def test_best_fit_keeps_large_blocks_free_where_first_fit_splits_them() -> None:
    """With a lone free pair and a free machine, best fit fills the pair; first fit does not."""
    snapshot = Snapshot.build(
        shape("pod64"),
        allocations={"a": range(2)},
        partitions={"q": PartitionFootprint("a", (6, 7))},
    )
    request = PartitionRequest("p", 2, "a")
    assert slots_of(place(snapshot, request)) == (4, 5)
    assert slots_of(place(snapshot, request, policy=BEST_FIT)) == (4, 5)
    assert slots_of(place(snapshot, request, policy=FIRST_FIT)) == (0, 1)


def two_domains(light: int, heavy: int) -> Snapshot:
    """A pod128 allocation with one used IPU in domain ``light`` and 33 in domain ``heavy``."""
    first = 64 * heavy
    return Snapshot.build(
        shape("pod128"),
        allocations={"a": range(32)},
        partitions={
            "light": PartitionFootprint("a", (64 * light,)),
            "heavy": PartitionFootprint("a", (first, *range(first + 32, first + 64))),
        },
    )


def test_equal_fits_go_to_the_lowest_domain_by_default() -> None:
    """Among equally tight fits the default takes the lowest domain, however full."""
    request = PartitionRequest("p", 1, "a")
    assert slots_of(place(two_domains(light=0, heavy=1), request)) == (1,)
    assert slots_of(place(two_domains(light=1, heavy=0), request)) == (1,)


def test_policy_orders_are_tunable() -> None:
    """Other orders rank equal fits by fullness, or ignore fit altogether."""
    request = PartitionRequest("p", 1, "a")
    fullest = Policy("fullest", order=("fit", "fullest"))
    emptiest = Policy("emptiest", order=("emptiest",))
    assert slots_of(place(two_domains(light=0, heavy=1), request, policy=fullest)) == (65,)
    assert slots_of(place(two_domains(light=1, heavy=0), request, policy=fullest)) == (1,)
    assert slots_of(place(two_domains(light=0, heavy=1), request, policy=emptiest)) == (1,)
    assert slots_of(place(two_domains(light=1, heavy=0), request, policy=emptiest)) == (65,)


def test_fit_beats_domain_order_under_tightest_fit() -> None:
    """Under TIGHTEST_FIT a tight hole in a high domain wins over splitting a block in a low one."""
    snapshot = Snapshot.build(
        shape("pod128"),
        allocations={"a": range(32)},
        partitions={"q": PartitionFootprint("a", (0, 1)), "r": PartitionFootprint("a", (65,))},
    )
    tightest = place(snapshot, PartitionRequest("p", 1, "a"), policy=TIGHTEST_FIT)
    assert slots_of(tightest) == (64,)
    assert slots_of(place(snapshot, PartitionRequest("p", 1, "a"))) == (2,)
    first = place(snapshot, PartitionRequest("p", 1, "a"), policy=FIRST_FIT)
    assert slots_of(first) == (2,)


def test_allocations_follow_the_same_policy() -> None:
    """A small allocation fills the tightest run of machines, lowest domain on ties."""
    snapshot = Snapshot.build(shape("pod128"), allocations={"x": range(16, 24), "y": range(1)})
    result = place(snapshot, AllocationRequest("b", size=4))
    assert isinstance(result, AllocationPlacement)
    assert result.machines == (1,)
    fullest = Policy("fullest", order=("fit", "fullest"))
    result = place(snapshot, AllocationRequest("b", size=32))
    assert isinstance(result, AllocationPlacement)
    assert result.machines == tuple(range(8, 16))
    result = place(snapshot, AllocationRequest("b", size=32), policy=fullest)
    assert isinstance(result, AllocationPlacement)
    assert result.machines == tuple(range(24, 32))


def test_place_many_sees_earlier_successes_and_skips_rejections() -> None:
    """Each request sees the ones before it; a rejected one takes nothing."""
    snapshot = Snapshot.build(shape("pod64"), allocations={"a": range(4)})
    results = place_many(
        snapshot,
        [
            PartitionRequest("p1", 8, "a"),
            PartitionRequest("p2", 16, "a"),
            PartitionRequest("p3", 8, "a"),
            PartitionRequest("p4", 1, "a"),
        ],
    )
    assert slots_of(results[0]) == tuple(range(8))
    assert isinstance(results[1], Rejected)
    assert slots_of(results[2]) == tuple(range(8, 16))
    assert isinstance(results[3], Rejected)
    assert snapshot.partition_ids() == []


def test_relocate_moves_off_failing_ipus_keeping_the_shape() -> None:
    """A partition moves to healthy IPUs of its allocation with the same segments and GCDs."""
    snapshot = whole("pod256")
    snapshot = snapshot.apply(place(snapshot, PartitionRequest("p", 128, "a", num_gcds=2)))  # type: ignore[arg-type]
    moved = relocate(snapshot, "p", avoid_slots={3})
    assert isinstance(moved, PartitionPlacement)
    assert [seg.domain for seg in moved.segments] == [1, 2]
    assert moved.request.num_segments == 2
    assert moved.gcds == (tuple(range(64)), tuple(range(64, 128)))
    committed = snapshot.release_partition("p").apply(moved)
    assert committed.partition("p").slots == moved.slots


def test_relocate_may_stay_on_its_own_healthy_ipus() -> None:
    """The partition's own IPUs count as free: with nothing failing it stays where it is."""
    snapshot = Snapshot.build(
        shape("pod64"),
        allocations={"a": [0, 1]},
        partitions={"p": PartitionFootprint("a", (2, 3)), "q": PartitionFootprint("a", (0,))},
    )
    assert slots_of(relocate(snapshot, "p")) == (2, 3)
    assert slots_of(relocate(snapshot, "p", avoid_slots={3})) == (4, 5)


def test_relocate_without_room_says_why() -> None:
    snapshot = Snapshot.build(
        shape("pod64"),
        allocations={"a": [0, 1]},
        partitions={"p": PartitionFootprint("a", (0, 1, 2, 3)), "q": PartitionFootprint("a", (4,))},
    )
    moved = relocate(snapshot, "p", avoid_slots={0})
    assert isinstance(moved, Rejected)
    assert moved.reasons[0].startswith(
        "partition p cannot move: no aligned block of 4 free IPUs in allocation a"
    )


def test_same_request_same_answer() -> None:
    """Placement is a pure function: repeated calls and rebuilt snapshots agree."""
    facts = {"a": list(range(32))}
    one = Snapshot.build(shape("pod128"), allocations=facts)
    two = Snapshot.build(shape("pod128"), allocations={"a": list(reversed(range(32)))})
    requests = [PartitionRequest(f"p{i}", size, "a") for i, size in enumerate([1, 4, 2, 16, 1, 8])]
    assert place_many(one, requests) == place_many(two, requests) == place_many(one, requests)
