"""Heartbeats: notice agents that stop answering or report faults, and applications detaching.

Every round the leader asks each agent for its health with a short deadline.

- An agent silent for ``unreachable_after_s`` is marked unreachable: its
  machine leaves placement and the partitions on it go to ERROR with the
  reason in their status. When it answers again it is marked reachable and
  reconciled (it may have restarted and lost its state).
- A change in the IPU or link faults an agent reports takes the faulty IPUs
  out of placement and puts the partitions using them in ERROR. The faulty
  IPUs are stored too, so the replicas that do not lead place around them.
- ``DETACHED`` events (an application let go of an IPU) trigger the
  automatic reset of non-reconfigurable partitions (vipu-system.md §4),
  unless a later event of the partition (reset, release, configuration, a
  new attach) superseded the detach, or another application still holds
  one of its IPUs (the instances of one run each hold their own IPUs: the
  last to leave triggers the reset; since the heartbeats are a round old, the
  machines check again in the same step as the reset, ``unless_attached``).
  That rule also reads the agent's whole log at first contact, so a detach
  that happened before this leader's first round (or while no controller
  listened) still gets its reset, and one a previous leader already answered
  with a reset gets no second one.

Writes happen on a change, and for the time of the last heartbeat (what the
agent listings and the pod map show as last seen): each agent's is written
again once the stored one is ``unreachable_after_s`` old, all due agents of
a round in one transaction, so the stored time of an agent that answers is
never older than the silence that would make it unreachable, and a healthy
fleet costs one write every few rounds.
Machines that share an agent process (their answers carry its ``fleet_id``)
are asked in one ``FleetHealth`` call per process and round; a machine the
process leaves out is asked alone, so a dead, hung or slow machine is still
judged by its own silence.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from math import inf

from vpod.agent.errors import AgentError
from vpod.agent.model import AgentEvent, EventKind, MachineHealth
from vpod.domain.entities import Agent, Cluster
from vpod.domain.partition_states import ReadyState
from vpod.store.records import AgentHealthState

from . import errors
from .agent_health import AgentHealthBook
from .caller import SYSTEM
from .context import Context
from .fleet import Fleet
from .inventory import Inventory
from .partition_repair import PartitionRepair

log = logging.getLogger("vpod.heartbeats")

_LIFE_CYCLE = frozenset(
    {
        EventKind.ATTACHED,
        EventKind.DETACHED,
        EventKind.CONFIGURED,
        EventKind.RELEASED,
        EventKind.RESET,
    }
)


def awaiting_reset(events: Iterable[AgentEvent]) -> set[str]:
    """Partitions whose latest life-cycle event is an application detaching (not the agent
    evicting it): nothing reset, released, reconfigured or attached them since."""
    latest: dict[str, AgentEvent] = {}
    for event in events:
        if event.partition_id and event.kind in _LIFE_CYCLE:
            latest[event.partition_id] = event
    return {pid for pid, e in latest.items() if e.kind is EventKind.DETACHED and not e.evicted}


@dataclass(eq=False)
class HeartbeatMonitor:
    """One leader's heartbeat rounds: what it asks the agents and what it last heard."""

    _ctx: Context
    _inventory: Inventory
    _health: AgentHealthBook
    _fleet: Fleet
    _repair: PartitionRepair
    _events_seen: dict[str, tuple[str, int]] = field(default_factory=dict, init=False)
    """Per agent: (boot id, sequence of the last event read)."""
    _detached: dict[str, tuple[str, int]] = field(default_factory=dict, init=False)
    """Partitions an application detached from, waiting for their auto-reset: why, tries."""
    _faults_stored: dict[str, dict[int, str]] = field(default_factory=dict, init=False)
    """Per agent: the faulty IPUs this monitor last wrote to the store."""
    _fleet_of: dict[str, str] = field(default_factory=dict, init=False)
    """Per agent: the process hosting it, from its last answer ("": alone)."""
    _silent: set[str] = field(default_factory=set, init=False)
    """Agents whose last heartbeat failed (not asked to speak for their fleet)."""
    _heartbeat_stored: dict[str, float] = field(default_factory=dict, init=False)
    """Per agent: when (monotonic) its last heartbeat time was last written to the store."""
    _heartbeats_due: dict[str, datetime] = field(default_factory=dict, init=False)
    """Answers of this round whose time is to be written (agent id -> when it answered)."""

    def forget_stored_faults(self) -> None:
        """Write every agent's faults again next round (call on becoming leader: another
        leader may have written since)."""
        self._faults_stored.clear()

    async def tick(self) -> None:
        agents = await self._inventory.recent_agents()
        answers = await self._ask_fleets(agents)
        # Machines asked alone are asked concurrently; those a fleet answered for are checked
        # one after another meanwhile: nothing to wait for there, and a task each (1,024 a
        # second on a pod4096) cost more than the checks themselves.
        alone = asyncio.gather(*(self._check(a) for a in agents if a.id not in answers))
        try:
            for agent in agents:
                answer = answers.get(agent.id)
                if answer is not None:
                    await self._check(agent, answer)
        except BaseException:
            alone.cancel()
            raise
        await alone
        await self._store_heartbeats()
        await self._reset_detached()

    async def _store_heartbeats(self) -> None:
        """Write the times of this round's due answers in one transaction (see the module's
        docstring); a failed write is tried again next round."""
        due, self._heartbeats_due = self._heartbeats_due, {}
        if not due:
            return
        try:
            await self._ctx.db(self._ctx.db.store.set_agent_heartbeats, due)
        except errors.Unavailable as exc:
            log.warning("storing the last heartbeats failed (next round retries): %s", exc)
            return
        now = self._ctx.clock.monotonic()
        for agent_id in due:
            self._heartbeat_stored[agent_id] = now

    async def _ask_fleets(self, agents: list[Agent]) -> dict[str, MachineHealth | AgentError]:
        """One FleetHealth call per agent process hosting several machines (learnt from the
        ``fleet_id`` of their answers) instead of one Health call per machine.

        A machine the process leaves out is asked alone by :meth:`_check`, so its own
        silence decides. When the process does not answer at all, its machines count as
        silent this round without being asked alone: 1,024 single calls to a process
        already too busy to answer one would only bury it (and the controller) deeper. The
        member asked is the first that answered last time."""
        groups = self.fleets(agents)
        if not groups:
            return {}
        timeout = self._timeout()

        async def ask(members: list[Agent]) -> dict[str, MachineHealth | AgentError]:
            via = members[0]
            wanted = [(a.id, self._events_seen.get(a.id, ("", 0))[1]) for a in members]
            try:
                replies = await self._ctx.gateway.fleet_health(via, wanted, timeout=timeout)
            except AgentError as exc:
                self._silent.add(via.id)
                return {a.id: exc for a in members}
            ids = {a.id for a in members}
            return {h.agent_id: h for h in replies if h.agent_id in ids}

        answers: dict[str, MachineHealth | AgentError] = {}
        for found in await asyncio.gather(*(ask(g) for g in groups)):
            answers.update(found)
        return answers

    def fleets(self, agents: Sequence[Agent]) -> list[list[Agent]]:
        """The agents that share an agent process with others, grouped by process (learnt
        from the ``fleet_id`` of their last answers), each group led by a member whose last
        heartbeat was answered: the one to ask for the group."""
        fleets: dict[str, list[Agent]] = {}
        for agent in agents:
            fleet = self._fleet_of.get(agent.id, "")
            if fleet:
                fleets.setdefault(fleet, []).append(agent)
        groups = []
        for members in fleets.values():
            if len(members) > 1:
                answering = [a for a in members if a.id not in self._silent]
                groups.append(answering + [a for a in members if a.id in self._silent])
        return groups

    def _timeout(self) -> float:
        return max(0.2, min(1.0, self._ctx.settings.unreachable_after_s / 3))

    async def _reset_detached(self) -> None:
        """Auto-reset partitions applications detached from; a reset that lost a race is
        tried again next round (up to three rounds), so a detach is never silently lost."""
        for partition_id, (why, tries) in sorted(self._detached.items()):
            record = await self._ctx.db(self._ctx.db.store.find_partition, partition_id)
            if (
                record is None
                or record.spec.reconfigurable
                or record.state.ready is not ReadyState.ACTIVE
                or record.disable_auto_reset
            ):
                del self._detached[partition_id]
                continue
            holders = self._health.holders_of(partition_id)
            if holders:
                # Another application (another instance of a launcher's run) still uses the
                # partition: resetting now would evict it. The last one to leave triggers it.
                log.info("not resetting %s yet: IPUs %s still attached", partition_id, holders)
                del self._detached[partition_id]
                continue
            try:
                done = await self._repair.auto_reset(
                    record, why, fresh=tries == 0, spare_attached=True
                )
            except Exception:
                log.exception("auto-reset of %s after a detach failed", partition_id)
                done = False
            if done or tries >= 2:
                del self._detached[partition_id]
            else:
                self._detached[partition_id] = (why, tries + 1)

    async def _check(self, agent: Agent, answer: MachineHealth | AgentError | None = None) -> None:
        ctx = self._ctx
        book = self._health
        now = ctx.clock.monotonic()
        book.expecting(agent.id, now)
        boot, since = self._events_seen.get(agent.id, ("", 0))
        try:
            if isinstance(answer, AgentError):  # its whole process was silent
                raise answer
            health = answer or await ctx.gateway.health(
                agent, since_event=since, timeout=self._timeout()
            )
        except AgentError as exc:
            if answer is None:  # silent alone: ask it alone until it answers again
                self._silent.add(agent.id)
                self._fleet_of.pop(agent.id, None)
            silent_for = book.missed(agent.id, now)
            if (
                silent_for >= ctx.settings.unreachable_after_s
                and book.believed(agent.id) is not AgentHealthState.UNREACHABLE
            ):
                await self._mark_unreachable(agent, exc.message, silent_for)
            return
        book.answered(agent.id, now)
        self._silent.discard(agent.id)
        self._fleet_of[agent.id] = health.fleet_id
        if book.believed(agent.id) is not AgentHealthState.REACHABLE:
            await self._mark_reachable(agent)  # writes the heartbeat's time too
        elif now - self._heartbeat_stored.get(agent.id, -inf) >= ctx.settings.unreachable_after_s:
            self._heartbeats_due[agent.id] = ctx.clock.now()
        changed = book.note_health(agent.id, health, ctx.clock.now().timestamp())
        await self._store_faults(agent)
        if changed:
            ctx.occupancy.forget()
            await self._fault_partitions(agent)
        await self._handle_events(agent, health, boot)

    async def _store_faults(self, agent: Agent) -> None:
        """Write the agent's faulty IPUs to the store when they differ from what this monitor
        wrote last: on a change, and once per agent after the monitor starts (a previous
        leader may have left faults that cleared since). A failed write is tried next round."""
        faults = self._health.device_faults(agent.id)
        if self._faults_stored.get(agent.id) == faults:
            return
        try:
            await self._ctx.db(self._ctx.db.store.set_agent_faults, agent.id, faults)
        except (errors.Unavailable, errors.NotFound) as exc:
            log.warning(
                "storing the IPU faults of %s failed (next round retries): %s", agent.id, exc
            )
            return
        self._faults_stored[agent.id] = faults

    async def _handle_events(self, agent: Agent, health: MachineHealth, boot: str) -> None:
        batch = health.events
        if batch is None:
            return
        if boot and batch.boot_id != boot:
            # A new boot: its events start again at 1; earlier ones are gone with the machine.
            self._events_seen[agent.id] = (batch.boot_id, 0)
            return
        self._events_seen[agent.id] = (batch.boot_id, batch.last_event)
        for partition_id in awaiting_reset(batch.events):
            self._detached.setdefault(partition_id, (f"an application detached from {agent.id}", 0))

    async def _mark_unreachable(self, agent: Agent, cause: str, silent_for: float) -> None:
        ctx = self._ctx
        reason = f"agent {agent.id} has not answered for {silent_for:.1f} s: {cause}"
        self._health.believe(agent.id, AgentHealthState.UNREACHABLE)
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
        for cluster in await self._clusters_of(agent):
            await self._repair.fault_partitions_on(
                cluster, [cluster.machine_of(agent.id)], [], reason
            )

    async def _mark_reachable(self, agent: Agent) -> None:
        ctx = self._ctx
        was = self._health.believe(agent.id, AgentHealthState.REACHABLE)
        await ctx.db(
            ctx.db.store.set_agent_health,
            agent.id,
            AgentHealthState.REACHABLE,
            at=ctx.clock.now(),
            reason="",
        )
        self._heartbeat_stored[agent.id] = ctx.clock.monotonic()
        if was is AgentHealthState.UNREACHABLE:
            ctx.occupancy.forget()
            await ctx.audit(SYSTEM, "agent_reachable", agent.id, "detected")
            try:
                await self._fleet.reconcile(agent)
            except AgentError as exc:
                log.warning("reconciling %s failed: %s", agent.id, exc)

    async def _fault_partitions(self, agent: Agent) -> None:
        device_faults = self._health.device_faults(agent.id)
        machine_faults = self._health.machine_link_faults(agent.id)
        for cluster in await self._clusters_of(agent):
            machine = cluster.machine_of(agent.id)
            pod = cluster.pod()
            for device, reason in sorted(device_faults.items()):
                slot = pod.slot_of_device(machine, device)
                await self._repair.fault_partitions_on(cluster, [], [slot], reason)
            for reason in machine_faults:
                await self._repair.fault_partitions_on(
                    cluster, [machine], [], reason, multi_segment_only=True
                )

    async def _clusters_of(self, agent: Agent) -> list[Cluster]:
        return [c for c in await self._inventory.recent_clusters() if agent.id in c.agent_ids]
