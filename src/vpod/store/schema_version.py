"""Whether a database's schema is already at this vpod's newest revision, asked without Alembic.

Every ``vipu-server``, ``vpod up`` and ``vipu-server --init`` migrates its
store when it starts, and almost always finds it at head. Importing Alembic
(and with it SQLAlchemy's PostgreSQL dialect, whatever the database) and
building its migration context costs a third of a second of CPU or more per
start; reading ``alembic_version`` costs one query. So the store reads the
stored revision with plain SQLAlchemy, compares it with the head of the
revision scripts shipped in ``migrations/versions`` (read from their source,
so it cannot go stale), and hands over to Alembic (:mod:`vpod.store.migrate`)
only when they differ, when the scripts do not form one line, or when the
database holds something else: Alembic then upgrades, or refuses with advice
as it always did.
"""

from __future__ import annotations

import ast
import functools
import importlib.resources
from importlib.resources.abc import Traversable

from sqlalchemy import Connection, text

from .engine import Database

VERSION_TABLE = "alembic_version"
"""Where Alembic records the revision a database is at (its default name, which env.py keeps)."""
VERSIONS_PACKAGE = "vpod.store.migrations.versions"


@functools.cache
def shipped_head() -> str | None:
    """The head of the revision scripts shipped with this vpod, read from their source.

    ``None`` when the scripts have no single head (a branch, a cycle, a script
    whose ids are not plain strings): Alembic, not this shortcut, decides then.
    """
    return head_of(importlib.resources.files(VERSIONS_PACKAGE))


def head_of(versions: Traversable) -> str | None:
    """The one revision of the scripts in ``versions`` that no other revises, if exactly one."""
    revises: dict[str, tuple[str, ...]] = {}
    for entry in versions.iterdir():
        if not entry.name.endswith(".py") or entry.name.startswith("__"):
            continue
        ids = _revision_ids(entry.read_text(encoding="utf-8"))
        if ids is None or ids[0] in revises:
            return None
        revises[ids[0]] = ids[1]
    revised = {parent for parents in revises.values() for parent in parents}
    if not revised <= revises.keys():
        return None  # a script revises one that is not shipped
    heads = [revision for revision in revises if revision not in revised]
    return heads[0] if len(heads) == 1 else None


def _revision_ids(source: str) -> tuple[str, tuple[str, ...]] | None:
    """A script's ``revision`` and the revisions its ``down_revision`` names, from its source."""
    values: dict[str, object] = {}
    for node in ast.parse(source).body:
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value:
            target, value = node.target.id, node.value
        elif (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
        ):
            target, value = node.targets[0].id, node.value
        else:
            continue
        if target in ("revision", "down_revision"):
            try:
                values[target] = ast.literal_eval(value)
            except ValueError:
                return None
    revision, down = values.get("revision"), values.get("down_revision")
    if not isinstance(revision, str):
        return None
    if down is None:
        return revision, ()
    if isinstance(down, str):
        return revision, (down,)
    if isinstance(down, tuple | list) and all(isinstance(d, str) for d in down):
        return revision, tuple(down)
    return None


def stored_revisions(conn: Connection) -> tuple[str, ...]:
    """The revisions ``alembic_version`` holds (none for a database never migrated)."""
    if not conn.dialect.has_table(conn, VERSION_TABLE):
        return ()
    rows = conn.execute(text(f"SELECT version_num FROM {VERSION_TABLE}")).scalars()
    return tuple(sorted(rows))


def at_head(db: Database) -> bool:
    """Whether ``db`` is at the shipped head, so that migrating it would change nothing."""
    head = shipped_head()
    if head is None:
        return False
    return db.run_read(stored_revisions) == (head,)
