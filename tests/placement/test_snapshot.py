"""Snapshots: building from facts, applying and releasing, faults, queries, conflicts."""

from __future__ import annotations

import pytest

from vpod.domain.errors import IllegalTransition, InvalidSpec
from vpod.domain.topology import build_pod, shape
from vpod.placement import (
    AllocationPlacement,
    AllocationRequest,
    FreeBlock,
    FreeRun,
    PartitionFootprint,
    PartitionPlacement,
    PartitionRequest,
    PlacementConflict,
    Rejected,
    Snapshot,
    place,
)


def whole_pod64() -> Snapshot:
    return Snapshot.build(shape("pod64"), allocations={"a": range(16)})


def placed(snapshot: Snapshot, request: PartitionRequest) -> PartitionPlacement:
    result = place(snapshot, request)
    assert isinstance(result, PartitionPlacement), result
    return result


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"allocations": {"a": [1], "b": [1]}}, "machine m1 is in two allocations: a and b"),
        ({"allocations": {"a": [99]}}, "machine 99 is outside the pod"),
        ({"allocations": {"a": []}}, "allocation a holds no machine"),
        (
            {"allocations": {"a": [0]}, "partitions": {"p": PartitionFootprint("b", (0,))}},
            "allocation b, which does not exist",
        ),
        (
            {"allocations": {"a": [0]}, "partitions": {"p": PartitionFootprint("a", (4,))}},
            "outside its allocation a",
        ),
        (
            {
                "allocations": {"a": [0]},
                "partitions": {
                    "p": PartitionFootprint("a", (0, 1)),
                    "q": PartitionFootprint("a", (1,)),
                },
            },
            "IPU slot 1 is in two partitions",
        ),
        ({"unavailable_slots": [64]}, "IPU slot 64 is outside the pod"),
        ({"machine_names": ["x"]}, "1 machine names given for 16 machines"),
    ],
)
def test_contradictory_facts_are_refused(kwargs: dict[str, object], message: str) -> None:
    """Facts that contradict each other are a caller bug: InvalidSpec says which."""
    with pytest.raises(InvalidSpec, match=message):
        Snapshot.build(shape("pod64"), **kwargs)  # type: ignore[arg-type]


def test_apply_then_release_gives_back_an_equal_snapshot() -> None:
    """Releasing a partition and then its allocation restores the snapshot exactly."""
    empty = Snapshot.build(shape("pod128"))
    alloc = place(empty, AllocationRequest("a", size=128))
    assert isinstance(alloc, AllocationPlacement)
    with_alloc = empty.apply(alloc)
    part = placed(with_alloc, PartitionRequest("p", 128, "a", num_gcds=2))
    full = with_alloc.apply(part)
    assert full != with_alloc
    assert full.release_partition("p") == with_alloc
    assert full.release_partition("p").release_allocation("a") == empty


def test_applying_does_not_touch_the_original() -> None:
    """Snapshots are values: apply returns a new one and leaves the old one as it was."""
    before = whole_pod64()
    after = before.apply(placed(before, PartitionRequest("p", 8, "a")))
    assert before.partition_ids() == []
    assert after.partition_ids() == ["p"]
    assert len(before.free_slots("a")) == 64
    assert len(after.free_slots("a")) == 56


def test_a_placement_that_no_longer_fits_is_a_conflict() -> None:
    """Applying a placement computed on another snapshot fails loudly instead of double-booking."""
    base = whole_pod64()
    first = placed(base, PartitionRequest("p", 8, "a"))
    clash = placed(base, PartitionRequest("q", 8, "a"))
    assert first.slots == clash.slots
    taken = base.apply(first)
    with pytest.raises(PlacementConflict, match="not free in allocation a"):
        taken.apply(clash)
    with pytest.raises(PlacementConflict, match="partition p already exists"):
        taken.apply(first)


def test_an_allocation_placement_that_no_longer_fits_is_a_conflict() -> None:
    base = Snapshot.build(shape("pod64"))
    first = place(base, AllocationRequest("a", size=16))
    other = place(base, AllocationRequest("b", size=16))
    assert isinstance(first, AllocationPlacement)
    assert isinstance(other, AllocationPlacement)
    with pytest.raises(PlacementConflict, match="not free"):
        base.apply(first).apply(other)


def test_release_allocation_with_partitions_is_refused() -> None:
    """An allocation is released only once its partitions are gone."""
    snapshot = whole_pod64()
    snapshot = snapshot.apply(placed(snapshot, PartitionRequest("p", 1, "a")))
    with pytest.raises(IllegalTransition, match="still holds partitions p: remove them first"):
        snapshot.release_allocation("a")


def test_unknown_ids_in_releases_are_caller_bugs() -> None:
    snapshot = whole_pod64()
    with pytest.raises(InvalidSpec, match="partition nope is not in the snapshot"):
        snapshot.release_partition("nope")
    with pytest.raises(InvalidSpec, match="allocation nope is not in the snapshot"):
        snapshot.release_allocation("nope")


def test_marking_unavailable_then_available_round_trips() -> None:
    """A fault and its repair leave the snapshot as it was; meanwhile nothing lands there."""
    snapshot = whole_pod64()
    faulty = snapshot.mark_unavailable(slots=[0], machines=[15])
    assert faulty.unavailable_slots == {0}
    assert faulty.unavailable_machines == {15}
    assert 0 not in faulty.free_slots("a")
    assert not set(range(60, 64)) & set(faulty.free_slots("a"))
    assert placed(faulty, PartitionRequest("p", 1, "a")).slots == (1,)
    assert faulty.mark_available(slots=[0], machines=[15]) == snapshot


def test_a_partition_on_a_failed_ipu_keeps_it_after_release() -> None:
    """IPUs that failed under a partition stay out of use when the partition goes."""
    snapshot = whole_pod64()
    snapshot = snapshot.apply(placed(snapshot, PartitionRequest("p", 4, "a")))
    released = snapshot.mark_unavailable(slots=[2]).release_partition("p")
    assert released.free_slots("a")[:4] == (0, 1, 3, 4)


def test_queries_describe_free_space() -> None:
    """Largest free block and run, and the buddy free lists, describe what is left."""
    snapshot = Snapshot.build(
        shape("pod64"),
        allocations={"a": range(4)},
        partitions={"p": PartitionFootprint("a", (0,))},
    )
    assert snapshot.largest_free_block("a") == FreeBlock(0, range(8, 16))
    assert snapshot.free_block_counts("a") == {1: 1, 2: 1, 4: 1, 8: 1, 16: 0, 32: 0, 64: 0}
    assert snapshot.largest_free_run() == FreeRun(0, range(8, 16))
    assert snapshot.free_machines() == tuple(range(4, 16))
    assert snapshot.allocation_of_machine(2) == "a"
    assert snapshot.allocation_of_machine(5) is None
    assert snapshot.partitions_of("a") == ("p",)


def test_machine_names_appear_in_reasons() -> None:
    """Reasons name machines the way the caller does (agent ids in the controller)."""
    pod = shape("pod16")
    snapshot = Snapshot.build(
        pod, allocations={"a": [0, 1]}, machine_names=["ag0", "ag1", "ag2", "ag3"]
    )
    result = place(snapshot, AllocationRequest("b", size=16))
    assert result == Rejected(
        (
            "no run of 4 free neighbouring machines aligned to 4 in cluster pod16;"
            " largest: 2 machines (ag2-ag3)",
        )
    )


def test_snapshots_of_the_same_facts_are_equal() -> None:
    """Equality compares facts and indexes, not the order facts were given in."""
    pod = build_pod(8, num_domains=2)
    one = Snapshot.build(pod, allocations={"a": [0, 1], "b": [4, 5, 6, 7]})
    two = Snapshot.build(pod, allocations={"b": [7, 6, 5, 4], "a": [1, 0]})
    assert one == two
    assert one != Snapshot.build(pod, allocations={"a": [0, 1]})
