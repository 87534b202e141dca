"""Fixtures shared by every test suite: databases to run against.

- ``postgres_server``: one private PostgreSQL server per test session (see
  ``tests/pg.py``); tests that use it skip with the reason when no server can
  be started.
- ``postgres_url``: a new, empty PostgreSQL database for one test, as a
  SQLAlchemy URL (``postgresql+psycopg://...``); dropped afterwards.
- ``database_url``: parametrized over an SQLite file and a PostgreSQL
  database, so a test runs once on each; the PostgreSQL case carries the
  ``postgres`` marker (deselect with ``-m "not postgres"``).

``scripts/test`` runs pytest-xdist workers; :class:`ModuleScheduling` hands
each a whole test module at a time, and the Slurm package as one unit because
its modules share one slurmctld.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from xdist.remote import Producer
from xdist.scheduler import LoadFileScheduling

from tests.host_networks import network_dirs, remove_networks
from tests.pg import PostgresServer, PostgresUnavailable

SINGLE_GROUP_PACKAGES = ("tests/slurm/",)
"""Packages whose modules share a package-scoped service that must exist once."""


class ModuleScheduling(LoadFileScheduling):
    """xdist work units: one test module (its shared pod starts once, its tests keep their
    order), or a whole package from ``SINGLE_GROUP_PACKAGES``."""

    def _split_scope(self, nodeid: str) -> str:
        package = next((p for p in SINGLE_GROUP_PACKAGES if nodeid.startswith(p)), None)
        return package or super()._split_scope(nodeid)


def pytest_xdist_make_scheduler(config: pytest.Config, log: Producer) -> ModuleScheduling:
    return ModuleScheduling(config, log)


@pytest.fixture(scope="module", autouse=True)
def _no_tenant_networks_left(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """The tenant networks a module's clouds made on the host go with the module."""
    root = tmp_path_factory.getbasetemp()
    before = network_dirs(root)
    yield
    remove_networks(network_dirs(root) - before)


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
