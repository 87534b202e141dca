"""Alembic environment: migrations run only on a connection the store hands over.

:func:`vpod.store.migrate.upgrade` opens the transaction (taking the
migration lock) and passes its connection in ``config.attributes``; this
script runs the revisions inside that transaction, so an upgrade is all or
nothing on both SQLite and PostgreSQL. ``render_as_batch`` lets future
revisions alter SQLite tables (SQLite rebuilds a table to alter it).
"""

from __future__ import annotations

from typing import Any, Literal

from alembic import context
from alembic.autogenerate.api import AutogenContext

from vpod.store.columns import UtcDateTime
from vpod.store.schema import metadata


def _render_item(kind: str, obj: Any, _autogen: AutogenContext) -> str | Literal[False]:
    """Render store-specific column types as plain SQLAlchemy types.

    Revision scripts must not import ``schema.py``: it describes the newest
    schema and later changes to it would rewrite history.
    """
    if kind == "type" and isinstance(obj, UtcDateTime):
        return "sa.DateTime(timezone=True)"
    return False


connection = context.config.attributes.get("connection")
if connection is None:
    raise RuntimeError(
        "vpod migrations run through the store: call Store.migrate() (or vpod.store.migrate),"
        " not the alembic command line"
    )
context.configure(
    connection=connection,
    target_metadata=metadata,
    render_as_batch=True,
    compare_type=True,
    compare_server_default=True,
    render_item=_render_item,
)
with context.begin_transaction():
    context.run_migrations()
