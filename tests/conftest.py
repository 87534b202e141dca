"""Fixtures shared by every test suite: databases to run against.

- ``postgres_server``: one private PostgreSQL server per test session (see
  ``tests/pg.py``); tests that use it skip with the reason when no server can
  be started.
- ``postgres_url``: a new, empty PostgreSQL database for one test, as a
  SQLAlchemy URL (``postgresql+psycopg://...``); dropped afterwards.
- ``database_url``: parametrized over an SQLite file and a PostgreSQL
  database, so a test runs once on each; the PostgreSQL case carries the
  ``postgres`` marker (deselect with ``-m "not postgres"``).

``scripts/test`` runs pytest-xdist workers with ``--dist loadgroup``: each test
module is one group, so a module's shared pod starts once, on one worker; the
Slurm package is a single group because its tests share one slurmctld.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.pg import PostgresServer, PostgresUnavailable

TESTS = Path(__file__).resolve().parent
SINGLE_GROUP_PACKAGES = ("slurm",)
"""Packages whose modules share a package-scoped service that must exist once."""


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        parts = item.path.resolve().relative_to(TESTS).parts
        group = parts[0] if parts[0] in SINGLE_GROUP_PACKAGES else "/".join(parts)
        item.add_marker(pytest.mark.xdist_group(group))


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """A PostgreSQL server for the whole session, stopped at its end."""
    try:
        server = PostgresServer.start()
    except PostgresUnavailable as exc:
        pytest.skip(f"PostgreSQL is not available: {exc}")
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def postgres_url(postgres_server: PostgresServer) -> Iterator[str]:
    """A fresh, empty PostgreSQL database for this test."""
    name = postgres_server.create_database()
    yield postgres_server.url(name)
    postgres_server.drop_database(name)


@pytest.fixture
def sqlite_file_url(tmp_path: Path) -> str:
    """A fresh SQLite database file for this test."""
    return f"sqlite:///{tmp_path / 'vpod.db'}"


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def database_url(request: pytest.FixtureRequest) -> str:
    """An empty database of each supported kind: the test runs once per kind."""
    fixture = "sqlite_file_url" if request.param == "sqlite" else "postgres_url"
    url: str = request.getfixturevalue(fixture)
    return url
