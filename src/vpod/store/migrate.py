"""Running the Alembic migrations programmatically, safely from several processes.

``upgrade`` runs every pending revision in one transaction, so an upgrade is
all or nothing, and serialises concurrent upgrades (two controller replicas
starting at once): on PostgreSQL with a transaction-scoped advisory lock, on
SQLite with ``BEGIN IMMEDIATE`` (the database's single write lock), and
within one process with a lock around Alembic. The second upgrader then
finds the schema at head and does nothing.

On SQLite, foreign keys are switched off for the duration of the upgrade, as
SQLite's documentation prescribes for schema changes (a batch "alter" copies
a table, drops the old one and renames the copy, and dropping a parent with
foreign keys on would cascade). ``PRAGMA foreign_key_check`` runs before the
commit so an upgrade cannot leave a dangling reference behind.
"""

from __future__ import annotations

import threading
from typing import Any

from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from alembic.util import CommandError
from sqlalchemy import Connection, text

from .engine import Database, sqlite_schema_change
from .errors import StoreError
from .schema import metadata
from .translate import translate_errors

SCRIPT_LOCATION = "vpod.store:migrations"
_PG_MIGRATION_LOCK = 0x7670_6F64  # "vpod": the advisory lock key serialising upgrades
_ALEMBIC_LOCK = threading.Lock()
"""Alembic keeps its running migration context in module-level proxies (``alembic.op``,
``alembic.context``), so two threads of one process must not run it at once; the
database's locks only order different processes."""


def _config(connection: Connection | None = None) -> Config:
    config = Config()
    config.set_main_option("script_location", SCRIPT_LOCATION)
    config.attributes["connection"] = connection
    return config


def head_revision() -> str:
    """The newest revision shipped with this version of vpod."""
    head = ScriptDirectory.from_config(_config()).get_current_head()
    assert head is not None, "the migrations package has no revisions"
    return head


def current_revision(db: Database) -> str | None:
    """The revision the database is at (``None`` for an empty database)."""
    with db.read() as conn:
        return MigrationContext.configure(conn).get_current_revision()


def upgrade(db: Database, revision: str = "head") -> None:
    """Bring the schema to ``revision`` (default: the newest) in one transaction."""
    try:
        with _ALEMBIC_LOCK:
            _upgrade(db, revision)
    except CommandError as exc:
        raise StoreError(
            f"the schema of database {db.description} cannot be upgraded ({exc}): it may have"
            " been written by a newer vpod; run that version, or restore a backup"
        ) from exc


def _upgrade(db: Database, revision: str) -> None:
    with translate_errors(db.description), db.engine.connect() as conn:
        if db.dialect == "sqlite":
            with sqlite_schema_change(db, conn, f"the migration to {revision}"):
                command.upgrade(_config(conn), revision)
        else:
            with db.transaction(conn, write=True):
                conn.execute(
                    text("SELECT pg_advisory_xact_lock(:key)"), {"key": _PG_MIGRATION_LOCK}
                )
                command.upgrade(_config(conn), revision)


def schema_differences(db: Database) -> list[Any]:
    """What Alembic's autogenerate sees between the database and ``schema.py`` (empty = match)."""
    with db.read() as conn:
        context = MigrationContext.configure(
            conn, opts={"compare_type": True, "compare_server_default": True}
        )
        return list(compare_metadata(context, metadata))


def new_revision(db: Database, message: str) -> None:
    """Write a new revision script from the difference between ``db`` and ``schema.py``.

    A developer tool: point it at a database upgraded to head, review the
    generated script under ``vpod/store/migrations/versions/``, then commit it.
    """
    with _ALEMBIC_LOCK, db.read() as conn:
        command.revision(_config(conn), message=message, autogenerate=True)
