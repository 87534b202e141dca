"""The partition write path the controller runs on every create and remove.

``update_partition_from`` and ``release_partition_from`` compute their
result from the record the caller holds instead of reading it back, so each
test checks that what they return is exactly what the database then holds.
Audit events given to a write commit with it or not at all.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from functools import partial

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.store.conftest import MigratedDatabase
from tests.store.factories import ACTIVE, T0, add_allocation, add_cluster, at, record
from tests.store.test_concurrency import race
from vpod.domain.partition_states import OperationState, PartitionState, ReadyState
from vpod.store import AuditEvent, Conflict, NotFound, PartitionRecord, Store

REMOVING = PartitionState(ReadyState.ACTIVE, OperationState.REMOVING)
ERROR = PartitionState(ReadyState.ERROR, OperationState.IDLE)


@pytest.fixture
def pod(store: Store) -> Store:
    """Cluster c1 of 16 machines; al1 holds machines 0-3, al2 machines 4-7."""
    add_cluster(store)
    add_allocation(store, "al1", (0, 1, 2, 3))
    add_allocation(store, "al2", (4, 5, 6, 7))
    return store


@pytest.fixture
def replica(migrated: MigratedDatabase, pod: Store) -> Iterator[Store]:
    """A second store on the same database, as another controller replica would open it."""
    with Store.open(migrated.url) as other:
        yield other


def event(action: str, target: str, seconds: float = 0) -> AuditEvent:
    return AuditEvent(time=at(seconds), actor="u1", action=action, target=target, outcome="ok")


def actions(store: Store) -> list[str]:
    """The audit log's actions, oldest first."""
    return [e.action for e in reversed(store.list_events())]


def test_update_from_returns_what_the_database_then_holds(pod: Store) -> None:
    """Every changeable field, applied to the held record, equals a fresh read."""
    stored = pod.reserve_partition(record("p1", range(4)))
    updated = pod.update_partition_from(
        stored,
        updated_at=at(5),
        state=ERROR,
        errors=("agent m1: link down",),
        disable_auto_reset=True,
        relocatable=True,
        max_auto_reset_retries=3,
        auto_reset_retry_count=1,
        last_auto_reset_time=at(4),
    )
    assert updated.version == 2
    assert updated.updated_at == at(5)
    assert updated == pod.get_partition("p1")


def test_update_from_can_relocate(pod: Store) -> None:
    """New IPUs replace the old ones; the old ones are free again."""
    stored = pod.reserve_partition(record("p1", (3, 2, 1, 0)))
    moved = pod.update_partition_from(
        stored, updated_at=at(1), ipus=record("p1", (7, 6, 5, 4)).ipus
    )
    assert moved == pod.get_partition("p1")
    assert moved.slots == (7, 6, 5, 4)
    pod.reserve_partition(record("p2", range(4)))


def test_update_from_a_stale_record_is_a_conflict_and_changes_nothing(pod: Store) -> None:
    """The version check is in the UPDATE: a record read before a change no longer applies."""
    stored = pod.reserve_partition(record("p1", range(4)))
    current = pod.update_partition_from(stored, updated_at=at(1), state=ACTIVE)
    with pytest.raises(Conflict, match=r"changed since it was read \(version 1, now 2\)"):
        pod.update_partition_from(stored, updated_at=at(2), state=REMOVING)
    assert pod.get_partition("p1") == current


def test_update_from_a_removed_partition_is_not_found(pod: Store) -> None:
    """A record of a partition that was released meanwhile cannot be updated."""
    stored = pod.reserve_partition(record("p1", range(4)))
    pod.release_partition("p1")
    with pytest.raises(NotFound, match="partition p1 does not exist"):
        pod.update_partition_from(stored, updated_at=at(1), state=ACTIVE)


def test_update_from_refuses_fields_it_cannot_change(pod: Store) -> None:
    """Asking for a spec field is a TypeError, and nothing is written."""
    stored = pod.reserve_partition(record("p1", range(4)))
    with pytest.raises(TypeError, match="cannot change size"):
        pod.update_partition_from(stored, updated_at=at(1), size=8)  # type: ignore[call-arg]
    assert pod.get_partition("p1") == stored


def test_update_returns_the_partition_with_its_ipus_in_routing_order(pod: Store) -> None:
    """update_partition (by id) reads the IPUs in routing order, not slot order."""
    pod.reserve_partition(record("p1", (3, 1, 2, 0)))
    updated = pod.update_partition("p1", expected_version=1, updated_at=at(1), state=ACTIVE)
    assert updated.slots == (3, 1, 2, 0)
    assert updated == pod.get_partition("p1")


def test_release_returns_the_ipus_in_routing_order(pod: Store) -> None:
    """release_partition gives back the partition as it was, IPUs in routing order."""
    stored = pod.reserve_partition(record("p1", (7, 4, 6, 5)))
    assert pod.release_partition("p1") == stored


def test_release_from_frees_the_ipus_and_the_id(pod: Store) -> None:
    """One DELETE at the held version; the IPU rows go with the partition row."""
    stored = pod.reserve_partition(record("p1", range(4)))
    assert pod.release_partition_from(stored) == stored
    assert pod.list_partitions() == []
    assert pod.occupancy("c1").partitions == {}
    pod.reserve_partition(record("p1", range(4)))


def test_release_from_a_stale_record_is_a_conflict_and_keeps_the_partition(pod: Store) -> None:
    """Releasing from an old version is refused; the partition and its IPUs stay."""
    stored = pod.reserve_partition(record("p1", range(4)))
    current = pod.update_partition_from(stored, updated_at=at(1), state=ACTIVE)
    with pytest.raises(Conflict, match="version 1, now 2"):
        pod.release_partition_from(stored)
    assert pod.get_partition("p1") == current
    with pytest.raises(NotFound):
        pod.release_partition_from(pod.release_partition_from(current))


def test_a_stale_release_by_id_keeps_the_ipus(pod: Store) -> None:
    """release_partition at a stale version rolls back the IPU rows it deleted first."""
    stored = pod.reserve_partition(record("p1", range(4)))
    pod.update_partition_from(stored, updated_at=at(1), state=ACTIVE)
    with pytest.raises(Conflict, match="version 1, now 2"):
        pod.release_partition("p1", expected_version=1)
    assert pod.get_partition("p1").slots == (0, 1, 2, 3)
    with pytest.raises(Conflict, match="already in partition p1"):
        pod.reserve_partition(record("p2", range(4)))


def test_events_commit_with_the_writes_they_describe(pod: Store) -> None:
    """Each write appends its event in the same transaction."""
    stored = pod.reserve_partition(record("p1", range(4)), event=event("reserve", "p1"))
    active = pod.update_partition_from(stored, updated_at=at(1), event=event("ready", "p1"))
    again = pod.update_partition(
        "p1", expected_version=active.version, updated_at=at(2), event=event("again", "p1")
    )
    pod.release_partition("p1", expected_version=again.version, event=event("release", "p1"))
    stored = pod.reserve_partition(record("p2", range(4)))
    pod.release_partition_from(stored, event=event("release_from", "p2"))
    assert actions(pod) == ["reserve", "ready", "again", "release", "release_from"]
    assert [e.target for e in pod.list_events(action="release_from")] == ["p2"]


def test_a_refused_write_leaves_no_event(pod: Store) -> None:
    """A write that fails takes its event with it: the log never claims what did not happen."""
    stored = pod.reserve_partition(record("p1", range(4)))
    with pytest.raises(Conflict):
        pod.reserve_partition(record("p2", range(4)), event=event("reserve", "p2"))
    current = pod.update_partition_from(stored, updated_at=at(1), state=ACTIVE)
    with pytest.raises(Conflict):
        pod.update_partition_from(stored, updated_at=at(2), event=event("update", "p1"))
    with pytest.raises(Conflict):
        pod.release_partition_from(stored, event=event("release", "p1"))
    with pytest.raises(Conflict):
        pod.release_partition("p1", expected_version=1, event=event("release", "p1"))
    with pytest.raises(NotFound):
        pod.release_partition("ghost", event=event("release", "ghost"))
    assert pod.list_events() == []
    assert pod.get_partition("p1") == current


def test_append_events_adds_them_in_order_with_ids(store: Store) -> None:
    """A batch of events is appended in one transaction, ids growing in the given order."""
    appended = store.append_events(
        [
            event("a", "t1"),
            event("b", "t2"),
            dataclasses.replace(event("c", "t3"), detail="x" * 5000),
        ]
    )
    assert [e.action for e in appended] == ["a", "b", "c"]
    assert appended[0].id < appended[1].id < appended[2].id
    assert len(appended[2].detail) == 4000
    assert list(reversed(store.list_events())) == appended
    assert store.append_events([]) == []


def test_replicas_updating_one_record_at_once_exactly_one_wins(pod: Store, replica: Store) -> None:
    """Two replicas update_from the same record concurrently: one commits, one conflicts."""
    for n in range(10):
        stored = pod.reserve_partition(record(f"p{n}", range(4)))
        results = race(
            partial(pod.update_partition_from, stored, updated_at=at(1), state=ACTIVE),
            partial(replica.release_partition_from, stored),
        )
        won = [r for r in results if isinstance(r, PartitionRecord)]
        lost = [r for r in results if isinstance(r, Conflict | NotFound)]
        assert (len(won), len(lost)) == (1, 1), results
        if pod.find_partition(f"p{n}") is not None:
            pod.release_partition(f"p{n}")


changes = st.fixed_dictionaries(
    {},
    optional={
        "state": st.sampled_from((ACTIVE, REMOVING, ERROR)),
        "errors": st.lists(st.text(max_size=20), max_size=3).map(tuple),
        "disable_auto_reset": st.booleans(),
        "relocatable": st.booleans(),
        "max_auto_reset_retries": st.integers(0, 10),
        "auto_reset_retry_count": st.integers(0, 10),
        "last_auto_reset_time": st.none() | st.integers(0, 10**6).map(at),
    },
)


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(steps=st.lists(changes, min_size=1, max_size=4))
def test_held_records_always_match_the_database(pod: Store, steps: list[dict[str, object]]) -> None:
    """Any chain of update_from calls returns exactly what a fresh read returns."""
    for stale in pod.list_partitions():
        pod.release_partition(stale.id)
    held = pod.reserve_partition(record("p1", range(4), now=T0))
    for n, change in enumerate(steps):
        held = pod.update_partition_from(held, updated_at=at(n + 1), **change)  # type: ignore[arg-type]
        assert held == pod.get_partition("p1")
    assert pod.release_partition_from(held) == held
