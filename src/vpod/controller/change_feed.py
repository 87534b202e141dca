"""A push feed of what changes in the pods: partitions, agents' health, inventory, audit log.

Watchers (the web console's map, a script following the fabric) subscribe
once and receive each change as it is seen, instead of polling every object.
One poller per controller serves every subscriber: while anyone listens it
reads, every :data:`POLL_INTERVAL_S`, the partitions, the agents' health and
faults, the inventory's shape and the audit events newer than the last one,
compares them with what it saw before and fans the differences out.

Reading the store (rather than hooking this process's use-cases) means a
change made through another controller replica on the same database, or by
the leader's heartbeats, is seen the same way. Each change carries the
object's whole current state, so applying one twice is harmless and a
watcher may open the feed before reading the initial picture.

A subscriber that falls more than :data:`QUEUE_LIMIT` changes behind gets
one ``resync`` change instead of the backlog: it should read the picture
again.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from vpod.store.records import AgentHealthState, AuditEvent

from .context import Context
from .inventory import Inventory
from .pod_map import LinkHealth, PartitionSummary, ipu_telemetry, partition_summary

log = logging.getLogger("vpod.changes")

POLL_INTERVAL_S = 0.25
QUEUE_LIMIT = 2000
AUDIT_BATCH = 200


@dataclass(frozen=True)
class Change:
    """One change: ``kind`` is ``partition``, ``agent``, ``telemetry``, ``inventory``, ``audit``
    or ``resync``."""

    seq: int
    kind: str
    data: dict[str, Any]


class Subscription:
    """One watcher's queue of changes."""

    def __init__(self) -> None:
        self._queue: asyncio.Queue[Change | None] = asyncio.Queue(QUEUE_LIMIT)
        self._behind = False
        self.ended = False

    def offer(self, change: Change) -> None:
        try:
            self._queue.put_nowait(change)
        except asyncio.QueueFull:
            self._behind = True

    def end(self) -> None:
        self.ended = True
        with contextlib.suppress(asyncio.QueueFull):
            self._queue.put_nowait(None)

    def pending(self) -> Change | None:
        """A change already queued, without waiting (None when there is none)."""
        if self._behind or self._queue.empty():
            return None
        change = self._queue.get_nowait()
        if change is None:
            self.ended = True
        return change

    async def next(self, timeout: float) -> Change | None:
        """The next change, or None after ``timeout`` seconds of quiet (or once ended)."""
        if self.ended:
            return None
        try:
            change = await asyncio.wait_for(self._queue.get(), timeout)
        except TimeoutError:
            return None
        if change is None:
            return None
        if self._behind:
            self._behind = False
            while not self._queue.empty():
                if self._queue.get_nowait() is None:
                    self.ended = True
            return Change(change.seq, "resync", {})
        return change


@dataclass(frozen=True)
class _AgentState:
    state: str
    reason: str
    faults: tuple[tuple[int, str], ...]
    links_down: tuple[str, ...]

    def out(self, agent_id: str) -> dict[str, Any]:
        return {
            "id": agent_id,
            "state": self.state,
            "reachable": self.state != "unreachable",
            "reason": self.reason,
            "faults": {str(device): why for device, why in self.faults},
            "links_down": list(self.links_down),
        }


class ChangeFeed:
    def __init__(
        self,
        ctx: Context,
        inventory: Inventory,
        links: LinkHealth,
        *,
        interval_s: float = POLL_INTERVAL_S,
    ) -> None:
        self._ctx = ctx
        self._inventory = inventory
        self._links = links
        self._interval_s = interval_s
        self._subscribers: set[Subscription] = set()
        self._poller: asyncio.Task[None] | None = None
        self._seq = 0
        self._partitions: dict[str, PartitionSummary] | None = None
        self._agents: dict[str, _AgentState] = {}
        self._inventory_shape: object = None
        self._last_event_id: int | None = None
        self._telemetry: dict[tuple[str, int], tuple[float | None, str]] = {}

    @property
    def subscribers(self) -> int:
        return len(self._subscribers)

    @contextlib.asynccontextmanager
    async def subscribe(self) -> AsyncIterator[Subscription]:
        """Changes from now on, while the context is open."""
        subscriber = Subscription()
        self._subscribers.add(subscriber)
        try:
            if self._poller is None or self._poller.done():
                await self._baseline()
                self._poller = asyncio.create_task(self._poll_forever(), name="change-feed")
            yield subscriber
        finally:
            self._subscribers.discard(subscriber)
            if not self._subscribers:
                await self._stop_polling()

    async def close(self) -> None:
        """End every subscription (the server is stopping)."""
        for subscriber in list(self._subscribers):
            subscriber.end()
        await self._stop_polling()

    async def _stop_polling(self) -> None:
        if self._poller is not None:
            self._poller.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._poller
        self._poller = None
        self._partitions = None
        self._last_event_id = None

    async def _poll_forever(self) -> None:
        while True:
            await asyncio.sleep(self._interval_s)
            try:
                changes = await self.poll()
            except Exception as exc:  # a database hiccup must not end the feed
                log.warning("change feed: reading the store failed: %s", exc)
                continue
            for kind, data in changes:
                self._publish(kind, data)

    def _publish(self, kind: str, data: dict[str, Any]) -> None:
        self._seq += 1
        change = Change(self._seq, kind, data)
        for subscriber in self._subscribers:
            subscriber.offer(change)

    async def _baseline(self) -> None:
        """Remember the present without announcing it: subscribers read it themselves."""
        await self.poll()

    async def poll(self) -> list[tuple[str, dict[str, Any]]]:
        """Read the store once; the changes since the previous read (none on the first)."""
        first = self._partitions is None
        changes: list[tuple[str, dict[str, Any]]] = []
        changes += await self._inventory_changes()
        changes += await self._partition_changes()
        changes += await self._agent_changes()
        changes += self._telemetry_changes()
        changes += await self._audit_changes()
        return [] if first else changes

    async def _inventory_changes(self) -> list[tuple[str, dict[str, Any]]]:
        clusters = await self._inventory.list_clusters()
        allocations = await self._inventory.list_allocations()
        shape = (
            tuple((c.id, c.agent_ids, c.num_domains) for c in clusters),
            tuple((a.id, a.cluster_id, a.machines) for a in allocations),
        )
        if shape == self._inventory_shape:
            return []
        self._inventory_shape = shape
        return [("inventory", {"clusters": [c.id for c in clusters]})]

    async def _partition_changes(self) -> list[tuple[str, dict[str, Any]]]:
        store = self._ctx.db.store
        records = await self._ctx.db(store.list_partitions)
        now = {r.id: partition_summary(r) for r in records}
        before = self._partitions or {}
        self._partitions = now
        changes = []
        for pid, summary in now.items():
            previous = before.get(pid)
            if previous != summary:
                change = "created" if previous is None else "updated"
                changes.append(("partition", {"change": change, **summary.model_dump()}))
        for pid, summary in before.items():
            if pid not in now:
                changes.append(("partition", {"change": "removed", **summary.model_dump()}))
        return changes

    async def _agent_changes(self) -> list[tuple[str, dict[str, Any]]]:
        store = self._ctx.db.store
        health = await self._ctx.db(store.list_agent_health)
        faults = await self._ctx.db(store.agent_faults)
        now: dict[str, _AgentState] = {}
        for h in health:
            state = "unknown" if h.state is AgentHealthState.UNKNOWN else h.state.name.lower()
            now[h.agent_id] = _AgentState(
                state=state,
                reason=h.reason,
                faults=tuple(sorted(faults.get(h.agent_id, {}).items())),
                links_down=tuple(self._links.machine_link_faults(h.agent_id)),
            )
        changes = [("agent", s.out(a)) for a, s in now.items() if self._agents.get(a) != s]
        self._agents = now
        return changes

    def _telemetry_changes(self) -> list[tuple[str, dict[str, Any]]]:
        """Utilisation (whole percent) and holders that changed, as one change per read."""
        now: dict[tuple[str, int], tuple[float | None, str]] = {}
        for agent_id in self._agents:
            heard = self._links.last_health(agent_id)
            if heard is None:
                continue
            for ipu in heard[0].ipus:
                utilisation, process = ipu_telemetry(heard[0], ipu.device_id)
                rounded = round(utilisation) if utilisation is not None else None
                now[(agent_id, ipu.device_id)] = (rounded, process)
        moved = [
            {"agent_id": a, "device_id": d, "utilisation": u, "process": p}
            for (a, d), (u, p) in now.items()
            if self._telemetry.get((a, d)) != (u, p)
        ]
        self._telemetry = now
        return [("telemetry", {"ipus": moved})] if moved else []

    async def _audit_changes(self) -> list[tuple[str, dict[str, Any]]]:
        store = self._ctx.db.store
        if self._last_event_id is None:
            newest = await self._ctx.db(store.list_events, limit=1)
            self._last_event_id = (newest[0].id or 0) if newest else 0
            return []
        fresh = await self._ctx.db(
            store.list_events, after_id=self._last_event_id, limit=AUDIT_BATCH
        )
        if not fresh:
            return []
        self._last_event_id = max(e.id or 0 for e in fresh)
        return [("audit", event_out(e)) for e in sorted(fresh, key=lambda e: e.id or 0)]


def event_out(event: AuditEvent) -> dict[str, Any]:
    return {
        "id": event.id,
        "time": event.time.isoformat(),
        "actor": event.actor,
        "action": event.action,
        "target": event.target,
        "outcome": event.outcome,
        "source": event.source,
        "detail": event.detail,
    }
