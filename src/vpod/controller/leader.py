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
from typing import TYPE_CHECKING

from vpod.agent.errors import AgentError
from vpod.domain.entities import Cluster
from vpod.store.errors import StoreError

from . import errors
from .heartbeats import HeartbeatMonitor

if TYPE_CHECKING:
    from .app import Controller

log = logging.getLogger("vpod.leader")

LEASE = "leader"


class LeaderLoop:
    """Keeps trying to hold the lease; while it does, runs the background rounds."""

    def __init__(self, controller: Controller) -> None:
        self._c = controller
        self.monitor = HeartbeatMonitor(controller)
        self.is_leader = False
        self._became_leader = asyncio.Event()

    async def wait_leader(self) -> None:
        """Return once this controller leads (tests and tools use it)."""
        await self._became_leader.wait()

    async def run(self) -> None:
        settings = self._c.settings
        holder = settings.replica_id
        db = self._c.ctx.db
        clock = self._c.ctx.clock
        next_recovery = 0.0
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
                    self._c.ctx.occupancy.forget()
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
            if self.is_leader:
                with contextlib.suppress(Exception):
                    await db(db.store.release_lease, LEASE, holder)

    async def _round(self, started: float, next_recovery: float) -> None:
        try:
            await self.monitor.tick()
            faulty = {c.id: self._c.fleet.faulty_slots(c) for c in await self._clusters()}
            await self._c.repair.repair_round(faulty)
            if started >= next_recovery:
                await self._c.repair.finish_abandoned()
                await self._reconcile_all()
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("background round failed; the next one retries")

    async def _clusters(self) -> list[Cluster]:
        return await self._c.inventory.list_clusters()

    async def _reconcile_all(self) -> None:
        """Make every reachable agent hold what the store says."""
        for agent in await self._c.inventory.list_agents():
            health = await self._c.fleet.health_of(agent.id)
            if not health.reachable:
                continue
            try:
                await self._c.fleet.reconcile(agent)
            except AgentError as exc:
                log.info("reconciling %s failed, next round retries: %s", agent.id, exc.message)
