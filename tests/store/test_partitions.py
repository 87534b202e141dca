"""Reserving, updating and releasing partitions; the IPU invariant as the database keeps it."""

from __future__ import annotations

import dataclasses

import pytest

from tests.store.factories import ACTIVE, add_allocation, add_cluster, at, record, spec
from vpod.domain.partition_states import OperationState, PartitionState, ReadyState
from vpod.domain.routing import GwRouting, IpuLinkRouting
from vpod.store import (
    AlreadyExists,
    Conflict,
    NotFound,
    PartitionIpu,
    PartitionRecord,
    Store,
)


@pytest.fixture
def pod(store: Store) -> Store:
    """Cluster c1 of 16 machines; al1 holds machines 0-3, al2 machines 4-7."""
    add_cluster(store)
    add_allocation(store, "al1", (0, 1, 2, 3))
    add_allocation(store, "al2", (4, 5, 6, 7))
    return store


def _owners(store: Store) -> dict[int, str]:
    return {slot: p.id for p in store.list_partitions() for slot in p.slots}


def test_a_reserved_partition_comes_back_whole_at_version_1(pod: Store) -> None:
    """Every field survives the round trip: spec, IPUs, state, bookkeeping, times."""
    two_segments = dataclasses.replace(
        spec("p1", 8),
        num_segments=2,
        num_gcds=2,
        num_replicas=4,
        routing=IpuLinkRouting.DNC,
        gw_routing=GwRouting.RING,
        ipus=((0, 0), (0, 1), (0, 2), (0, 3), (0, 4), (0, 5), (0, 6), (0, 7)),
    )
    ipus = tuple(
        PartitionIpu(slot=s, routing_id=i, segment=i // 4, gcd=i // 4)
        for i, s in enumerate((3, 2, 1, 0, 4, 5, 6, 7))
    )
    new = PartitionRecord(
        spec=two_segments,
        ipus=ipus,
        state=PartitionState(ReadyState.PENDING, OperationState.CREATING),
        created_at=at(1),
        updated_at=at(2),
        errors=("agent a3: link training failed",),
        disable_auto_reset=True,
        relocatable=True,
        max_auto_reset_retries=3,
        auto_reset_retry_count=1,
        last_auto_reset_time=at(1.5),
    )
    stored = pod.reserve_partition(new)
    assert stored == dataclasses.replace(new, version=1)
    assert pod.get_partition("p1") == stored
    assert pod.find_partition("p1") == stored
    assert pod.find_partition("p2") is None


def test_an_ipu_is_in_one_partition_only(pod: Store) -> None:
    """A reservation touching a taken IPU is refused, names it, and leaves nothing behind."""
    pod.reserve_partition(record("p1", range(4)))
    with pytest.raises(Conflict, match=r"IPU slot 2 .* already in partition p1") as caught:
        pod.reserve_partition(record("p2", range(2, 10)))
    assert caught.value.retryable is True
    assert pod.find_partition("p2") is None
    assert _owners(pod) == dict.fromkeys(range(4), "p1")
    pod.reserve_partition(record("p2", range(8, 16)))  # no rows of the refused one in the way


def test_a_partition_stays_inside_its_allocation(pod: Store) -> None:
    """IPUs on a machine of another allocation are refused by the database."""
    with pytest.raises(Conflict, match="slot 16 is on machine 4, which is not in allocation al1"):
        pod.reserve_partition(record("p1", range(12, 20)))
    assert pod.list_partitions() == []


def test_a_duplicate_partition_id_is_refused(pod: Store) -> None:
    """A second partition with a taken id is AlreadyExists."""
    pod.reserve_partition(record("p1", range(4)))
    with pytest.raises(AlreadyExists, match="partition p1 exists already"):
        pod.reserve_partition(record("p1", range(4, 8)))


def test_a_partition_needs_its_allocation_in_its_cluster(pod: Store) -> None:
    """A missing allocation, or one in another cluster, is NotFound."""
    add_cluster(pod, "c2", machines=4)
    with pytest.raises(NotFound, match="allocation al9 does not exist"):
        pod.reserve_partition(record("p1", range(4), allocation_id="al9"))
    with pytest.raises(NotFound, match="allocation al1 is in cluster c1, not in cluster c2"):
        pod.reserve_partition(record("p1", range(4), cluster_id="c2"))


def test_records_that_cannot_be_stored_are_refused_before_the_database(pod: Store) -> None:
    """Wrong IPU counts, routing order or a missing allocation are caller bugs (ValueError)."""
    good = record("p1", range(4))
    with pytest.raises(ValueError, match="size 4 but 3 IPUs"):
        dataclasses.replace(good, ipus=good.ipus[:3])
    with pytest.raises(ValueError, match="routing order"):
        dataclasses.replace(good, ipus=tuple(reversed(good.ipus)))
    with pytest.raises(ValueError, match="must name its allocation"):
        dataclasses.replace(good, spec=dataclasses.replace(good.spec, allocation_id=None))


def test_update_is_compare_and_set_on_the_version(pod: Store) -> None:
    """An update at the expected version applies and bumps it; a stale one is a Conflict."""
    pod.reserve_partition(record("p1", range(4)))
    updated = pod.update_partition(
        "p1",
        expected_version=1,
        updated_at=at(5),
        state=ACTIVE,
        errors=("e1", "e2"),
        auto_reset_retry_count=2,
        last_auto_reset_time=at(4),
        relocatable=True,
    )
    assert updated.version == 2
    assert (updated.state, updated.errors, updated.auto_reset_retry_count) == (
        ACTIVE,
        ("e1", "e2"),
        2,
    )
    assert (updated.updated_at, updated.created_at, updated.last_auto_reset_time) == (
        at(5),
        at(0),
        at(4),
    )
    assert updated.relocatable is True
    with pytest.raises(Conflict, match=r"changed since it was read \(version 1, now 2\)"):
        pod.update_partition("p1", expected_version=1, updated_at=at(6), errors=())
    assert pod.get_partition("p1") == updated
    with pytest.raises(NotFound, match="partition ghost does not exist"):
        pod.update_partition("ghost", expected_version=1, updated_at=at(6))


def test_relocation_replaces_the_ipus_in_one_transaction(pod: Store) -> None:
    """New IPUs replace the old ones; a taken new IPU keeps the old ones and the version."""
    pod.reserve_partition(record("p1", range(4)))
    pod.reserve_partition(record("p2", range(8, 12)))
    moved_ipus = record("p1", range(4, 8)).ipus
    moved = pod.update_partition("p1", expected_version=1, updated_at=at(1), ipus=moved_ipus)
    assert moved.slots == (4, 5, 6, 7)
    assert moved.version == 2
    with pytest.raises(Conflict, match=r"IPU slot 8 .* already in partition p2"):
        pod.update_partition(
            "p1", expected_version=2, updated_at=at(2), ipus=record("p1", range(8, 12)).ipus
        )
    assert pod.get_partition("p1") == moved
    pod.reserve_partition(record("p3", range(4)))  # the old IPUs were freed


def test_release_frees_the_ipus_and_the_id(pod: Store) -> None:
    """Release returns the partition as it was; its IPUs and id can be used again."""
    stored = pod.reserve_partition(record("p1", range(4)))
    assert pod.release_partition("p1") == stored
    assert pod.list_partitions() == []
    with pytest.raises(NotFound):
        pod.release_partition("p1")
    pod.reserve_partition(record("p1", range(4)))


def test_release_can_insist_on_a_version(pod: Store) -> None:
    """Releasing at a stale expected_version conflicts; at the current one it releases."""
    pod.reserve_partition(record("p1", range(4)))
    pod.update_partition("p1", expected_version=1, updated_at=at(1), state=ACTIVE)
    with pytest.raises(Conflict, match="version 1, now 2"):
        pod.release_partition("p1", expected_version=1)
    assert pod.release_partition("p1", expected_version=2).version == 2


def test_partitions_are_listed_by_id_and_filtered(pod: Store) -> None:
    """Filters: ids, allocations, cluster; each combination narrows the list."""
    add_cluster(pod, "c2", machines=4)
    add_allocation(pod, "other", (0, 1), "c2")
    pod.reserve_partition(record("b", range(4)))
    pod.reserve_partition(record("a", range(16, 20), allocation_id="al2"))
    pod.reserve_partition(record("c", range(4), allocation_id="other", cluster_id="c2"))
    pod.reserve_partition(record("d", (7, 6, 5, 4)))

    def ids(**filters: object) -> list[str]:
        return [p.id for p in pod.list_partitions(**filters)]  # type: ignore[arg-type]

    assert ids() == ["a", "b", "c", "d"]
    assert ids(allocation_ids=["al1"]) == ["b", "d"]
    assert ids(cluster_id="c2") == ["c"]
    assert ids(ids={"a", "c", "zz"}, cluster_id="c1") == ["a"]
    assert ids(allocation_ids=[]) == []
    assert pod.get_partition("d").slots == (7, 6, 5, 4)  # routing order, not slot order


def test_partitions_are_filtered_by_ready_state_with_their_ipus(pod: Store) -> None:
    """ready_states keeps the partitions in one of those states, each with all its IPUs;
    it combines with the other filters, and an empty collection matches nothing."""
    pod.reserve_partition(record("ok", range(4)))
    pod.update_partition("ok", expected_version=1, updated_at=at(1), state=ACTIVE)
    broken = pod.reserve_partition(record("broken", range(4, 8)))
    error = PartitionState(ReadyState.ERROR, OperationState.IDLE)
    broken = pod.update_partition("broken", expected_version=1, updated_at=at(1), state=error)
    pod.reserve_partition(record("pending", range(16, 20), allocation_id="al2"))

    def ids(**filters: object) -> list[str]:
        return [p.id for p in pod.list_partitions(**filters)]  # type: ignore[arg-type]

    assert pod.list_partitions(ready_states=[ReadyState.ERROR]) == [broken]
    assert ids(ready_states={ReadyState.ERROR, ReadyState.PENDING}) == ["broken", "pending"]
    assert ids(ready_states=[ReadyState.PENDING], allocation_ids=["al1"]) == []
    assert ids(ready_states=[ReadyState.ACTIVE], cluster_id="c1") == ["ok"]
    assert ids(ready_states=[]) == []


def test_only_the_listed_fields_can_be_updated(pod: Store) -> None:
    """The spec and the times of creation are not changes: asking for them is a TypeError."""
    pod.reserve_partition(record("p1", range(4)))
    with pytest.raises(TypeError, match="cannot change size"):
        pod.update_partition("p1", expected_version=1, updated_at=at(1), size=8)  # type: ignore[call-arg]
    assert pod.get_partition("p1").version == 1
