"""The PostgreSQL test fixture explains why it cannot run instead of failing obscurely."""

from __future__ import annotations

import psycopg
import pytest

from tests import pg
from tests.pg import PostgresServer, PostgresUnavailable


def test_missing_server_binaries_name_the_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without Debian's PostgreSQL the reason names scripts/ensure-system-deps."""
    monkeypatch.delenv(pg.EXTERNAL_URL_ENV, raising=False)
    monkeypatch.setattr(pg.glob, "glob", lambda _pattern: [])
    with pytest.raises(PostgresUnavailable, match="scripts/ensure-system-deps"):
        PostgresServer.start()


def test_an_unreachable_external_server_is_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    """A wrong $VPOD_TEST_POSTGRES_URL is reported with the URL it tried."""
    url = "postgresql://postgres@127.0.0.1:1/postgres"
    monkeypatch.setenv(pg.EXTERNAL_URL_ENV, url)
    with pytest.raises(PostgresUnavailable, match="does not answer"):
        PostgresServer.start()


@pytest.mark.postgres
def test_each_test_database_is_new_and_empty(postgres_server: PostgresServer) -> None:
    """Two databases from the fixture have different names and no tables."""
    first, second = postgres_server.create_database(), postgres_server.create_database()
    try:
        assert first != second
        dsn = postgres_server.url(first).replace("postgresql+psycopg://", "postgresql://")
        with psycopg.connect(dsn) as conn:
            tables = conn.execute(
                "SELECT count(*) FROM information_schema.tables WHERE table_schema = 'public'"
            ).fetchone()
        assert tables == (0,)
    finally:
        postgres_server.drop_database(first)
        postgres_server.drop_database(second)
