"""Owner leases of in-flight partition operations: only a dead owner's work is recovered.

A create, remove or reset runs on the controller that took the request, and
can take long (a slow agent, an overloaded host). Recovery used to finish
any operation older than ``operation_deadline_s``; on an overloaded host that
raced a live controller's slow create and left an agent holding IPUs the
store had forgotten. Now each partition in CREATING, REMOVING or RESETTING
names its owner (``operation_owner``: the controller's replica id and a
token of this boot), and every controller keeps a lease of its own in the
store (the ``leases`` table, renewed every ``heartbeat_interval_s`` for
``owner_lease_ttl_s``) while it lives. Recovery finishes an operation only
when its owner's lease has expired (released at a clean stop; a restarted
controller is a new owner, its boot token differs, so what the old process
left is recovered once the old lease runs out). An operation with no owner (a
row older than the column) or whose owner never took its lease yet falls
back to the age rule.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import uuid
from collections.abc import Iterable

from vpod.store.errors import StoreError

from . import errors
from .context import Context

log = logging.getLogger("vpod.owners")

LEASE_PREFIX = "op:"


def owner_token(replica_id: str) -> str:
    """This controller's name as an operation owner: its replica id and a token of this boot."""
    return f"{replica_id}/{uuid.uuid4().hex[:12]}"


def lease_name(owner: str) -> str:
    """The lease row of an owner (the name column is short; owner tokens may not be)."""
    return LEASE_PREFIX + hashlib.sha256(owner.encode()).hexdigest()[:40]


class OwnerLease:
    """Keeps this controller's owner lease alive, and tells live owners from dead ones."""

    def __init__(self, ctx: Context) -> None:
        self._ctx = ctx

    @property
    def owner(self) -> str:
        return self._ctx.owner

    async def renew(self) -> bool:
        ctx = self._ctx
        return bool(
            await ctx.db(
                ctx.db.store.try_acquire_lease,
                lease_name(ctx.owner),
                ctx.owner,
                ctx.clock.now(),
                ctx.settings.owner_lease_ttl_s,
            )
        )

    async def run(self) -> None:
        """Renew the lease every heartbeat interval while the controller lives."""
        interval = self._ctx.settings.heartbeat_interval_s
        try:
            while True:
                try:
                    if not await self.renew():
                        log.warning("cannot renew the owner lease of %s", self.owner)
                except (StoreError, errors.ServiceError) as exc:
                    log.warning("cannot reach the store to renew the owner lease: %s", exc)
                await asyncio.sleep(interval)
        finally:
            with contextlib.suppress(Exception):
                await self._ctx.db(
                    self._ctx.db.store.release_lease, lease_name(self.owner), self.owner
                )

    async def alive(self, owners: Iterable[str]) -> dict[str, bool]:
        """Whether each owner's lease is still running; an owner with no lease row at all is
        left out: whether it lives is not known."""
        ctx = self._ctx
        now = ctx.clock.now()
        found: dict[str, bool] = {}
        for owner in set(owners):
            lease = await ctx.db(ctx.db.store.get_lease, lease_name(owner))
            if lease is not None:
                found[owner] = lease.holder == owner and lease.expires_at > now
        return found


__all__ = ["LEASE_PREFIX", "OwnerLease", "lease_name", "owner_token"]
