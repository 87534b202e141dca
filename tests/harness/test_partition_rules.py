"""Partition rules on the in-process controller: sizes, alignment, no IPU in two partitions.

The controller is the real one (placement, store, state table); only the agents
are emulated machines behind the scripted gateway, so every configuration the
controller sends can be read back from the machine it reached.
"""

from __future__ import annotations

import pytest

from vpod.controller import errors
from vpod.controller.caller import SYSTEM
from vpod.domain.partition_states import OperationState, ReadyState

from .pod import Pod

pytestmark = pytest.mark.anyio

SIZES_THAT_FIT = (1, 2, 4, 8, 16)
"""Every size a pod of four Bow-2000s (16 IPUs) can hold."""


@pytest.mark.parametrize("size", SIZES_THAT_FIT)
async def test_each_size_is_placed_on_an_aligned_block_and_configured_there(
    pod: Pod, size: int
) -> None:
    """A partition of ``size`` IPUs takes ``size`` consecutive slots starting at a multiple of
    ``size``; exactly the machines under those slots hold it, on the matching devices."""
    record = await pod.create("p", size)
    assert (record.state.ready, record.state.operation) == (
        ReadyState.ACTIVE,
        OperationState.IDLE,
    )
    slots = sorted(record.slots)
    assert len(slots) == size
    assert slots[0] % size == 0
    assert slots == list(range(slots[0], slots[0] + size))
    holders = pod.gateway.holders_of("p")
    assert holders == sorted({f"ag{slot // 4 + 1}" for slot in slots})
    assert sum(len(pod.gateway.holdings()[a]["p"]) for a in holders) == size
    assert pod.disagreements() == []


@pytest.mark.parametrize(
    ("size", "words"),
    [
        (3, "size"),
        (12, "size"),
        (0, "partition size is required"),
        (-4, "partition size is required"),
    ],
)
async def test_sizes_the_rules_forbid_are_invalid_arguments_and_touch_nothing(
    pod: Pod, size: int, words: str
) -> None:
    with pytest.raises(errors.InvalidArgument, match=words):
        await pod.create("bad", size)
    assert await pod.record("bad") is None
    assert pod.gateway.calls_of("configure") == []


async def test_a_partition_larger_than_the_domain_or_the_allocation_is_refused(
    split_pod: Pod,
) -> None:
    """64 IPUs is a valid size, but not in a cluster whose IPU-Link domain has 16: an invalid
    argument naming the largest that fits. 16 fits the domain but not an 8-IPU allocation:
    NoCapacity, saying which partition did not fit."""
    pod = split_pod
    with pytest.raises(errors.InvalidArgument, match="the largest partition it can hold is 16"):
        await pod.create("huge", 64, allocation="left")
    with pytest.raises(errors.NoCapacity, match="partition big of 16 IPUs does not fit"):
        await pod.create("big", 16, allocation="left")
    assert await pod.record("huge") is None
    assert await pod.record("big") is None
    assert pod.gateway.calls_of("configure") == []


async def test_no_ipu_is_ever_in_two_partitions(pod: Pod) -> None:
    """Mixed sizes fill the pod exactly; every slot is used once, and one more IPU does not
    fit anywhere (the refusal names the partition and its size)."""
    sizes = {"a": 8, "b": 4, "c": 2, "d": 1, "e": 1}
    for pid, size in sizes.items():
        await pod.create(pid, size)
    records = [await pod.record(pid) for pid in sizes]
    slots = [slot for r in records if r is not None for slot in r.slots]
    assert sorted(slots) == list(range(16))
    for record in records:
        assert record is not None
        first = min(record.slots)
        assert first % record.spec.size == 0
    with pytest.raises(errors.NoCapacity, match="partition f of 1 IPUs does not fit"):
        await pod.create("f", 1)
    assert pod.disagreements() == []


async def test_removed_ipus_are_placed_again(pod: Pod) -> None:
    first = await pod.create("first", 16)
    with pytest.raises(errors.NoCapacity):
        await pod.create("second", 4)
    await pod.controller.partitions.remove(SYSTEM, "first")
    assert pod.gateway.holders_of("first") == []
    second = await pod.create("second", 16)
    assert sorted(second.slots) == sorted(first.slots)
    assert pod.disagreements() == []


async def test_a_repeated_create_returns_the_partition_and_another_shape_is_refused(
    pod: Pod,
) -> None:
    created = await pod.create("same", 4)
    configures = len(pod.gateway.calls_of("configure"))
    again = await pod.create("same", 4)
    assert again.id == created.id
    assert again.slots == created.slots
    assert len(pod.gateway.calls_of("configure")) == configures  # nothing sent again
    with pytest.raises(errors.AlreadyExists, match="already exists with 4 IPUs"):
        await pod.create("same", 8)


async def test_partitions_stay_inside_their_allocation(split_pod: Pod) -> None:
    """Two allocations of two machines each: each one's partitions land on its machines, and
    a full allocation does not spill into the other."""
    pod = split_pod
    left = await pod.create("left", 8, allocation="left")
    right = await pod.create("right", 4, allocation="right")
    assert set(pod.gateway.holders_of("left")) == {"ag1", "ag2"}
    assert set(pod.gateway.holders_of("right")) <= {"ag3", "ag4"}
    assert max(left.slots) < 8 <= min(right.slots)
    with pytest.raises(errors.NoCapacity):
        await pod.create("more", 4, allocation="left")
    assert pod.disagreements() == []
