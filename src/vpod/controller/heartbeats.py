"""Heartbeats: notice agents that stop answering, and ones that come back.

Every ``heartbeat_interval_s`` the monitor asks each agent for its health
with a short deadline. An agent silent for ``unreachable_after_s`` is marked
unreachable: its machine leaves placement and the partitions on it go to
ERROR with the reason in their status. When it answers again it is marked
reachable and reconciled (it may have restarted and lost its state).
Writes happen only on a change, so a healthy fleet costs no database writes.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from vpod.agent.errors import AgentError
from vpod.domain.entities import Agent
from vpod.domain.partition_states import Event, allowed, transition
from vpod.store.errors import Conflict
from vpod.store.records import AgentHealthState

from .caller import SYSTEM

if TYPE_CHECKING:
    from .app import Controller

log = logging.getLogger("vpod.heartbeats")


class HeartbeatMonitor:
    def __init__(self, controller: Controller) -> None:
        self._c = controller
        self._last_ok: dict[str, float] = {}
        self._state: dict[str, AgentHealthState] = {}

    async def run(self) -> None:
        interval = self._c.settings.heartbeat_interval_s
        while True:
            try:
                await self.tick()
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("heartbeat round failed; trying again")
            await asyncio.sleep(interval)

    async def tick(self) -> None:
        agents = await self._c.inventory.list_agents()
        await asyncio.gather(*(self._check(a) for a in agents))

    async def _check(self, agent: Agent) -> None:
        ctx = self._c.ctx
        now = ctx.clock.monotonic()
        self._last_ok.setdefault(agent.id, now)
        timeout = max(0.2, min(1.0, ctx.settings.unreachable_after_s / 3))
        try:
            health = await ctx.gateway.health(agent, timeout=timeout)
        except AgentError as exc:
            silent_for = now - self._last_ok[agent.id]
            if (
                silent_for >= ctx.settings.unreachable_after_s
                and self._state.get(agent.id) is not AgentHealthState.UNREACHABLE
            ):
                await self._mark_unreachable(agent, exc.message, silent_for)
            return
        self._last_ok[agent.id] = now
        self._c.fleet.note_health(agent.id, health)
        if self._state.get(agent.id) is not AgentHealthState.REACHABLE:
            await self._mark_reachable(agent)

    async def _mark_unreachable(self, agent: Agent, cause: str, silent_for: float) -> None:
        ctx = self._c.ctx
        reason = f"agent {agent.id} has not answered for {silent_for:.1f} s: {cause}"
        self._state[agent.id] = AgentHealthState.UNREACHABLE
        await ctx.db(
            ctx.db.store.set_agent_health,
            agent.id,
            AgentHealthState.UNREACHABLE,
            at=None,
            reason=reason,
        )
        ctx.occupancy.forget()
        log.warning("%s", reason)
        await ctx.audit(SYSTEM, "agent_unreachable", agent.id, "detected", reason)
        await self._fault_partitions_on(agent, reason)

    async def _mark_reachable(self, agent: Agent) -> None:
        ctx = self._c.ctx
        was = self._state.get(agent.id)
        self._state[agent.id] = AgentHealthState.REACHABLE
        await ctx.db(
            ctx.db.store.set_agent_health,
            agent.id,
            AgentHealthState.REACHABLE,
            at=ctx.clock.now(),
            reason="",
        )
        if was is AgentHealthState.UNREACHABLE:
            ctx.occupancy.forget()
            await ctx.audit(SYSTEM, "agent_reachable", agent.id, "detected")
            try:
                await self._c.fleet.reconcile(agent)
            except AgentError as exc:
                log.warning("reconciling %s failed: %s", agent.id, exc)

    async def _fault_partitions_on(self, agent: Agent, reason: str) -> None:
        ctx = self._c.ctx
        for cluster in await self._c.inventory.list_clusters():
            if agent.id not in cluster.agent_ids:
                continue
            machine = cluster.machine_of(agent.id)
            records = await ctx.db(ctx.db.store.list_partitions, cluster_id=cluster.id)
            for record in records:
                if machine not in {ipu.machine for ipu in record.ipus}:
                    continue
                if not allowed(record.state, Event.FAULT_DETECTED):
                    continue
                state = transition(record.state, Event.FAULT_DETECTED, partition_id=record.id)
                try:
                    await ctx.db(
                        ctx.db.store.update_partition,
                        record.id,
                        expected_version=record.version,
                        updated_at=ctx.clock.now(),
                        state=state,
                        errors=(*record.errors, reason),
                    )
                except Conflict:
                    continue  # changed meanwhile; the next round sees it again
