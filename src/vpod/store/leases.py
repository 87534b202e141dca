"""Leader leases in a plain table, with portable conditional UPDATE and INSERT.

A lease is a row (name, holder, expires_at, term). Acquiring is one
conditional UPDATE that succeeds when the lease is free (expired) or already
ours, then, if no row exists yet, an INSERT that the primary key lets only
one contender win. No dialect-specific locking: on PostgreSQL a second
contender's UPDATE waits for the first to commit and then re-checks its
WHERE clause against the new row; on SQLite writers are serialised by
``BEGIN IMMEDIATE``. Times come from the callers' clocks, so contenders must
keep their clocks in step to well under the lease's time to live.

``term`` is a fencing token: it grows by one each time the lease changes
hands, so work stamped with an old term can be recognised and refused.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from sqlalchemy import Connection, case, insert, or_, select, update

from .engine import Database
from .records import Lease
from .row_records import record_of
from .schema import leases
from .translate import ConstraintViolated

RELEASED = datetime(1970, 1, 1, tzinfo=UTC)
"""The expiry a released lease gets: in the past for every clock."""


def as_ttl(ttl: timedelta | float) -> timedelta:
    """A lease's time to live (seconds or a timedelta), which must be positive."""
    delta = ttl if isinstance(ttl, timedelta) else timedelta(seconds=ttl)
    if delta <= timedelta(0):
        raise ValueError(f"a lease needs a positive time to live, not {delta}")
    return delta


def try_acquire(
    database: Database, name: str, holder: str, now: datetime, ttl: timedelta | float
) -> bool:
    """Take lease ``name`` for ``holder`` until ``now + ttl`` if it is free or already theirs,
    in one transaction; True if ``holder`` holds it afterwards."""
    expires_at = now + as_ttl(ttl)
    try:
        with database.write() as conn:
            if try_update(conn, name, holder, expires_at, now):
                return True
            if exists(conn, name):
                return False
            insert_new(conn, name, holder, expires_at)
            return True
    except ConstraintViolated:
        return False  # another contender created it first


def give_up(database: Database, name: str, holder: str) -> bool:
    """Release the lease in its own transaction; False if ``holder`` did not hold it."""
    with database.write() as conn:
        return release(conn, name, holder)


def try_update(
    conn: Connection, name: str, holder: str, expires_at: datetime, now: datetime
) -> bool:
    """Take or extend the lease if it has expired or is already ``holder``'s."""
    done = conn.execute(
        update(leases)
        .where(leases.c.name == name, or_(leases.c.holder == holder, leases.c.expires_at <= now))
        .values(
            holder=holder,
            expires_at=expires_at,
            term=case((leases.c.holder == holder, leases.c.term), else_=leases.c.term + 1),
        )
    )
    return bool(done.rowcount == 1)


def insert_new(conn: Connection, name: str, holder: str, expires_at: datetime) -> None:
    """Create the lease for ``holder`` (primary-key violation if it exists)."""
    conn.execute(insert(leases).values(name=name, holder=holder, expires_at=expires_at, term=1))


def exists(conn: Connection, name: str) -> bool:
    return conn.scalar(select(leases.c.name).where(leases.c.name == name)) is not None


def renew(conn: Connection, name: str, holder: str, expires_at: datetime, now: datetime) -> bool:
    """Extend a lease ``holder`` still holds; an expired lease must be acquired again."""
    done = conn.execute(
        update(leases)
        .where(leases.c.name == name, leases.c.holder == holder, leases.c.expires_at > now)
        .values(expires_at=expires_at)
    )
    return bool(done.rowcount == 1)


def release(conn: Connection, name: str, holder: str) -> bool:
    """Give the lease up so another contender need not wait for it to expire.

    The row stays, expired, so the next holder's term continues the count.
    """
    done = conn.execute(
        update(leases)
        .where(leases.c.name == name, leases.c.holder == holder)
        .values(expires_at=RELEASED)
    )
    return bool(done.rowcount == 1)


def get(conn: Connection, name: str) -> Lease | None:
    row = conn.execute(select(leases).where(leases.c.name == name)).first()
    if row is None:
        return None
    return record_of(Lease, row)
