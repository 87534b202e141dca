"""Two stores on one database racing from two threads: the database picks exactly one winner.

Each test opens a second store on the same database (a second connection
pool, as a second controller replica would have) and releases both threads
at once with a barrier, many rounds over. On SQLite the writers queue on
the file's write lock; on PostgreSQL the unique index decides.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import TypeVar

import pytest

from tests.store.conftest import MigratedDatabase
from tests.store.factories import ACTIVE, add_allocation, add_cluster, at, record
from vpod.domain.entities import Allocation
from vpod.store import Conflict, Store, StoreError

T = TypeVar("T")
ROUNDS = 15


@pytest.fixture
def replica(migrated: MigratedDatabase, store: Store) -> Iterator[Store]:
    """A second store on the database of ``store``, as another controller would open it."""
    with Store.open(migrated.url) as other:
        yield other


def race(first: Callable[[], T], second: Callable[[], T]) -> list[T | StoreError]:
    """Run both at once; return each one's result or the store error it raised."""
    barrier = threading.Barrier(2)
    results: list[T | StoreError] = [StoreError("not run"), StoreError("not run")]

    def run(index: int, call: Callable[[], T]) -> None:
        barrier.wait()
        try:
            results[index] = call()
        except StoreError as exc:
            results[index] = exc

    threads = [threading.Thread(target=run, args=(i, c)) for i, c in enumerate((first, second))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results


def test_overlapping_reservations_exactly_one_wins(store: Store, replica: Store) -> None:
    """Two replicas reserve overlapping IPUs at once: one commits, the other gets a Conflict."""
    add_cluster(store, machines=4)
    add_allocation(store, "al1", (0, 1, 2, 3))
    for n in range(ROUNDS):
        results = race(
            lambda n=n: store.reserve_partition(record(f"a{n}", range(0, 8))),
            lambda n=n: replica.reserve_partition(record(f"b{n}", range(4, 12))),
        )
        failures = [r for r in results if isinstance(r, StoreError)]
        assert len(failures) == 1, results
        assert isinstance(failures[0], Conflict)
        (winner,) = store.list_partitions()
        store.release_partition(winner.id)


def test_overlapping_allocations_exactly_one_wins(store: Store, replica: Store) -> None:
    """Two replicas allocate overlapping machines at once: one commits, the other conflicts."""
    add_cluster(store, machines=8)
    for n in range(ROUNDS):
        results = race(
            lambda n=n: store.add_allocation(Allocation(f"a{n}", "c1", (0, 1, 2, 3))),
            lambda n=n: replica.add_allocation(Allocation(f"b{n}", "c1", (2, 3))),
        )
        assert sum(isinstance(r, Conflict) for r in results) == 1, results
        (winner,) = store.list_allocations()
        store.remove_allocation(winner.id)


def test_concurrent_updates_of_one_version_exactly_one_wins(store: Store, replica: Store) -> None:
    """Compare-and-set: of two updates from version v, one makes v+1 and the other conflicts."""
    add_cluster(store, machines=4)
    add_allocation(store, "al1", (0,))
    store.reserve_partition(record("p1", range(4)))
    for n in range(ROUNDS):
        version = store.get_partition("p1").version
        results = race(
            lambda n=n, version=version: store.update_partition(
                "p1", expected_version=version, updated_at=at(n), errors=("first",)
            ),
            lambda n=n, version=version: replica.update_partition(
                "p1", expected_version=version, updated_at=at(n), state=ACTIVE
            ),
        )
        assert sum(isinstance(r, Conflict) for r in results) == 1, results
        assert store.get_partition("p1").version == version + 1


def test_concurrent_lease_acquisition_exactly_one_wins(store: Store, replica: Store) -> None:
    """Two replicas try for a new lease, then for an expired one: one holder each time."""
    for n in range(ROUNDS):
        name = f"leader-{n}"
        first = race(
            lambda name=name: store.try_acquire_lease(name, "ctl-a", at(0), 10),
            lambda name=name: replica.try_acquire_lease(name, "ctl-b", at(0), 10),
        )
        assert sorted(first) == [False, True], first
        again = race(
            lambda name=name: store.try_acquire_lease(name, "ctl-c", at(20), 10),
            lambda name=name: replica.try_acquire_lease(name, "ctl-d", at(20), 10),
        )
        assert sorted(again) == [False, True], again
        lease = store.get_lease(name)
        assert lease is not None
        assert lease.term == 2
