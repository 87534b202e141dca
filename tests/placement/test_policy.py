"""The placement policy: occupied domains first, the draining domain last, and the baselines."""

from __future__ import annotations

import pytest

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
    Snapshot,
    place,
)
from vpod.placement.policy import draining_domain


def pod256(partitions: dict[str, tuple[int, ...]]) -> Snapshot:
    """One allocation ``a`` over a 4-domain pod, holding ``partitions`` (id -> slots)."""
    return Snapshot.build(
        shape("pod256"),
        allocations={"a": range(64)},
        partitions={pid: PartitionFootprint("a", slots) for pid, slots in partitions.items()},
    )


def domain_of(result: object) -> int:
    assert isinstance(result, PartitionPlacement), result
    return result.segments[0].domain


def one_ipu(snapshot: Snapshot, policy: Policy = BEST_FIT) -> int:
    return domain_of(place(snapshot, PartitionRequest("new", 1, "a"), policy=policy))


def test_a_partly_used_domain_is_filled_before_an_untouched_one() -> None:
    """Even the lone occupied domain (so the draining one) beats opening an empty domain."""
    snapshot = pod256({"p": (64 * 2,)})
    assert one_ipu(snapshot) == 2
    assert one_ipu(snapshot, FIRST_FIT) == 0


def test_the_domain_with_fewest_partitions_is_left_to_drain() -> None:
    """New partitions go to the other occupied domains, whatever their index."""
    few_low = pod256({"p": (0,), "q": (64,), "r": (66,), "s": (68,)})
    assert one_ipu(few_low) == 1
    few_high = pod256({"p": (0,), "q": (2,), "r": (4,), "s": (64,)})
    assert one_ipu(few_high) == 0


def test_on_a_tie_the_highest_domain_is_left_to_drain() -> None:
    """Equal partition counts: the highest occupied domain drains, the lowest is filled."""
    snapshot = pod256({"p": (64,), "q": (128 + 8,)})
    assert draining_domain(snapshot.allocation_index("a")) == 2  # type: ignore[arg-type]
    assert one_ipu(snapshot) == 1


def test_the_draining_domain_is_used_when_no_other_occupied_domain_fits() -> None:
    """A full domain cannot take the partition; the draining one does, before an empty one."""
    full = {f"f{i}": tuple(range(16 * i, 16 * i + 16)) for i in range(4)}
    snapshot = pod256({**full, "lone": (64,)})
    assert draining_domain(snapshot.allocation_index("a")) == 1  # type: ignore[arg-type]
    assert one_ipu(snapshot) == 1


def test_the_block_inside_the_chosen_domain_is_the_tightest() -> None:
    """Inside the chosen domain a lone free pair is filled before a free machine is split."""
    domain1 = {"r": (64, 65, 66, 67), "t": (72, 73), "u": (80,)}
    snapshot = pod256({"p": (0,), "q": (2,), **domain1})
    request = PartitionRequest("new", 2, "a")
    best = place(snapshot, request)
    assert isinstance(best, PartitionPlacement)
    assert best.slots == (74, 75)
    first = place(snapshot, request, policy=Policy("first", block="first"))
    assert isinstance(first, PartitionPlacement)
    assert first.slots == (68, 69)


def test_a_whole_domain_partition_takes_the_lowest_free_domain() -> None:
    """64 IPUs need an untouched domain; among those the lowest."""
    snapshot = pod256({"p": (0,), "q": (128,)})
    assert domain_of(place(snapshot, PartitionRequest("big", 64, "a"))) == 1


def test_multi_segment_partitions_count_once_in_each_domain() -> None:
    """A 2-segment partition holds one partition's worth in each of its two domains."""
    empty = pod256({})
    placed = place(empty, PartitionRequest("two", 128, "a", num_segments=2, num_gcds=2))
    assert isinstance(placed, PartitionPlacement)
    after = empty.apply(placed)
    index = after.allocation_index("a")
    assert index is not None
    assert dict(index.occupancy()) == {0: 1, 1: 1}
    released = after.release_partition("two").allocation_index("a")
    assert released is not None
    assert dict(released.occupancy()) == {}


def test_the_old_default_is_kept_as_tightest_fit() -> None:
    """TIGHTEST_FIT fills a tight hole in a high domain; the default stays in the low one."""
    snapshot = pod256({"q": (0, 1), "r": (65,)})
    request = PartitionRequest("p", 1, "a")
    tight = place(snapshot, request, policy=TIGHTEST_FIT)
    assert isinstance(tight, PartitionPlacement)
    assert tight.slots == (64,)
    default = place(snapshot, request)
    assert isinstance(default, PartitionPlacement)
    assert default.slots == (2,)


def test_allocations_keep_the_tightest_run_by_default() -> None:
    """The default ranks machines for allocations by tightest run, then lowest domain."""
    assert BEST_FIT.machine_order == ("fit", "index")
    assert FIRST_FIT.machine_order == FIRST_FIT.order


def test_allocation_orders_can_use_the_new_criteria() -> None:
    """Over machines, ``drain`` leaves the domain with fewest allocations alone."""
    snapshot = Snapshot.build(
        shape("pod256"), allocations={"x": range(4), "y": range(4, 8), "z": range(16, 17)}
    )
    policy = Policy("drain", order=("occupied", "drain", "index"))
    result = place(snapshot, AllocationRequest("new", size=4), policy=policy)
    assert isinstance(result, AllocationPlacement)
    assert result.machines == (8,)
    result = place(snapshot, AllocationRequest("new", size=4))
    assert isinstance(result, AllocationPlacement)
    assert result.machines == (17,), "the default still takes the tightest run"
    emptiest = Policy("emptiest", order=("emptiest",))
    result = place(snapshot, AllocationRequest("new", size=4), policy=emptiest)
    assert isinstance(result, AllocationPlacement)
    assert result.machines == (32,)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"order": ("newest",)}, "unknown criterion 'newest'; use one of"),
        ({"allocation_order": ("fit", "oldest")}, "unknown criterion 'oldest'"),
        ({"block": "worst"}, "block must be 'best' or 'first', not 'worst'"),
    ],
)
def test_a_policy_with_an_unknown_criterion_is_refused(
    kwargs: dict[str, object], message: str
) -> None:
    """A typo in a study's policy fails when the policy is made, naming what is allowed."""
    with pytest.raises(ValueError, match=message):
        Policy("typo", **kwargs)  # type: ignore[arg-type]
