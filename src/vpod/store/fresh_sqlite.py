"""A new SQLite store made from its schema at head, not by replaying every migration.

Every ``vpod up`` on a new data directory and every ``vipu-server --init`` creates
a store, and replaying the migrations costs half a second of CPU: Alembic's
import, then each revision's statements in turn. The result is always the same
database, so ``fresh_sqlite.sql`` (beside this module) holds it as SQL: the
dump of a database the migrations brought to head (tables, indexes, triggers,
seed rows and ``alembic_version``), which an empty SQLite database runs in one
transaction. Nothing else changes: a database that is not empty, or a script
whose revision is not the shipped head, goes through Alembic as before, and
PostgreSQL always does.

The script is written by ``python -m vpod.store.fresh_sqlite`` (after adding a
migration) from a database migrated by Alembic; ``tests/store/test_fresh_sqlite.py``
fails while it differs from what the migrations make.
"""

from __future__ import annotations

import argparse
import functools
import importlib.resources
import re
import sqlite3
import sys
import tempfile
from pathlib import Path

from .engine import Database, create_store_engine, sqlite_schema_change, sqlite_url
from .schema_version import shipped_head
from .translate import translate_errors

SCRIPT = "fresh_sqlite.sql"
_HEADER = "-- vpod's SQLite schema at revision {revision}: python -m vpod.store.fresh_sqlite\n"
_REVISION = re.compile(r"^-- vpod's SQLite schema at revision (\S+):")


def split_statements(script: str) -> list[str]:
    """The statements of ``script`` (a trigger's body holds semicolons of its own)."""
    statements: list[str] = []
    pending = ""
    for line in script.splitlines(keepends=True):
        if not pending and (not line.strip() or line.startswith("--")):
            continue
        pending += line
        if sqlite3.complete_statement(pending):
            statements.append(pending.strip())
            pending = ""
    if pending.strip():
        raise ValueError(f"{SCRIPT} ends inside a statement: {pending[:80]!r}")
    return statements


@functools.cache
def shipped_script() -> tuple[str | None, tuple[str, ...]]:
    """(the revision the shipped script is at, its statements)."""
    text = importlib.resources.files(__package__).joinpath(SCRIPT).read_text(encoding="utf-8")
    match = _REVISION.match(text)
    return (match.group(1) if match else None), tuple(split_statements(text))


def create_if_empty(db: Database) -> bool:
    """Create the schema at head on ``db`` if it is an empty SQLite database; False (nothing
    done) otherwise, or when the shipped script is not at the shipped head: Alembic then."""
    if db.dialect != "sqlite":
        return False
    revision, statements = shipped_script()
    if revision is None or revision != shipped_head():
        return False
    # As a migration is run: the seed rows go in table order, not parents first.
    with (
        translate_errors(db.description),
        db.engine.connect() as conn,
        sqlite_schema_change(db, conn, SCRIPT),
    ):
        # Under the write lock: a second process that lost the race finds the schema here.
        if conn.exec_driver_sql("SELECT count(*) FROM sqlite_master").scalar():
            return False
        for statement in statements:
            conn.exec_driver_sql(statement)
    return True


def dump_of(path: Path) -> str:
    """The script for the SQLite database at ``path``: its dump without the dump's own
    transaction, under a header naming the revision it is at."""
    with sqlite3.connect(path) as conn:
        revision = conn.execute("SELECT version_num FROM alembic_version").fetchone()[0]
        statements = [s for s in conn.iterdump() if s not in ("BEGIN TRANSACTION;", "COMMIT;")]
    conn.close()
    return _HEADER.format(revision=revision) + "\n" + "\n\n".join(statements) + "\n"


def migrated_by_alembic(directory: Path) -> Path:
    """A new SQLite database in ``directory`` brought to head by the migrations themselves."""
    from . import migrate  # Alembic: only to write or check the script

    directory.mkdir(parents=True, exist_ok=True)
    db = Database(create_store_engine(sqlite_url(directory)))
    try:
        migrate.upgrade(db)
    finally:
        db.dispose()
    return directory / "vpod.db"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m vpod.store.fresh_sqlite",
        description=f"Write {SCRIPT} from a database the migrations bring to head.",
    )
    parser.add_argument(
        "--check", action="store_true", help="only say whether the shipped script is current"
    )
    args = parser.parse_args(argv)
    target = Path(__file__).with_name(SCRIPT)
    with tempfile.TemporaryDirectory() as tmp:
        script = dump_of(migrated_by_alembic(Path(tmp)))
    if args.check:
        current = target.exists() and target.read_text(encoding="utf-8") == script
        print(f"{SCRIPT} is current" if current else f"{SCRIPT} is stale: run {parser.prog}")
        return 0 if current else 1
    target.write_text(script, encoding="utf-8")
    print(f"wrote {target}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
