"""Engine settings of the hot path: SQLite checkpoints off the writer, PostgreSQL pings if idle."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import psycopg
import pytest
from sqlalchemy import text

from tests.store.factories import add_cluster
from vpod.domain.entities import Agent
from vpod.store import EngineOptions, Store, Unavailable, sqlite_url
from vpod.store.checkpoint import SAFETY_NET_PAGES
from vpod.store.engine import Database, create_store_engine


def _database(url: str, options: EngineOptions) -> Database:
    return Database(create_store_engine(url, options), options)


def test_sqlite_connections_leave_checkpoints_to_the_background_thread(tmp_path: Path) -> None:
    """SQLite's own checkpoint threshold is raised to a safety net; 0 keeps SQLite's default."""
    for every, expected in ((200, SAFETY_NET_PAGES), (0, 1000)):
        db = _database(sqlite_url(tmp_path), EngineOptions(sqlite_checkpoint_every=every))
        try:
            with db.read() as conn:
                assert conn.execute(text("PRAGMA wal_autocheckpoint")).scalar() == expected
            assert (db.checkpointer is None) == (every == 0)
        finally:
            db.dispose()


def test_sqlite_reuses_the_connection_it_used_last(tmp_path: Path) -> None:
    """SQLite drops a connection's page cache when another connection wrote since it last
    ran, so transactions one after another take the connection used last, whose cache is
    still good, never the one idle longest: once the pool holds two connections (two
    transactions overlapped), the next three all run on the last one returned."""
    engine = create_store_engine(sqlite_url(tmp_path))
    try:
        first, second = engine.connect(), engine.connect()
        last = second.connection.driver_connection
        first.close()
        second.close()
        used = []
        for _ in range(3):
            with engine.connect() as conn:
                conn.execute(text("SELECT 1"))
                used.append(conn.connection.driver_connection)
        assert all(driver is last for driver in used)
    finally:
        engine.dispose()


def test_writes_are_checkpointed_in_the_background(tmp_path: Path) -> None:
    """Every ``sqlite_checkpoint_every`` commits, a thread copies the WAL into the file."""
    options = EngineOptions(sqlite_checkpoint_every=5)
    with Store.open(sqlite_url(tmp_path), options) as store:
        store.migrate()
        add_cluster(store, machines=4)  # 4 agents and a cluster: 5 write transactions
        checkpointer = store._db.checkpointer
        assert checkpointer is not None
        assert checkpointer.wait_completed(1, timeout=60)
        busy, frames, copied = checkpointer.checkpoint()
        assert busy == 0
        assert copied == frames  # nothing left behind by the background run either
    assert checkpointer._thread is not None
    assert not checkpointer._thread.is_alive()  # close() stopped it


def test_a_store_that_only_reads_starts_no_thread(tmp_path: Path) -> None:
    """The checkpoint thread starts on the first batch of writes, not when a store opens."""
    with Store.open(sqlite_url(tmp_path), EngineOptions(sqlite_checkpoint_every=5)) as store:
        store.migrate()
        store.list_agents()
        assert store._db.checkpointer is not None
        assert store._db.checkpointer._thread is None


def test_checkpoints_need_a_positive_period(tmp_path: Path) -> None:
    """A negative period is a configuration mistake, refused when the store opens."""
    with pytest.raises(ValueError, match="at least 1"):
        Store.open(sqlite_url(tmp_path), EngineOptions(sqlite_checkpoint_every=-1))


def test_a_write_lock_held_too_long_is_unavailable_and_retryable(tmp_path: Path) -> None:
    """BEGIN IMMEDIATE past the busy timeout is Unavailable, naming the stuck writer."""
    url = sqlite_url(tmp_path)
    with Store.open(url, EngineOptions(busy_timeout_s=0.05)) as store:
        store.migrate()
        holder = sqlite3.connect(tmp_path / "vpod.db", isolation_level=None)
        holder.execute("BEGIN IMMEDIATE")
        try:
            with pytest.raises(Unavailable, match="stayed locked") as caught:
                store.add_agent(Agent("a1", "10.0.0.1", 8091))
            assert caught.value.retryable is True
        finally:
            holder.execute("ROLLBACK")
            holder.close()
        store.add_agent(Agent("a1", "10.0.0.1", 8091))


def test_sqlite_writes_take_the_write_lock_at_once_and_reads_see_one_snapshot(
    tmp_path: Path,
) -> None:
    """The store's own BEGIN: IMMEDIATE for writes (lock held from the start), deferred for reads.

    Another connection cannot start writing while a store write is open, even
    before it wrote anything; during a store read it can, and the read keeps
    seeing the state it started with.
    """
    url = sqlite_url(tmp_path)
    db = _database(url, EngineOptions())
    other = sqlite3.connect(tmp_path / "vpod.db", isolation_level=None, timeout=0)
    try:
        with db.write() as conn:
            conn.execute(text("CREATE TABLE t (x INTEGER)"))
        with db.write() as conn:
            conn.execute(text("SELECT count(*) FROM t"))
            with pytest.raises(sqlite3.OperationalError, match="locked"):
                other.execute("BEGIN IMMEDIATE")
        with db.read() as conn:
            assert conn.execute(text("SELECT count(*) FROM t")).scalar() == 0
            other.execute("BEGIN IMMEDIATE")
            other.execute("INSERT INTO t VALUES (1)")
            other.execute("COMMIT")
            assert conn.execute(text("SELECT count(*) FROM t")).scalar() == 0
        with db.read() as conn:
            assert conn.execute(text("SELECT count(*) FROM t")).scalar() == 1
    finally:
        other.close()
        db.dispose()


def test_a_failed_sqlite_write_leaves_nothing_behind(tmp_path: Path) -> None:
    """An error inside a write rolls back every statement before it (one transaction)."""
    db = _database(sqlite_url(tmp_path), EngineOptions())
    try:
        with db.write() as conn:
            conn.execute(text("CREATE TABLE t (x INTEGER)"))

        def insert_then_fail() -> None:
            with db.write() as conn:
                conn.execute(text("INSERT INTO t VALUES (1)"))
                raise RuntimeError("a bug after the first statement")

        with pytest.raises(RuntimeError):
            insert_then_fail()
        with db.read() as conn:
            assert conn.execute(text("SELECT count(*) FROM t")).scalar() == 0
    finally:
        db.dispose()


def _drop_other_connections(url: str) -> int:
    """Terminate every other session on the database of ``url`` (a server restart, in small)."""
    with psycopg.connect(url.replace("postgresql+psycopg://", "postgresql://")) as admin:
        rows = admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
            " WHERE datname = current_database() AND pid <> pg_backend_pid()"
        ).fetchall()
    return len(rows)


@pytest.mark.postgres
def test_an_idle_connection_that_was_lost_is_replaced_unseen(postgres_url: str) -> None:
    """A pooled connection idle past ``pre_ping_idle_s`` is tested first; a dead one is replaced."""
    with Store.open(postgres_url, EngineOptions(pre_ping_idle_s=1e-9)) as store:
        store.ping()
        assert _drop_other_connections(postgres_url) >= 1
        store.ping()


@pytest.mark.postgres
def test_a_connection_used_a_moment_ago_is_not_tested(postgres_url: str) -> None:
    """Within ``pre_ping_idle_s`` no ping is spent: a lost connection fails one call, retryably."""
    with Store.open(postgres_url, EngineOptions(pre_ping_idle_s=3600)) as store:
        store.ping()
        assert _drop_other_connections(postgres_url) >= 1
        with pytest.raises(Unavailable) as caught:
            store.ping()
        assert caught.value.retryable is True
        store.ping()  # the pool reconnected
