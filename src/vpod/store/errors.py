"""The store's exception tree: the only exceptions that leave ``vpod.store``.

::

    StoreError                  something the store could not do
    ├── NotFound                the record does not exist           (-> NOT_FOUND, 404)
    ├── AlreadyExists           a record with that id exists        (-> ALREADY_EXISTS, 409)
    ├── Conflict                the database refused a change that  (-> retry, then ABORTED /
    │   │                       breaks an invariant or lost a race      FAILED_PRECONDITION, 409)
    │   └── LimitReached        a record would pass a limit on how  (-> RESOURCE_EXHAUSTED, 409)
    │                           many of its kind may exist
    └── Unavailable             the database cannot be reached, is  (-> retry, then UNAVAILABLE,
                                busy or the URL is wrong               503)

``Conflict`` and ``Unavailable`` are *temporary* (``retryable`` is true): a
conflict means another writer changed what this one read (an IPU slot taken
by a concurrent reservation, a partition whose version moved), so the caller
re-reads a fresh snapshot and tries again; ``Unavailable`` means the database
is down or locked, so the caller backs off and retries. An error that a retry
cannot fix carries ``retryable = False`` on the instance: a conflict such as
removing a cluster that still has allocations (the message says what to
remove first), or an ``Unavailable`` caused by a malformed database URL.

SQLAlchemy, psycopg and sqlite3 exceptions never cross this boundary: the
store translates them here, keeping the original as ``__cause__`` for logs.
Messages are sentences a person can act on.
"""

from __future__ import annotations

from collections.abc import Sequence


class StoreError(Exception):
    """Something the store could not do."""

    retryable: bool = False
    """Whether trying again (after re-reading, or after a pause) may succeed."""

    def __init__(self, message: str, *, retryable: bool | None = None) -> None:
        super().__init__(message)
        if retryable is not None:
            self.retryable = retryable


class NotFound(StoreError):
    """The record asked for does not exist."""


class AlreadyExists(StoreError):
    """A record with the same id exists already."""


class Conflict(StoreError):
    """The database refused a change: it would break an invariant, or a concurrent writer won."""

    retryable = True


class LimitReached(Conflict):
    """A record would pass a limit on how many of its kind may exist (checked in the
    transaction that adds it)."""

    retryable = False


class Unavailable(StoreError):
    """The database cannot be reached or used right now (temporary: retry later)."""

    retryable = True


def still_holding(what: str, record_id: str, held: str, held_ids: Sequence[str]) -> Conflict:
    """A removal refused: ``what`` ``record_id`` still holds ``held`` records (``held_ids``,
    the first ten named); permanent until the caller removes them."""
    shown = ", ".join(held_ids[:10]) + (" ..." if len(held_ids) > 10 else "")
    return Conflict(
        f"{what} {record_id} still has {len(held_ids)} {held}"
        f"{'s' if len(held_ids) > 1 else ''} ({shown}): remove them first",
        retryable=False,
    )


def insert_raced(what: str, record_id: str) -> Conflict:
    """An insert that found nothing in its way when asked why it failed: a concurrent change
    got there first, so retrying may succeed."""
    return Conflict(f"{what} {record_id} could not be added because of a concurrent change: retry")


def removal_raced(what: str, record_id: str) -> Conflict:
    """A removal that found nothing in its way when asked why it failed: a concurrent change
    got there first, so retrying may succeed."""
    return Conflict(
        f"{what} {record_id} could not be removed because of a concurrent change: retry"
    )
