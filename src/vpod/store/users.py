"""Users, their access-key hashes and the allocations granted to them.

Only a hash of the access key is stored (hashing is the caller's job; the
store never sees a key). Grants are rows of ``user_allocations``; removing an
allocation revokes its grants (``ON DELETE CASCADE``). A user's
``allocation_ids`` come back sorted.

Every change to what a user may do bumps ``users.access_version``
(:mod:`.access_versions`).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from sqlalchemy import Connection, delete, insert, select, update

from vpod.domain.entities import User

from . import access_versions
from . import allocations as allocation_rows
from .errors import Conflict, NotFound, StoreError, insert_raced
from .refusals import id_taken
from .row_records import children_of, grouped
from .schema import allocations, user_allocations, users
from .translate import decoding


@decoding("user")
def _user(user_id: str, allocation_ids: Sequence[str], admin: object) -> User:
    return User(id=user_id, allocation_ids=tuple(allocation_ids), admin=bool(admin))


def insert_user(
    conn: Connection, user: User, key_hash: str, created_at: datetime | None = None
) -> None:
    conn.execute(
        insert(users).values(id=user.id, key_hash=key_hash, admin=user.admin, created_at=created_at)
    )
    if user.allocation_ids:
        conn.execute(
            insert(user_allocations),
            [{"user_id": user.id, "allocation_id": a} for a in user.allocation_ids],
        )


def explain_insert_refused(conn: Connection, user: User) -> StoreError:
    taken_id = id_taken(conn, users.c.id, "user", user.id)
    if taken_id is not None:
        return taken_id
    known = set(
        conn.scalars(select(allocations.c.id).where(allocations.c.id.in_(user.allocation_ids)))
    )
    for allocation_id in user.allocation_ids:
        if allocation_id not in known:
            return allocation_rows.not_found(allocation_id)
    return insert_raced("user", user.id)


def get_user(conn: Connection, user_id: str) -> User:
    admin = conn.scalar(select(users.c.admin).where(users.c.id == user_id))
    if admin is None:
        raise not_found(user_id)
    grants = user_allocations.c
    granted = children_of(conn, grants.user_id, grants.allocation_id, user_id)
    return _user(user_id, granted, admin)


def list_users(conn: Connection) -> list[User]:
    granted = grouped(conn, user_allocations.c.user_id, user_allocations.c.allocation_id)
    return [
        _user(row.id, granted[row.id], row.admin)
        for row in conn.execute(select(users.c.id, users.c.admin).order_by(users.c.id))
    ]


def creation_times(conn: Connection) -> dict[str, datetime | None]:
    """When each user was created; ``None`` for users created before the store kept it."""
    return {
        row.id: row.created_at
        for row in conn.execute(select(users.c.id, users.c.created_at).order_by(users.c.id))
    }


def get_key_hash(conn: Connection, user_id: str) -> str:
    key_hash = conn.scalar(select(users.c.key_hash).where(users.c.id == user_id))
    if key_hash is None:
        raise not_found(user_id)
    return str(key_hash)


def get_access(conn: Connection, user_id: str) -> tuple[str, int]:
    """The user's key hash and access version: one primary-key read."""
    row = conn.execute(
        select(users.c.key_hash, users.c.access_version).where(users.c.id == user_id)
    ).first()
    if row is None:
        raise not_found(user_id)
    return str(row.key_hash), int(row.access_version)


def set_key_hash(conn: Connection, user_id: str, key_hash: str) -> None:
    _change_access(conn, user_id, key_hash=key_hash)


def set_admin(conn: Connection, user_id: str, admin: bool) -> None:
    _change_access(conn, user_id, admin=admin)


def _change_access(conn: Connection, user_id: str, **changes: object) -> None:
    """Change what the user may do, bumping the access version so caches see it."""
    done = conn.execute(
        update(users)
        .where(users.c.id == user_id)
        .values(**changes, access_version=access_versions.BUMPED)
    )
    if done.rowcount == 0:
        raise not_found(user_id)


def delete_user(conn: Connection, user_id: str) -> None:
    if conn.execute(delete(users).where(users.c.id == user_id)).rowcount == 0:
        raise not_found(user_id)


def grant(conn: Connection, user_id: str, allocation_id: str) -> None:
    """Grant ``allocation_id`` to ``user_id``; granting twice is harmless."""
    get_user(conn, user_id)  # NotFound first, with the user's name in it
    if conn.scalar(select(allocations.c.id).where(allocations.c.id == allocation_id)) is None:
        raise allocation_rows.not_found(allocation_id)
    already = conn.scalar(
        select(user_allocations.c.user_id).where(
            user_allocations.c.user_id == user_id,
            user_allocations.c.allocation_id == allocation_id,
        )
    )
    if already is None:
        conn.execute(insert(user_allocations).values(user_id=user_id, allocation_id=allocation_id))
        access_versions.bump(conn, [user_id])


def revoke(conn: Connection, user_id: str, allocation_id: str) -> None:
    """Take ``allocation_id`` away from ``user_id``; revoking what was not granted is harmless."""
    get_user(conn, user_id)
    done = conn.execute(
        delete(user_allocations).where(
            user_allocations.c.user_id == user_id,
            user_allocations.c.allocation_id == allocation_id,
        )
    )
    if done.rowcount:
        access_versions.bump(conn, [user_id])


def explain_grant_refused(conn: Connection, user_id: str, allocation_id: str) -> StoreError:
    if conn.scalar(select(users.c.id).where(users.c.id == user_id)) is None:
        return not_found(user_id)
    if conn.scalar(select(allocations.c.id).where(allocations.c.id == allocation_id)) is None:
        return allocation_rows.not_found(allocation_id)
    return Conflict(
        f"allocation {allocation_id} could not be granted to user {user_id} because of a"
        " concurrent change: retry"
    )


def not_found(user_id: str) -> NotFound:
    return NotFound(f"user {user_id} does not exist: list users to see the existing ones")
