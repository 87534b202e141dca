"""Occupancy: what placement needs about a cluster, read consistently from the store."""

from __future__ import annotations

import pytest

from tests.store.factories import CREATING, add_allocation, add_cluster, at, record
from vpod.domain.partitions import PartitionRequirements, resolve_partition_spec
from vpod.placement import (
    PartitionFootprint,
    PartitionPlacement,
    PartitionRequest,
    Snapshot,
    place,
)
from vpod.store import AgentHealthState, NotFound, PartitionRecord, Store, ipus_of_placement


def test_an_empty_cluster_has_nothing_taken(store: Store) -> None:
    """A new cluster's occupancy has the cluster, no allocations, no partitions, nothing down."""
    cluster = add_cluster(store)
    occupancy = store.occupancy("c1")
    assert occupancy.cluster == cluster
    assert (occupancy.allocations, occupancy.partitions) == ({}, {})
    assert occupancy.unavailable_machines == frozenset()
    assert occupancy.machine_names == cluster.agent_ids


def test_occupancy_lists_allocations_and_partition_footprints(store: Store) -> None:
    """Allocations map to machines; partitions to their allocation and slots in routing order."""
    add_cluster(store)
    add_cluster(store, "c2", machines=4)
    add_allocation(store, "al1", (0, 1))
    add_allocation(store, "al2", (8, 9, 10, 11))
    add_allocation(store, "elsewhere", (0,), "c2")
    store.reserve_partition(record("p1", (7, 6, 5, 4)))
    store.reserve_partition(record("p2", range(32, 48), allocation_id="al2"))
    store.reserve_partition(record("p3", range(4), "elsewhere", "c2"))
    occupancy = store.occupancy("c1")
    assert occupancy.allocations == {"al1": (0, 1), "al2": (8, 9, 10, 11)}
    assert occupancy.partitions == {
        "p1": PartitionFootprint("al1", (7, 6, 5, 4)),
        "p2": PartitionFootprint("al2", tuple(range(32, 48))),
    }


def test_machines_of_unreachable_agents_are_unavailable(store: Store) -> None:
    """Only UNREACHABLE agents count; an agent never heard from is assumed available."""
    cluster = add_cluster(store, machines=4)
    store.set_agent_health(cluster.agent_ids[2], AgentHealthState.UNREACHABLE, reason="down")
    store.set_agent_health(cluster.agent_ids[1], AgentHealthState.REACHABLE, at=at(1))
    assert store.occupancy("c1").unavailable_machines == frozenset({2})


def test_unknown_cluster_has_no_occupancy(store: Store) -> None:
    """Occupancy of a missing cluster is NotFound."""
    with pytest.raises(NotFound, match="cluster c9 does not exist"):
        store.occupancy("c9")


def test_a_committed_placement_reads_back_as_the_snapshot_it_was_applied_to(store: Store) -> None:
    """Place on the store's snapshot, commit, re-read: the same snapshot as applying in memory.

    A two-domain partition of 128 IPUs with 2 GCDs checks segments and GCDs
    of the stored IPUs as well.
    """
    cluster = add_cluster(store, machines=32, num_domains=2)
    add_allocation(store, "al1", tuple(range(32)))
    before = store.occupancy("c1").snapshot()
    placed = place(before, PartitionRequest("p1", 128, "al1", num_gcds=2))
    assert isinstance(placed, PartitionPlacement)
    spec = resolve_partition_spec(
        PartitionRequirements("p1", 128, allocation_id="al1", cluster_id="c1", num_gcds=2),
        pod=cluster.pod(),
    )
    ipus = ipus_of_placement(placed)
    store.reserve_partition(
        PartitionRecord(spec=spec, ipus=ipus, state=CREATING, created_at=at(0), updated_at=at(0))
    )
    after = store.occupancy("c1").snapshot()
    assert after == before.apply(placed)
    assert after != before
    assert {ipu.segment for ipu in ipus[:64]} == {0}
    assert {ipu.segment for ipu in ipus[64:]} == {1}
    assert [ipu.gcd for ipu in ipus] == [0] * 64 + [1] * 64
    store.release_partition("p1")
    assert store.occupancy("c1").snapshot() == before
    assert isinstance(before, Snapshot)


def test_stored_ipu_faults_are_unavailable_slots(store: Store) -> None:
    """The faulty IPUs an agent last reported are occupancy's faulty slots (slot of device d on
    machine m is 4m + 3 - d), and its snapshot keeps them out of placement together with
    the caller's own unavailable slots."""
    cluster = add_cluster(store, machines=4)
    add_allocation(store, "al1", (0, 1, 2, 3))
    store.set_agent_faults(cluster.agent_ids[2], {0: "IPU 0 failed", 3: "link down"})
    occupancy = store.occupancy("c1")
    assert occupancy.faulty_slots == frozenset({11, 8})
    snapshot = occupancy.snapshot(unavailable_slots=frozenset({1}))
    assert snapshot.unavailable_slots == frozenset({1, 8, 11})
    assert 8 not in snapshot.free_slots("al1")
    store.set_agent_faults(cluster.agent_ids[2], {})
    assert store.occupancy("c1").faulty_slots == frozenset()


def test_faults_of_agents_in_other_clusters_do_not_count(store: Store) -> None:
    """Only the cluster's own agents' faults make its slots unavailable."""
    add_cluster(store, machines=2)
    other = add_cluster(store, "c2", machines=2)
    store.set_agent_faults(other.agent_ids[0], {1: "IPU 1 failed"})
    assert store.occupancy("c1").faulty_slots == frozenset()
    assert store.occupancy("c2").faulty_slots == frozenset({2})
