"""Reservation units: the database itself refuses to overbook a pool (SQLite and PostgreSQL).

A reservation holds one ``cloud_reserved_units`` row per hardware unit; the
primary key ``(pool, unit)`` and the foreign key to ``cloud_pool_units`` make
a unit held twice, or one that does not exist, fail the whole transaction.
"""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
from sqlalchemy import insert
from sqlalchemy.exc import IntegrityError

from vpod.store import Store
from vpod.store.cloud_records import ProjectRecord
from vpod.store.cloud_store import CloudStore
from vpod.store.errors import Conflict
from vpod.store.reservation_schema import cloud_reserved_units
from vpod.store.reservation_store import PoolState, ReservationRecord

from .conftest import MigratedDatabase

NOW = datetime(2026, 5, 1, tzinfo=UTC)
POOL = "ipu-machines"


def plan(rid: str, units: int, *, project: str = "p1", per_unit: int = 1) -> ReservationRecord:
    return ReservationRecord(
        id=rid,
        project_id=project,
        flavor="g2a-ai-fast-v1pod-4",
        pool=POOL,
        units=units,
        per_unit=per_unit,
        term="1y",
        price_per_unit_month=Decimal("1226.40"),
        starts_at=NOW,
        ends_at=NOW + timedelta(days=365),
    )


def admit_all(_state: PoolState) -> None:
    return None


@pytest.fixture
def cloud(store: Store) -> CloudStore:
    cloud = CloudStore.of(store)
    for project in ("p1", "p2"):
        cloud.add_project(ProjectRecord(project, project, {}, NOW))
    return cloud


def test_units_are_held_row_by_row_and_never_beyond_the_pool(cloud: CloudStore) -> None:
    cloud.reservations.buy(plan("r1", 2, per_unit=2), 6, admit_all)
    assert cloud.reservations.pool_state(POOL) == PoolState(POOL, 6, 4)
    with pytest.raises(Conflict, match="2 unreserved units, 3 are needed"):
        cloud.reservations.buy(plan("r2", 3, project="p2"), 6, admit_all)
    assert [r.id for r in cloud.reservations.list_reservations()] == ["r1"]  # nothing left
    cloud.reservations.buy(plan("r2", 2, project="p2"), 6, admit_all)
    assert cloud.reservations.held_units(POOL) == {"r1": 4, "r2": 2}


def test_a_pool_shrinks_only_by_units_nobody_holds(cloud: CloudStore) -> None:
    cloud.reservations.buy(plan("r1", 3), 8, admit_all)
    with pytest.raises(Conflict):  # hardware went away: 2 units, but r1 holds units 0 to 2
        cloud.reservations.buy(plan("r2", 1, project="p2"), 2, admit_all)
    assert cloud.reservations.pool_state(POOL) == PoolState(POOL, 8, 3)  # rolled back whole
    cloud.reservations.buy(plan("r2", 1, project="p2"), 5, admit_all)
    assert cloud.reservations.pool_state(POOL) == PoolState(POOL, 5, 4)


def test_the_database_refuses_a_unit_held_twice_or_one_that_does_not_exist(
    cloud: CloudStore, migrated: MigratedDatabase
) -> None:
    cloud.reservations.buy(plan("r1", 1), 2, admit_all)
    for unit in (0, 7):  # 0 is held by r1, 7 does not exist
        with migrated.engine.connect() as conn:
            if conn.dialect.name == "sqlite":  # as the store's own connections do
                conn.exec_driver_sql("PRAGMA foreign_keys = ON")
            row = insert(cloud_reserved_units).values(pool=POOL, unit=unit, reservation_id="r1")
            with pytest.raises(IntegrityError):
                conn.execute(row)
    assert cloud.reservations.held_units(POOL) == {"r1": 1}


def test_cancelled_and_ended_reservations_free_their_units(cloud: CloudStore) -> None:
    cloud.reservations.buy(plan("r1", 2), 2, admit_all)
    cloud.reservations.cancel("r1", NOW + timedelta(days=1), NOW + timedelta(days=30))
    with pytest.raises(Conflict, match="cancelled already"):
        cloud.reservations.cancel("r1", NOW, NOW)
    cloud.reservations.buy(plan("r2", 2, project="p2"), 2, admit_all)
    assert cloud.reservations.held_units(POOL) == {"r2": 2}


def test_admit_sees_the_pool_inside_the_transaction_and_can_refuse(cloud: CloudStore) -> None:
    seen: list[PoolState] = []

    def refuse(state: PoolState) -> None:
        seen.append(state)
        raise LookupError("no")

    with pytest.raises(LookupError):
        cloud.reservations.buy(plan("r1", 1), 3, refuse)
    assert seen == [PoolState(POOL, 3, 0)]
    assert cloud.reservations.list_reservations() == []


def test_two_purchases_racing_for_the_last_units_get_them_once(cloud: CloudStore) -> None:
    barrier, outcomes = threading.Barrier(2), []

    def buy(rid: str, project: str) -> None:
        barrier.wait()
        try:
            cloud.reservations.buy(plan(rid, 3, project=project), 4, admit_all)
            outcomes.append("won")
        except Conflict:
            outcomes.append("lost")

    threads = [threading.Thread(target=buy, args=a) for a in (("r1", "p1"), ("r2", "p2"))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(outcomes) == ["lost", "won"]
    assert sum(cloud.reservations.held_units(POOL).values()) == 3
