"""A short-lived in-memory view of the inventory (agents, clusters, allocations).

Every partition request needs the caller's allocations, their clusters and
agents; reading them from the store each time costs three queries on the
hot path. They change rarely, so use-cases read them from this view, which
this process invalidates on its own changes and checks when older than a
second: one read of the store's inventory version (which the database bumps
on every change to them, whoever makes it), and a reload only when it moved.
Another controller's change is therefore seen within a second, and a lookup
that misses reloads at once (a new allocation is usable immediately);
anything stale that matters is caught by the database's foreign keys.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from functools import cached_property

from vpod.domain.entities import Agent, Allocation, Cluster
from vpod.domain.naming import natural_key

from .clock import Clock
from .db import Db

TTL_S = 1.0


@dataclass(frozen=True)
class InventoryView:
    agents: dict[str, Agent]
    clusters: dict[str, Cluster]
    allocations: dict[str, Allocation]
    version: int
    """The store's inventory version read before loading: at least as old as what it holds."""

    @cached_property
    def sorted_agents(self) -> list[Agent]:
        """The agents in natural id order, sorted once per view (read every second by the
        heartbeats: 1,024 of them on a pod1024)."""
        return sorted(self.agents.values(), key=lambda a: natural_key(a.id))

    @cached_property
    def sorted_clusters(self) -> list[Cluster]:
        return sorted(self.clusters.values(), key=lambda c: natural_key(c.id))


class InventoryCache:
    def __init__(self, clock: Clock, db: Db, *, ttl_s: float = TTL_S) -> None:
        self._clock = clock
        self._db = db
        self._ttl = ttl_s
        self._view: InventoryView | None = None
        self._checked_at = 0.0
        """When (monotonic) the view was last loaded or found current."""
        self._lock = asyncio.Lock()

    def invalidate(self) -> None:
        self._view = None

    async def view(self, *, fresh: bool = False) -> InventoryView:
        now = self._clock.monotonic()
        view = self._view
        if not fresh and view is not None and now - self._checked_at < self._ttl:
            return view
        async with self._lock:  # one check or reload at a time; the others reuse it
            view = self._view
            if view is not None and self._checked_at >= now and not fresh:
                return view
            store = self._db.store
            # The version first: a change landing during the reload leaves the view with an
            # older version than its contents, so the next check reloads again (never the
            # opposite, a view older than its version, which would never be reloaded).
            version = await self._db(store.inventory_version)
            if view is None or fresh or version != view.version:
                agents = await self._db(store.list_agents)
                clusters = await self._db(store.list_clusters)
                allocations = await self._db(store.list_allocations)
                view = InventoryView(
                    agents={a.id: a for a in agents},
                    clusters={c.id: c for c in clusters},
                    allocations={a.id: a for a in allocations},
                    version=version,
                )
                self._view = view
            self._checked_at = self._clock.monotonic()
            return view
