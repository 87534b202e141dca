"""Fixtures of the store tests: a migrated database of each kind, emptied before each test.

Creating and migrating a database costs a few hundred milliseconds on
PostgreSQL, so each test module migrates one database per kind and every
test starts by deleting all rows (children before parents), which keeps
tests independent and fast.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

import pytest
from sqlalchemy import Engine, create_engine, text

from tests.pg import PostgresServer
from vpod.store import Store
from vpod.store.engine import normalise_url
from vpod.store.schema import metadata


@dataclass
class MigratedDatabase:
    url: str
    engine: Engine

    def wipe(self) -> None:
        """Delete every row of every table, children first."""
        with self.engine.begin() as conn:
            for table in reversed(metadata.sorted_tables):
                conn.execute(table.delete())


@pytest.fixture(
    scope="module", params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)]
)
def migrated(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[MigratedDatabase]:
    """A database of each kind with the schema at head, shared by the tests of one module."""
    server: PostgresServer | None = None
    name = ""
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path_factory.mktemp('store') / 'vpod.db'}"
    else:
        server = request.getfixturevalue("postgres_server")
        assert server is not None
        name = server.create_database()
        url = server.url(name)
    with Store.open(url) as store:
        store.migrate()
    engine = create_engine(normalise_url(url))
    yield MigratedDatabase(url, engine)
    engine.dispose()
    if server is not None:
        server.drop_database(name)


@pytest.fixture
def store(migrated: MigratedDatabase) -> Iterator[Store]:
    """An open store on an empty, migrated database."""
    migrated.wipe()
    with Store.open(migrated.url) as opened:
        yield opened


@pytest.fixture
def fresh_store(migrated: MigratedDatabase, store: Store) -> Callable[[], Store]:
    """Empty the database again and return the store: one clean start per hypothesis example."""

    def fresh() -> Store:
        migrated.wipe()
        return store

    return fresh


@pytest.fixture
def at_unknown_revision(database_url: str) -> str:
    """``database_url`` migrated, then stamped ``f00dfeed``: a revision this vpod does not
    ship, as a newer vpod would leave the database. Returns the URL."""
    with Store.open(database_url) as opened:
        opened.migrate()
    engine = create_engine(normalise_url(database_url))
    try:
        with engine.begin() as conn:
            conn.execute(text("UPDATE alembic_version SET version_num = 'f00dfeed'"))
    finally:
        engine.dispose()
    return database_url
