"""The hottest statements on SQLite, executed by the driver without SQLAlchemy's execution layer.

A partition create + remove makes five INSERT, UPDATE and DELETE statements.
Through ``Connection.execute`` each pays for SQLAlchemy's execution context,
cache lookup and result object: about as much CPU as SQLite takes to run
the statement (docs/performance.md). :func:`execute` compiles a statement
once per dialect and set of parameter names, converts the values with the
columns' own bind processors (public ``TypeEngine`` API, so UTC times, JSON
and enumerations are stored exactly as through SQLAlchemy) and hands the
SQL to the sqlite3 connection of the same transaction.

Only SQLite takes this path. PostgreSQL statements wait on the network, so
the saving would not show, while SQLAlchemy's own execution is what notices
a lost connection and invalidates the pool; there :func:`execute` is
``Connection.execute``. Driver errors are wrapped as SQLAlchemy wraps them,
so :func:`vpod.store.translate.translate_errors` maps them the same way.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

from sqlalchemy import Connection
from sqlalchemy.engine import Dialect
from sqlalchemy.exc import DBAPIError
from sqlalchemy.sql import ClauseElement
from sqlalchemy.sql.compiler import SQLCompiler


class Outcome(Protocol):
    """What callers read from an executed statement (a ``CursorResult`` offers both)."""

    @property
    def rowcount(self) -> int: ...

    def scalar_one(self) -> Any: ...


class _DriverOutcome:
    def __init__(self, cursor: sqlite3.Cursor) -> None:
        self._cursor = cursor

    @property
    def rowcount(self) -> int:
        return self._cursor.rowcount

    def scalar_one(self) -> Any:
        rows = self._cursor.fetchall()
        if len(rows) != 1:
            raise ValueError(f"expected one row, got {len(rows)}")
        return rows[0][0]


class _Compiled:
    """One statement compiled for SQLite for one set of parameter names."""

    def __init__(self, statement: ClauseElement, dialect: Dialect, names: Sequence[str]) -> None:
        compiled = statement.compile(dialect=dialect, column_keys=list(names))
        assert isinstance(compiled, SQLCompiler)
        assert compiled.positiontup is not None, "sqlite3 takes positional parameters"
        self.sql = compiled.string
        self.order = tuple(compiled.positiontup)
        missing = set(self.order) - set(names)
        if missing:  # e.g. a column default SQLAlchemy would have filled in
            raise ValueError(f"{self.sql!r} needs parameters {sorted(missing)} not given")
        self.steps: tuple[tuple[str, Callable[[Any], Any] | None], ...] = tuple(
            (name, compiled.binds[name].type.dialect_impl(dialect).bind_processor(dialect))
            for name in self.order
        )

    def values(self, params: Mapping[str, Any]) -> list[Any]:
        return [
            params[name] if process is None else process(params[name])
            for name, process in self.steps
        ]


_cache: dict[tuple[ClauseElement, frozenset[str]], _Compiled] = {}
"""Compiled forms by statement (INSERT, UPDATE and DELETE compare and hash by identity) and
parameter names. The statements are module constants, so the cache stays as small as the
set of hot statements."""


def _compiled(statement: ClauseElement, dialect: Dialect, params: Mapping[str, Any]) -> _Compiled:
    key = (statement, frozenset(params))
    found = _cache.get(key)
    if found is None:
        found = _cache[key] = _Compiled(statement, dialect, list(params))
    return found


def _driver(conn: Connection) -> sqlite3.Connection | None:
    if conn.dialect.name != "sqlite":
        return None
    driver = conn.connection.driver_connection
    assert isinstance(driver, sqlite3.Connection)
    return driver


def execute(conn: Connection, statement: ClauseElement, params: Mapping[str, Any]) -> Outcome:
    """Run ``statement`` with ``params`` in ``conn``'s transaction."""
    driver = _driver(conn)
    if driver is None:
        return conn.execute(statement, dict(params))  # type: ignore[call-overload, no-any-return]
    compiled = _compiled(statement, conn.dialect, params)
    values = compiled.values(params)
    try:
        return _DriverOutcome(driver.execute(compiled.sql, values))
    except sqlite3.Error as exc:
        raise DBAPIError.instance(compiled.sql, values, exc, sqlite3.Error) from exc


def execute_many(
    conn: Connection, statement: ClauseElement, rows: Sequence[Mapping[str, Any]]
) -> None:
    """Run ``statement`` once per row of ``rows`` (all with the same names), in one call."""
    if not rows:
        return
    driver = _driver(conn)
    if driver is None:
        conn.execute(statement, [dict(row) for row in rows])  # type: ignore[call-overload]
        return
    compiled = _compiled(statement, conn.dialect, rows[0])
    values = [compiled.values(row) for row in rows]
    try:
        driver.executemany(compiled.sql, values)
    except sqlite3.Error as exc:
        raise DBAPIError.instance(compiled.sql, values, exc, sqlite3.Error) from exc
