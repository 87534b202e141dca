"""Translation of SQLAlchemy and driver exceptions into the store's exception tree.

The drivers report the same situations differently: psycopg gives SQLSTATE
codes, sqlite3 gives only a message. Both are folded here into the few cases
a caller can act on (see :mod:`vpod.store.errors`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import ParamSpec, TypeVar

from sqlalchemy.exc import DBAPIError, IntegrityError, SQLAlchemyError
from sqlalchemy.exc import TimeoutError as PoolTimeout

from vpod.domain.errors import DomainError

from .errors import Conflict, StoreError, Unavailable

P = ParamSpec("P")
T = TypeVar("T")

# PostgreSQL SQLSTATE codes (https://www.postgresql.org/docs/current/errcodes-appendix.html).
_SERIALIZATION_FAILURE = "40001"
_DEADLOCK_DETECTED = "40P01"
_UNDEFINED_TABLE = "42P01"
_INVALID_CATALOG_NAME = "3D000"
_AUTHENTICATION_CODES = ("28000", "28P01")
_RETRY_RACE = "retry with fresh data"


class ConstraintViolated(Conflict):
    """A unique, foreign-key or check constraint refused a write (see ``Database.write``)."""


def _driver_message(exc: DBAPIError) -> str:
    text = str(exc.orig).strip() or type(exc.orig).__name__
    return text.splitlines()[0]


def _translate_dbapi(exc: DBAPIError, database: str) -> StoreError:
    sqlstate = getattr(exc.orig, "sqlstate", None)
    message = _driver_message(exc)
    lowered = message.lower()
    if sqlstate in (_SERIALIZATION_FAILURE, _DEADLOCK_DETECTED):
        return Conflict(
            f"the database aborted the transaction because a concurrent one touched the same"
            f" rows ({message}): {_RETRY_RACE}"
        )
    if sqlstate == _UNDEFINED_TABLE or "no such table" in lowered:
        return Unavailable(
            f"database {database} has no vpod schema yet ({message}): run the migrations"
            " first (Store.migrate(); vipu-server runs them when it starts)",
            retryable=False,
        )
    # psycopg reports failures while connecting without a SQLSTATE: read the server's words.
    if sqlstate == _INVALID_CATALOG_NAME or (
        'database "' in lowered and "does not exist" in lowered
    ):
        return Unavailable(
            f"database {database} does not exist on the server ({message}): create it"
            " (createdb NAME) or fix the database name in the URL",
            retryable=False,
        )
    if sqlstate in _AUTHENTICATION_CODES or any(
        words in lowered
        for words in ("password authentication failed", "no password supplied", 'role "')
    ):
        return Unavailable(
            f"the server refused the credentials for {database} ({message}):"
            " check the user and password in the URL",
            retryable=False,
        )
    if "database is locked" in lowered or "database is busy" in lowered:
        return Unavailable(
            f"the SQLite database {database} stayed locked by another writer for longer than"
            " the busy timeout: retry, and look for a stuck process holding it"
        )
    if "unable to open database file" in lowered:
        return Unavailable(
            f"cannot open the SQLite database {database}: check that its directory exists"
            " and is writable by this user",
            retryable=False,
        )
    if exc.connection_invalidated or exc.__class__.__name__ in (
        "OperationalError",
        "InterfaceError",
    ):
        return Unavailable(
            f"cannot use the database {database} ({message}): check that the server is"
            " running and reachable and that the URL is right; retrying later may succeed"
        )
    return StoreError(f"the database {database} rejected a statement: {message}")


@contextmanager
def translate_errors(database: str) -> Iterator[None]:
    """Re-raise any SQLAlchemy or driver exception as a :class:`StoreError`.

    ``database`` names the database in messages (its URL without password).
    """
    try:
        yield
    except IntegrityError as exc:
        raise ConstraintViolated(
            f"the database refused a change that conflicts with one made at the same time"
            f" ({_driver_message(exc)}): {_RETRY_RACE}"
        ) from exc
    except DBAPIError as exc:
        raise _translate_dbapi(exc, database) from exc
    except PoolTimeout as exc:
        raise Unavailable(
            f"every connection to the database {database} is busy ({exc}): retry later,"
            " or give the store a larger pool"
        ) from exc
    except SQLAlchemyError as exc:
        raise StoreError(f"the store misused the database {database}: {exc}") from exc


def decoding(kind: str) -> Callable[[Callable[P, T]], Callable[P, T]]:
    """Mark a function that turns rows into a ``kind`` value.

    A row this version cannot turn into a valid value (an enumeration member
    it does not know, a rule that became stricter) was most likely written
    by a newer vpod: say so with a :class:`StoreError` instead of letting a
    ``KeyError`` or a domain error escape.
    """

    def wrap(convert: Callable[P, T]) -> Callable[P, T]:
        @functools.wraps(convert)
        def checked(*args: P.args, **kwargs: P.kwargs) -> T:
            try:
                return convert(*args, **kwargs)
            except (KeyError, DomainError) as exc:
                raise StoreError(
                    f"a stored {kind} cannot be read by this version of vpod ({exc!s}): it was"
                    " probably written by a newer version; run that version"
                ) from exc

        return checked

    return wrap
