"""Migrations: upgrade from empty on both databases, and the revisions match schema.py."""

from __future__ import annotations

import importlib.resources
import itertools
import threading
from datetime import UTC, datetime

import pytest
from alembic.config import Config
from alembic.script import ScriptDirectory
from sqlalchemy import create_engine, inspect

from vpod.store import Store, StoreError
from vpod.store.engine import Database, create_store_engine, normalise_url
from vpod.store.migrate import SCRIPT_LOCATION, head_revision, schema_differences, upgrade
from vpod.store.schema import metadata


def test_upgrade_from_empty_creates_every_table(database_url: str) -> None:
    """migrate() on an empty database creates every table of schema.py and records head."""
    with Store.open(database_url) as store:
        store.migrate()
        assert store.schema_revision() == head_revision()
    engine = create_engine(normalise_url(database_url))
    try:
        tables = set(inspect(engine).get_table_names())
    finally:
        engine.dispose()
    assert set(metadata.tables) <= tables
    assert "alembic_version" in tables


def test_revisions_match_the_models(database_url: str) -> None:
    """Autogenerate finds nothing to change after upgrading: the scripts match schema.py.
    (Through Alembic itself: a new SQLite store is made from ``fresh_sqlite.sql``, which
    ``test_fresh_sqlite.py`` holds to what these scripts make.)"""
    db = Database(create_store_engine(database_url))
    try:
        upgrade(db)
        assert schema_differences(db) == []
    finally:
        db.dispose()


def test_migrate_twice_changes_nothing(database_url: str) -> None:
    """A second migrate() on an up-to-date database is a no-op that keeps the data."""
    with Store.open(database_url) as store:
        store.migrate()
        store.append_event(
            time=datetime(2026, 1, 1, tzinfo=UTC),
            actor="admin",
            action="test",
            target="db",
            outcome="ok",
        )
        store.migrate()
        assert len(store.list_events()) == 1


def test_concurrent_upgrades_from_two_replicas_both_succeed(database_url: str) -> None:
    """Two stores migrate one empty database at once: one upgrades, the other waits; no error."""
    errors: list[BaseException] = []
    barrier = threading.Barrier(2)

    def upgrade() -> None:
        with Store.open(database_url) as store:
            barrier.wait()
            try:
                store.migrate()
            except BaseException as exc:  # reported below
                errors.append(exc)

    threads = [threading.Thread(target=upgrade) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    with Store.open(database_url) as store:
        assert store.schema_revision() == head_revision()


def test_a_schema_from_a_newer_vpod_is_refused_with_advice(at_unknown_revision: str) -> None:
    """A database at a revision this code does not know is refused, not damaged."""
    with Store.open(at_unknown_revision) as store, pytest.raises(StoreError, match="newer vpod"):
        store.migrate()


def test_revision_scripts_ship_inside_the_package() -> None:
    """The Alembic environment and revisions are package files, found without alembic.ini."""
    root = importlib.resources.files("vpod.store.migrations")
    names = {entry.name for entry in root.iterdir()}
    assert {"env.py", "script.py.mako", "versions"} <= names
    versions = {entry.name for entry in root.joinpath("versions").iterdir()}
    assert any(name.startswith("0001_") for name in versions)


def test_revisions_form_one_chain_ending_at_the_newest_file() -> None:
    """Revisions are numbered 0001, 0002, ... in file names and ids (an id may go on with a
    name, ``0007_gpu_host_agents``, so branches adding migrations at once do not clash), each
    revising the one before, and the head is the newest file: no branch, no gap, no stray
    script."""
    root = importlib.resources.files("vpod.store.migrations").joinpath("versions")
    numbered = sorted(
        entry.name[:4]
        for entry in root.iterdir()
        if entry.name.endswith(".py") and entry.name[:4].isdigit()
    )
    assert numbered == [f"{n:04d}" for n in range(1, len(numbered) + 1)]
    scripts = ScriptDirectory.from_config(_alembic_config())
    chain = [script.revision for script in scripts.walk_revisions()]  # head first
    assert [revision[:4] for revision in chain] == list(reversed(numbered))
    assert all(len(r) == 4 or r[4] == "_" for r in chain)
    for newer, older in itertools.pairwise(chain):
        assert scripts.get_revision(newer).down_revision == older
    assert scripts.get_revision(chain[-1]).down_revision is None
    assert head_revision() == chain[0]
    assert head_revision()[:4] == numbered[-1]


def _alembic_config() -> Config:
    config = Config()
    config.set_main_option("script_location", SCRIPT_LOCATION)
    return config
