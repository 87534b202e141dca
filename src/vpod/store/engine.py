"""Database URLs, engine setup and transactions for SQLite and PostgreSQL.

Two kinds of database are supported, chosen by URL:

- ``sqlite:///PATH`` (the default, see :func:`sqlite_url`): one file in the
  data directory, in WAL mode so readers never block the writer, with foreign
  keys enforced and a busy timeout so that concurrent writers (threads, or a
  second process) wait for the lock instead of failing at once.
  ``synchronous=NORMAL`` is SQLite's recommended setting for WAL: a commit
  survives a crash of the process; a power cut may lose the last commits
  but never corrupts the file.
- ``postgresql+psycopg://USER:PASSWORD@HOST:PORT/DATABASE`` (``postgresql://``
  and ``postgres://`` are accepted and use psycopg 3 as well).

Every store operation runs in one transaction opened by :meth:`Database.read`
or :meth:`Database.write`. On SQLite, the store sends ``BEGIN`` itself (the
sqlite3 module's legacy mode, which starts transactions only at the first
write, is switched off): a write transaction starts with ``BEGIN IMMEDIATE``
and so holds the write lock from its first read, which makes read-then-write
transactions serializable without retry loops; a read transaction starts
with a plain ``BEGIN`` and sees one snapshot. ``BEGIN`` goes straight to the
driver from :meth:`Database.transaction`, not from a SQLAlchemy ``begin``
event: any connection event makes SQLAlchemy dispatch events around every
statement, a sixth of the CPU of a partition write. So a transaction on a
store's SQLite engine must be opened with :meth:`Database.transaction`; a
bare ``conn.begin()`` there would leave each statement to commit alone.

On PostgreSQL, writes run in READ COMMITTED and rely on unique constraints
and compare-and-set updates; reads that issue several queries run in
REPEATABLE READ so that they see one snapshot.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Concatenate, ParamSpec, TypeVar

from sqlalchemy import Connection, Engine, create_engine, event
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError, DBAPIError, InvalidatePoolError, NoSuchModuleError

from .checkpoint import SAFETY_NET_PAGES, WalCheckpointer
from .errors import StoreError, Unavailable
from .translate import ConstraintViolated, translate_errors

SQLITE_FILE_NAME = "vpod.db"
URL_HELP = "use sqlite:///PATH or postgresql+psycopg://USER:PASSWORD@HOST:PORT/DATABASE"


def sqlite_url(data_dir: str | Path) -> str:
    """The URL of the default SQLite database file inside ``data_dir``."""
    return f"sqlite:///{Path(data_dir).expanduser().resolve() / SQLITE_FILE_NAME}"


@dataclass(frozen=True, slots=True)
class EngineOptions:
    """Tunables of the connection to the database; the defaults suit a controller."""

    busy_timeout_s: float = 30.0
    """SQLite: how long a writer waits for another writer's lock before giving up."""
    connect_timeout_s: int = 10
    """PostgreSQL: how long to wait for the server to answer a new connection."""
    pool_size: int = 5
    """PostgreSQL: connections kept open per store (SQLite keeps one per thread in use)."""
    max_overflow: int = 10
    """PostgreSQL: extra connections opened under load, closed when idle."""
    sqlite_checkpoint_every: int = 200
    """SQLite: checkpoint the WAL on a background thread after this many write transactions
    (see :mod:`vpod.store.checkpoint`); 0 leaves it to SQLite, inside the committing writer."""
    pre_ping: bool = True
    """PostgreSQL: test a pooled connection before use (one round trip), so a restarted
    server costs no failed request; without it the first use after a restart is
    ``Unavailable`` and the pool reconnects."""
    pre_ping_idle_s: float = 1.0
    """PostgreSQL: with ``pre_ping``, test only connections idle for at least this long
    (0: every checkout). Under load a connection comes back within milliseconds and the
    round trip would cost a tenth of a partition write; a server restart is still
    noticed, at worst by one request that then fails as ``Unavailable`` (retryable) and
    makes the pool reconnect every connection."""


def normalise_url(url: str) -> URL:
    """Parse ``url`` and pick the driver; refuse what the store cannot use.

    Raises :class:`Unavailable` (not retryable) with a sentence saying which
    URLs work, since a wrong URL will not fix itself.
    """
    try:
        parsed = make_url(url)
    except ArgumentError:
        raise Unavailable(
            f"database URL {_redact(url)!r} cannot be parsed: {URL_HELP}", retryable=False
        ) from None
    backend = parsed.get_backend_name()
    if backend in ("postgresql", "postgres"):
        driver = parsed.get_driver_name() if "+" in parsed.drivername else "psycopg"
        if driver != "psycopg":
            raise Unavailable(
                f"database URL {_redact(url)!r} asks for driver {driver!r}: vpod talks to"
                " PostgreSQL through psycopg 3, use postgresql+psycopg://",
                retryable=False,
            )
        return parsed.set(drivername="postgresql+psycopg")
    if backend == "sqlite":
        if parsed.database in (None, "", ":memory:") or parsed.database.startswith("file::memory"):
            raise Unavailable(
                "an in-memory SQLite database is lost when its connection closes and cannot"
                " be shared between threads: give a file, e.g. sqlite:///var/lib/vpod/"
                + SQLITE_FILE_NAME,
                retryable=False,
            )
        return parsed.set(drivername="sqlite+pysqlite")
    raise Unavailable(
        f"database URL {_redact(url)!r} names an unsupported database {backend!r}: {URL_HELP}",
        retryable=False,
    )


def _redact(url: str) -> str:
    try:
        return make_url(url).render_as_string(hide_password=True)
    except ArgumentError:
        return url if "@" not in url else "***" + url[url.rindex("@") :]


def _enable_wal(cursor: Any, patience_s: float) -> None:
    """Switch the file to WAL (a no-op once done: the mode is stored in the file).

    The first switch needs the file to itself and, unlike other statements,
    fails at once with "database is locked" instead of waiting for the busy
    timeout when another connection is using a fresh file; so wait here.
    """
    deadline = time.monotonic() + patience_s
    pause = 0.005
    while True:
        try:
            cursor.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() >= deadline:
                raise
        time.sleep(pause)
        pause = min(pause * 2, 0.2)


def _configure_sqlite(engine: Engine, options: EngineOptions) -> None:
    busy_ms = int(options.busy_timeout_s * 1000)

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        # No legacy mode: Database.transaction sends BEGIN (IMMEDIATE) itself.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        try:
            cursor.execute(f"PRAGMA busy_timeout = {busy_ms}")
            cursor.execute("PRAGMA foreign_keys = ON")
            _enable_wal(cursor, options.busy_timeout_s)
            cursor.execute("PRAGMA synchronous = NORMAL")
            if options.sqlite_checkpoint_every:
                cursor.execute(f"PRAGMA wal_autocheckpoint = {SAFETY_NET_PAGES}")
        finally:
            cursor.close()


def _begin_sqlite(connection: Connection, statement: str) -> None:
    """Send ``BEGIN`` straight to the driver: every transaction pays for this call.

    Going through ``exec_driver_sql`` would cost a full SQLAlchemy execution
    (a third of an empty transaction); a driver error is wrapped as
    SQLAlchemy would wrap it, so :func:`translate_errors` still names it.
    SQLAlchemy's commit and rollback end the transaction (sqlite3's
    ``commit()`` commits whatever transaction is open).
    """
    driver = connection.connection.driver_connection
    assert driver is not None
    try:
        driver.execute(statement)
    except sqlite3.Error as exc:
        raise DBAPIError.instance(statement, None, exc, sqlite3.Error) from exc


_IDLE_SINCE = "vpod_idle_since"


def _ping_when_idle(engine: Engine, idle_s: float) -> None:
    """Pre-ping a pooled connection only if it sat unused for ``idle_s`` or longer."""
    dialect = engine.dialect

    @event.listens_for(engine, "checkin")
    def _on_checkin(_dbapi_connection: Any, record: Any) -> None:
        record.info[_IDLE_SINCE] = time.monotonic()

    @event.listens_for(engine, "checkout")
    def _on_checkout(dbapi_connection: Any, record: Any, _proxy: Any) -> None:
        idle_since = record.info.get(_IDLE_SINCE)
        if idle_since is None or time.monotonic() - idle_since < idle_s:
            return  # just connected, or in use a moment ago
        try:
            dialect.do_ping(dbapi_connection)
        except dialect.loaded_dbapi.Error as exc:
            if dialect.is_disconnect(exc, dbapi_connection, None):
                # The pool reconnects this connection, and every older one.
                raise InvalidatePoolError(f"the pooled connection was lost: {exc}") from exc
            raise


def create_store_engine(url: str, options: EngineOptions | None = None) -> Engine:
    """An engine for ``url``, configured for the store; connects lazily."""
    options = options or EngineOptions()
    parsed = normalise_url(url)
    try:
        if parsed.get_backend_name() == "sqlite":
            engine = create_engine(
                parsed,
                connect_args={"timeout": options.busy_timeout_s, "check_same_thread": False},
                # SQLite empties a connection's page cache when another one wrote since it
                # last ran: taking the idlest connection (the pool's default order) read the
                # pages of every transaction again with pread (0.14 ms a partition pair).
                pool_use_lifo=True,
            )
            _configure_sqlite(engine, options)
            return engine
        engine = create_engine(
            parsed,
            pool_pre_ping=options.pre_ping and options.pre_ping_idle_s <= 0,
            pool_size=options.pool_size,
            max_overflow=options.max_overflow,
            connect_args={
                "connect_timeout": options.connect_timeout_s,
                "application_name": "vpod",
            },
        )
        if options.pre_ping and options.pre_ping_idle_s > 0:
            _ping_when_idle(engine, options.pre_ping_idle_s)
        return engine
    except (ArgumentError, NoSuchModuleError, TypeError) as exc:
        raise Unavailable(
            f"database URL {_redact(url)!r} cannot be used ({exc}): {URL_HELP}", retryable=False
        ) from exc


P = ParamSpec("P")
T = TypeVar("T")

Explain = Callable[[], StoreError]
"""Called after a write was refused by a constraint, in a fresh transaction of its own,
to find out why and return the exception to raise."""


class Database:
    """An engine plus the store's two kinds of transaction."""

    def __init__(self, engine: Engine, options: EngineOptions | None = None) -> None:
        """``options`` should be those the engine was created with."""
        options = options or EngineOptions()
        self.engine = engine
        self.dialect = engine.dialect.name
        self.description = engine.url.render_as_string(hide_password=True)
        self.checkpointer = (
            WalCheckpointer(engine, options.sqlite_checkpoint_every)
            if self.dialect == "sqlite" and options.sqlite_checkpoint_every
            else None
        )

    @contextmanager
    def transaction(self, conn: Connection, *, write: bool) -> Iterator[Connection]:
        """Begin a transaction on ``conn``; commit if the block ends without error.

        On SQLite a ``write`` transaction starts with ``BEGIN IMMEDIATE`` (the
        write lock at once), a read with ``BEGIN``; see the module docstring.
        """
        with conn.begin():
            if self.dialect == "sqlite":
                _begin_sqlite(conn, "BEGIN IMMEDIATE" if write else "BEGIN")
            yield conn

    @contextmanager
    def read(self, *, snapshot: bool = False) -> Iterator[Connection]:
        """A read-only transaction; ``snapshot`` makes several queries see one state."""
        with translate_errors(self.description), self.engine.connect() as conn:
            if snapshot and self.dialect == "postgresql":
                conn.execution_options(isolation_level="REPEATABLE READ")
            with self.transaction(conn, write=False):
                yield conn

    @contextmanager
    def write(self, explain: Explain | None = None) -> Iterator[Connection]:
        """A read-write transaction, committed when the block ends without error.

        A constraint violation rolls the whole transaction back (nothing is left
        behind) and raises what ``explain`` returns, or a generic retryable
        :class:`~vpod.store.errors.Conflict` without ``explain``.
        """
        try:
            with (
                translate_errors(self.description),
                self.engine.connect() as conn,
                self.transaction(conn, write=True),
            ):
                yield conn
        except ConstraintViolated as exc:
            if explain is None:
                raise
            raise explain() from exc.__cause__
        if self.checkpointer is not None:
            self.checkpointer.note_commit()

    def run_read(
        self, read: Callable[Concatenate[Connection, P], T], *args: P.args, **kwargs: P.kwargs
    ) -> T:
        """``read(conn, *args, **kwargs)`` in a read transaction of its own: a one-query read."""
        return _run_in(self.read(), read, *args, **kwargs)

    def run_snapshot(
        self, read: Callable[Concatenate[Connection, P], T], *args: P.args, **kwargs: P.kwargs
    ) -> T:
        """``read(conn, ...)`` in a read transaction whose queries all see one state."""
        return _run_in(self.read(snapshot=True), read, *args, **kwargs)

    def run_write(
        self, write: Callable[Concatenate[Connection, P], T], *args: P.args, **kwargs: P.kwargs
    ) -> T:
        """``write(conn, ...)`` in a write transaction of its own, committed when it returns."""
        return _run_in(self.write(), write, *args, **kwargs)

    def run_explained(
        self,
        write: Callable[Concatenate[Connection, P], T],
        explain: Callable[Concatenate[Connection, P], StoreError],
        *args: P.args,
        **kwargs: P.kwargs,
    ) -> T:
        """``write(conn, ...)`` in a write transaction of its own; when a constraint refuses
        it, ``explain(conn, ...)``, run on the same arguments in a fresh read, says why."""

        def why() -> StoreError:
            return self.run_read(explain, *args, **kwargs)

        return _run_in(self.write(why), write, *args, **kwargs)

    def dispose(self) -> None:
        if self.checkpointer is not None:
            self.checkpointer.close()
        self.engine.dispose()


def _run_in(
    transaction: AbstractContextManager[Connection],
    work: Callable[Concatenate[Connection, P], T],
    *args: P.args,
    **kwargs: P.kwargs,
) -> T:
    """``work(conn, *args, **kwargs)`` inside ``transaction`` (one of :class:`Database`'s), which
    commits or rolls back as the work returns or raises: what every ``run_*`` does."""
    with transaction as conn:
        return work(conn, *args, **kwargs)


@contextmanager
def sqlite_schema_change(db: Database, conn: Connection, what: str) -> Iterator[Connection]:
    """A write transaction on ``conn`` (SQLite) for changing the schema, as SQLite's
    documentation prescribes: foreign keys off (a table rebuilt by a migration, or seed rows
    inserted before their parents, would otherwise cascade or be refused), and
    ``PRAGMA foreign_key_check`` before the commit, so that ``what`` (a migration, a new
    store's schema) cannot leave a dangling reference behind: it is rolled back instead."""
    # The pragma is a no-op inside a transaction, so it goes straight to the driver
    # (in autocommit mode, see above) before the transaction begins.
    driver = conn.connection.driver_connection
    assert driver is not None
    driver.execute("PRAGMA foreign_keys = OFF")
    try:
        with db.transaction(conn, write=True):
            yield conn
            dangling = conn.exec_driver_sql("PRAGMA foreign_key_check").fetchall()
            if dangling:
                raise StoreError(
                    f"{what} would leave rows pointing at missing rows ({dangling[:5]}): it was"
                    " rolled back; report this as a bug"
                )
    finally:
        driver.execute("PRAGMA foreign_keys = ON")
