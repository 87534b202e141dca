"""Background work on one elected controller: heartbeats, recovery, auto-reset.

Several controllers may serve requests on one database; the work that must
happen once (watching agents, finishing abandoned operations, resetting and
relocating faulty partitions) runs only on the holder of the ``leader`` lease,
a plain row in the store taken and renewed with conditional updates (no
home-made consensus). If the leader dies, its lease expires after
``lease_ttl_s`` and another controller takes over at its next attempt.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass, field

from vpod.store.errors import StoreError

from . import errors
from .agent_health import AgentHealthBook
from .context import Context
from .fleet import Fleet
from .heartbeats import HeartbeatMonitor
from .inventory import Inventory
from .operation_owners import OwnerLease
from .partition_repair import PartitionRepair

log = logging.getLogger("vpod.leader")

LEASE = "leader"


@dataclass(eq=False)
class LeaderLoop:
    """Keeps trying to hold the lease; while it does, runs the background rounds."""

    _ctx: Context
    _inventory: Inventory
    _health: AgentHealthBook
    _fleet: Fleet
    _repair: PartitionRepair
    monitor: HeartbeatMonitor
    _owners: OwnerLease
    is_leader: bool = field(default=False, init=False)
    _became_leader: asyncio.Event = field(default_factory=asyncio.Event, init=False)
    _reconciling: asyncio.Task[None] | None = field(default=None, init=False)

    async def wait_leader(self) -> None:
        """Return once this controller leads (tests and tools use it)."""
        await self._became_leader.wait()

    async def run(self) -> None:
        settings = self._ctx.settings
        holder = settings.replica_id
        db = self._ctx.db
        clock = self._ctx.clock
        next_recovery = 0.0
        # Every controller, leader or not, keeps its owner lease: its operations are its own.
        owner_lease = asyncio.create_task(self._owners.run(), name="owner-lease")
        try:
            while True:
                started = clock.monotonic()
                try:
                    held = await db(
                        db.store.try_acquire_lease,
                        LEASE,
                        holder,
                        clock.now(),
                        settings.lease_ttl_s,
                    )
                except (StoreError, errors.ServiceError) as exc:  # database down: nobody leads
                    log.warning("cannot reach the store for the leader lease: %s", exc)
                    held = False
                if held and not self.is_leader:
                    log.info("%s is now the leader", holder)
                    self._ctx.occupancy.forget()
                    self.monitor.forget_stored_faults()
                    next_recovery = 0.0
                elif not held and self.is_leader:
                    log.warning("%s lost the leader lease", holder)
                self.is_leader = held
                if held:
                    self._became_leader.set()
                    await self._round(started, next_recovery)
                    if started >= next_recovery:
                        next_recovery = started + settings.recovery_interval_s
                else:
                    self._became_leader.clear()
                elapsed = clock.monotonic() - started
                await asyncio.sleep(max(0.05, settings.heartbeat_interval_s - elapsed))
        finally:
            owner_lease.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await owner_lease
            if self._reconciling is not None:
                self._reconciling.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await self._reconciling
            if self.is_leader:
                with contextlib.suppress(Exception):
                    await db(db.store.release_lease, LEASE, holder)

    async def _round(self, started: float, next_recovery: float) -> None:
        try:
            await self.monitor.tick()
            clusters = await self._inventory.recent_clusters()
            faulty = {c.id: self._health.faulty_slots(c) for c in clusters}
            await self._repair.repair_round(faulty)
            if started >= next_recovery:
                await self._repair.finish_abandoned()
                self._start_reconcile_all()
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("background round failed; the next one retries")

    def _start_reconcile_all(self) -> None:
        """Reconcile the fleet beside the rounds, not inside one: with 1,024 agents it takes
        seconds, and heartbeats must keep their pace meanwhile. One at a time."""
        if self._reconciling is not None and not self._reconciling.done():
            return
        self._reconciling = asyncio.create_task(self._reconcile_all(), name="reconcile-all")

    async def _reconcile_all(self) -> None:
        """Make every reachable agent hold what the store says."""
        try:
            await self._reconcile_reachable()
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("reconciling the fleet failed; the next recovery round retries")

    async def _reconcile_reachable(self) -> None:
        health = await self._fleet.health_of_all()
        agents = [
            a
            for a in await self._inventory.list_agents()
            if a.id in health and health[a.id].reachable
        ]
        failed = await self._fleet.reconcile_all(agents, self.monitor.fleets(agents))
        for agent_id, exc in sorted(failed.items()):
            log.info("reconciling %s failed, next round retries: %s", agent_id, exc.message)
