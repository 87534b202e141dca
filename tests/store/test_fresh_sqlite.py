"""A new SQLite store is made from ``fresh_sqlite.sql``: it must be, row for row and
statement for statement, the database the migrations make, and everything else still
goes through Alembic."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from vpod.store import Store, StoreError, fresh_sqlite, sqlite_url
from vpod.store.engine import Database, create_store_engine
from vpod.store.migrate import head_revision, schema_differences, upgrade


def _dump(path: Path) -> list[str]:
    with sqlite3.connect(path) as conn:
        statements = list(conn.iterdump())
    conn.close()
    return statements


def test_the_shipped_script_is_what_the_migrations_make(tmp_path: Path) -> None:
    """Regenerate with ``python -m vpod.store.fresh_sqlite`` after adding a migration."""
    made = fresh_sqlite.dump_of(fresh_sqlite.migrated_by_alembic(tmp_path))
    shipped = Path(fresh_sqlite.__file__).with_name(fresh_sqlite.SCRIPT).read_text()
    assert shipped == made, "fresh_sqlite.sql is stale: run python -m vpod.store.fresh_sqlite"
    revision, statements = fresh_sqlite.shipped_script()
    assert revision == head_revision()
    assert any(s.startswith("CREATE TRIGGER") for s in statements)  # whole, with ; inside


def test_a_new_store_is_the_database_the_migrations_make(tmp_path: Path) -> None:
    by_alembic = fresh_sqlite.migrated_by_alembic(tmp_path / "alembic")
    (tmp_path / "fresh").mkdir()
    db = Database(create_store_engine(sqlite_url(tmp_path / "fresh")))
    try:
        assert fresh_sqlite.create_if_empty(db)
        assert schema_differences(db) == []
    finally:
        db.dispose()
    assert _dump(tmp_path / "fresh" / "vpod.db") == _dump(by_alembic)


def test_a_new_store_works_and_keeps_its_constraints(tmp_path: Path) -> None:
    """Foreign keys are back on after the script, and the seed rows and triggers are there."""
    with Store.open(sqlite_url(tmp_path)) as store:
        store.migrate()
        assert store.schema_revision() == head_revision()
    with sqlite3.connect(tmp_path / "vpod.db") as conn:
        conn.execute("PRAGMA foreign_keys = ON")
        with pytest.raises(sqlite3.IntegrityError):
            conn.execute(
                "INSERT INTO cluster_agents (cluster_id, agent_id, position)"
                " VALUES ('no-such-cluster', 'no-such-agent', 0)"
            )
        before = conn.execute("SELECT version FROM inventory_version").fetchone()
        conn.execute(
            "INSERT INTO clusters (id, num_domains, ild_topology, gw_topology, machine_type)"
            " VALUES ('c1', 1, 'mesh', 'mesh', 'bow2000')"
        )
        after = conn.execute("SELECT version FROM inventory_version").fetchone()
    conn.close()
    assert after[0] == before[0] + 1


def test_a_database_that_is_not_empty_is_left_to_alembic(tmp_path: Path) -> None:
    db = Database(create_store_engine(sqlite_url(tmp_path)))
    try:
        upgrade(db, "0014_ssh_direct_ports")
        assert not fresh_sqlite.create_if_empty(db)  # nothing done: Alembic upgrades it
        Store(db).migrate()
        assert db.run_read(lambda c: c.exec_driver_sql("SELECT * FROM alembic_version").all())
        assert schema_differences(db) == []
    finally:
        db.dispose()


def test_a_script_behind_the_shipped_head_is_not_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A migration added without writing the script again: Alembic makes the store."""
    _, statements = fresh_sqlite.shipped_script()
    monkeypatch.setattr(fresh_sqlite, "shipped_script", lambda: ("0001_older", statements))
    db = Database(create_store_engine(sqlite_url(tmp_path)))
    try:
        assert not fresh_sqlite.create_if_empty(db)
        Store(db).migrate()
        assert schema_differences(db) == []
    finally:
        db.dispose()


def test_a_new_postgresql_store_is_left_to_alembic(postgres_url: str) -> None:
    db = Database(create_store_engine(postgres_url))
    try:
        assert not fresh_sqlite.create_if_empty(db)
    finally:
        db.dispose()


def test_split_statements_keeps_trigger_bodies_whole() -> None:
    script = (
        "-- a header\n\nCREATE TABLE t (a INT);\n\n"
        "CREATE TRIGGER g AFTER INSERT ON t BEGIN\n  UPDATE t SET a = 1;\n  SELECT 1;\nEND;\n"
    )
    assert fresh_sqlite.split_statements(script) == [
        "CREATE TABLE t (a INT);",
        "CREATE TRIGGER g AFTER INSERT ON t BEGIN\n  UPDATE t SET a = 1;\n  SELECT 1;\nEND;",
    ]
    with pytest.raises(ValueError, match="ends inside a statement"):
        fresh_sqlite.split_statements("CREATE TABLE t (a INT)")


def test_the_check_says_whether_the_script_is_current() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "vpod.store.fresh_sqlite", "--check"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "fresh_sqlite.sql is current" in done.stdout


def test_a_script_leaving_a_dangling_row_is_rolled_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Foreign keys are off while the script runs (as for a migration), and checked before
    the commit: a row pointing at nothing refuses the whole script, and nothing is left."""
    revision, statements = fresh_sqlite.shipped_script()
    dangling = (
        "INSERT INTO cluster_agents (cluster_id, position, agent_id)"
        " VALUES ('no-such-cluster', 0, 'no-such-agent');"
    )
    monkeypatch.setattr(fresh_sqlite, "shipped_script", lambda: (revision, (*statements, dangling)))
    db = Database(create_store_engine(sqlite_url(tmp_path)))
    try:
        with pytest.raises(StoreError, match="would leave rows pointing at missing rows"):
            fresh_sqlite.create_if_empty(db)
        tables = db.run_read(
            lambda c: c.exec_driver_sql("SELECT count(*) FROM sqlite_master").scalar()
        )
        assert tables == 0
    finally:
        db.dispose()
