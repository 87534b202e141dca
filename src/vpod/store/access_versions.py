"""``users.access_version``: bumped by every change to what a user may do.

A new key, the admin flag, a grant, a revoke, or the removal of an allocation
granted to the user bumps it in the same transaction as the change. Every
controller replica reads it with the key hash at each call (one primary-key
read), so a verification it remembers stops applying the moment any replica
changes the user, not when its cache expires.
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import Connection, Select, delete, select, update

from .schema import user_allocations, users

BUMPED = users.c.access_version + 1
"""The value of ``access_version`` in an update that changes what the user may do."""


def bump(conn: Connection, user_ids: Select[tuple[str]] | Sequence[str]) -> None:
    conn.execute(update(users).where(users.c.id.in_(user_ids)).values(access_version=BUMPED))


def revoke_everywhere(conn: Connection, allocation_id: str) -> None:
    """Revoke every grant of ``allocation_id`` (before it is deleted), bumping its holders.

    The foreign key's ``ON DELETE CASCADE`` would drop the grants too, but silently:
    the holders' versions would not move and replicas would keep the grant a while.
    """
    holders = select(user_allocations.c.user_id).where(
        user_allocations.c.allocation_id == allocation_id
    )
    bump(conn, holders)
    conn.execute(delete(user_allocations).where(user_allocations.c.allocation_id == allocation_id))
