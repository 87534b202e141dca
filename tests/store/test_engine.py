"""Database URLs, engine settings and the errors a bad or unreachable database gives."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
from sqlalchemy import text

from tests.pg import PostgresServer
from tests.ports import closed_port
from vpod.store import Store, Unavailable, sqlite_url
from vpod.store import engine as engine_module
from vpod.store.engine import create_store_engine, normalise_url


def test_sqlite_url_is_an_absolute_file_in_the_data_directory(tmp_path: Path) -> None:
    """The default database is vpod.db inside the data directory, by absolute path."""
    url = sqlite_url(tmp_path)
    assert url == f"sqlite:///{tmp_path.resolve() / 'vpod.db'}"


@pytest.mark.parametrize(
    "url",
    [
        "postgresql://vpod:pw@db.example:5432/vpod",
        "postgres://vpod:pw@db.example:5432/vpod",
        "postgresql+psycopg://vpod:pw@db.example:5432/vpod",
    ],
)
def test_postgresql_urls_use_psycopg_3(url: str) -> None:
    """Plain postgresql:// and postgres:// URLs are read as psycopg 3 URLs."""
    assert normalise_url(url).drivername == "postgresql+psycopg"


@pytest.mark.parametrize(
    ("url", "words"),
    [
        ("not a url", "cannot be parsed"),
        ("mysql://u@h/db", "unsupported database 'mysql'"),
        ("postgresql+psycopg2://u@h/db", "psycopg 3"),
        ("sqlite://", "in-memory"),
        ("sqlite:///:memory:", "in-memory"),
    ],
)
def test_unusable_urls_are_refused_with_a_sentence(url: str, words: str) -> None:
    """A URL the store cannot use is Unavailable, not retryable, and says which URLs work."""
    with pytest.raises(Unavailable, match=words) as caught:
        Store.open(url)
    assert caught.value.retryable is False


def test_passwords_never_appear_in_messages() -> None:
    """Messages name the database without its password."""
    url = f"postgresql+psycopg://vpod:s3cret@127.0.0.1:{closed_port()}/vpod"
    with Store.open(url) as store, pytest.raises(Unavailable) as caught:
        store.ping()
    assert "s3cret" not in str(caught.value)
    assert "***" in str(caught.value)


def test_unreachable_postgresql_is_unavailable_and_retryable() -> None:
    """Nobody listening on the port: Unavailable, retryable, with advice to check the server."""
    url = f"postgresql+psycopg://vpod@127.0.0.1:{closed_port()}/vpod"
    with Store.open(url) as store, pytest.raises(Unavailable, match="check that the server") as e:
        store.ping()
    assert e.value.retryable is True


@pytest.mark.postgres
def test_missing_postgresql_database_says_so(postgres_server: PostgresServer) -> None:
    """A URL naming a database the server lacks is Unavailable and says to create it."""
    store = Store.open(postgres_server.url("no_such_db"))
    with store, pytest.raises(Unavailable, match="does not exist") as caught:
        store.ping()
    assert caught.value.retryable is False


def test_sqlite_file_in_a_missing_directory_says_so(tmp_path: Path) -> None:
    """SQLite cannot create a file in a directory that does not exist: the message says so."""
    store = Store.open(sqlite_url(tmp_path / "missing" / "dir"))
    with store, pytest.raises(Unavailable, match="directory exists"):
        store.ping()


def test_an_unmigrated_database_asks_for_migrations(database_url: str) -> None:
    """Using the store before migrate() explains that the schema is missing."""
    with Store.open(database_url) as store:
        store.ping()
        assert store.schema_revision() is None
        with pytest.raises(Unavailable, match="run the migrations"):
            store.list_agents()


def test_sqlite_runs_in_wal_mode_with_foreign_keys_and_a_busy_timeout(tmp_path: Path) -> None:
    """Every SQLite connection gets WAL, foreign keys and the busy timeout."""
    engine = create_store_engine(sqlite_url(tmp_path))
    try:
        with engine.connect() as conn:
            assert conn.execute(text("PRAGMA journal_mode")).scalar() == "wal"
            assert conn.execute(text("PRAGMA foreign_keys")).scalar() == 1
            assert conn.execute(text("PRAGMA busy_timeout")).scalar() == 30_000
    finally:
        engine.dispose()


def test_store_reports_its_dialect_and_url(database_url: str) -> None:
    """A store says which kind of database it uses."""
    with Store.open(database_url) as store:
        assert store.dialect in ("sqlite", "postgresql")
        assert store.url.split(":")[0].startswith(store.dialect)


def test_opening_a_fresh_sqlite_file_waits_for_another_writer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Switching a new file to WAL while another connection writes waits instead of failing.

    SQLite refuses that switch at once ("database is locked") rather than
    using the busy timeout; the store pauses and retries. The pause is
    replaced here by the other writer committing, so the test never sleeps.
    """
    path = tmp_path / "vpod.db"
    writer = sqlite3.connect(path, isolation_level=None)
    writer.execute("CREATE TABLE t (x)")
    writer.execute("BEGIN IMMEDIATE")
    writer.execute("INSERT INTO t VALUES (1)")
    pauses: list[float] = []

    def commit_instead_of_sleeping(seconds: float) -> None:
        pauses.append(seconds)
        writer.commit()

    monkeypatch.setattr(
        engine_module,
        "time",
        SimpleNamespace(monotonic=time.monotonic, sleep=commit_instead_of_sleeping),
    )
    engine = create_store_engine(f"sqlite:///{path}")
    try:
        with engine.connect() as conn:
            assert conn.execute(text("PRAGMA journal_mode")).scalar() == "wal"
    finally:
        engine.dispose()
        writer.close()
    assert len(pauses) == 1
