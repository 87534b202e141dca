"""Hot statements run by the driver (SQLite) store exactly what SQLAlchemy would store."""

from __future__ import annotations

import dataclasses
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Connection, insert, select, text
from sqlalchemy.exc import IntegrityError

from tests.store.factories import T0, add_allocation, add_cluster, record
from vpod.domain.partition_states import OperationState, ReadyState
from vpod.store import Store, prepared, sqlite_url
from vpod.store.errors import Conflict
from vpod.store.records import AuditEvent
from vpod.store.schema import events, partitions


def _raw_rows(conn: Connection, table: str, order: str) -> list[tuple[Any, ...]]:
    """Rows as SQLite holds them: every value as stored, with its SQLite type."""
    columns = [row[1] for row in conn.execute(text(f"PRAGMA table_info({table})"))]
    select_list = ", ".join(f"{c}, typeof({c})" for c in columns if c != "id")
    return [
        tuple(r) for r in conn.execute(text(f"SELECT {select_list} FROM {table} ORDER BY {order}"))
    ]


def _partition_values(store: Store, pid: str) -> dict[str, Any]:
    """The values the store's INSERT would write for a partition (with awkward ones set)."""
    rec = dataclasses.replace(
        record(pid, range(4)),
        errors=("über ünicode", 'quote " and \\'),
        last_auto_reset_time=T0 + timedelta(microseconds=7),
    )
    return {
        "id": rec.id,
        "cluster_id": rec.cluster_id,
        "allocation_id": rec.allocation_id,
        "size": rec.spec.size,
        "num_segments": 1,
        "num_gcds": 1,
        "num_replicas": 1,
        "reconfigurable": False,
        "routing": rec.spec.routing.name,
        "gw_routing": None,
        "sync_type": rec.spec.sync_type.name,
        "requested_ipus": None,
        "ready_state": ReadyState.ACTIVE.name,
        "operation_state": OperationState.IDLE.name,
        "errors": list(rec.errors),
        "disable_auto_reset": True,
        "relocatable": False,
        "max_auto_reset_retries": 3,
        "auto_reset_retry_count": 0,
        "last_auto_reset_time": rec.last_auto_reset_time,
        "created_at": rec.created_at,
        "updated_at": rec.updated_at,
        "version": 1,
    }


def test_driver_path_writes_the_same_bytes_as_sqlalchemy(tmp_path: Path) -> None:
    with Store.open(sqlite_url(tmp_path)) as store:
        store.migrate()
        add_cluster(store)
        add_allocation(store, "al1", (0,))
        event = {
            "time": T0 + timedelta(seconds=1, microseconds=3),
            "actor": "ü",
            "action": "create_partition",
            "target": "p",
            "outcome": "ok",
            "source": "",
            "detail": "x" * 10,
        }
        with store._db.write() as conn:
            conn.execute(insert(partitions), _partition_values(store, "by-sqlalchemy"))
            via_driver = {**_partition_values(store, "by-driver")}
            prepared.execute(conn, insert(partitions), via_driver)
            first = conn.execute(insert(events).returning(events.c.id), event).scalar_one()
            second = prepared.execute(conn, insert(events).returning(events.c.id), event)
            assert second.scalar_one() == first + 1
        with store._db.read() as conn:
            rows = _raw_rows(conn, "partitions", "id")
            logged = _raw_rows(conn, "events", "id")
            decoded = conn.execute(
                select(partitions.c.errors).where(partitions.c.id == "by-driver")
            ).scalar_one()
        assert rows[0] == rows[1]  # every column but the id, with its SQLite type
        assert logged[0] == logged[1]
        assert decoded == ["über ünicode", 'quote " and \\']


def test_driver_errors_are_wrapped_as_sqlalchemy_wraps_them(tmp_path: Path) -> None:
    with Store.open(sqlite_url(tmp_path)) as store:
        store.migrate()
        add_cluster(store)
        add_allocation(store, "al1", (0,))
        store.reserve_partition(record("p1", range(2)))
        with pytest.raises(IntegrityError), store._db.engine.connect() as conn:
            prepared.execute(conn, insert(partitions), _partition_values(store, "p1"))
        # Through the store, the same refusal is its own sentence, and nothing is left behind.
        with pytest.raises(Conflict, match="slot 0"):
            store.reserve_partition(record("p2", range(2)))
        assert [p.id for p in store.list_partitions()] == ["p1"]


def test_a_statement_needing_more_than_is_given_is_refused(tmp_path: Path) -> None:
    with Store.open(sqlite_url(tmp_path)) as store:
        store.migrate()
        event = AuditEvent(time=T0, actor="a", action="b", target="c", outcome="d")
        statement = insert(events).values(actor=event.actor).returning(events.c.id)
        with store._db.write() as conn, pytest.raises(ValueError, match="needs parameters"):
            prepared.execute(conn, statement, {"time": event.time})
