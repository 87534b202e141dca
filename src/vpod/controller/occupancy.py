"""Placement snapshots per cluster, kept in memory and refreshed from the store.

Building a snapshot from the store on every request would make each create
cost a scan of every partition, so the controller keeps one snapshot per
cluster and applies its own commits to it. The store stays the authority:
when a commit conflicts (another replica took the IPUs) or placement finds no
room, the caller asks for a fresh snapshot and tries once more, so a stale
cache can cost a retry but never a double allocation or a false refusal.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from vpod.domain.entities import Cluster
from vpod.placement import Snapshot

from .db import Db


@dataclass
class _Entry:
    snapshot: Snapshot
    generation: int


Loader = Callable[[Cluster], Awaitable[Snapshot]]


def snapshot_loader(db: Db, unavailable: Callable[[Cluster], frozenset[int]]) -> Loader:
    """Snapshots read from the store, without the slots ``unavailable`` names (faulty IPUs)."""

    async def load(cluster: Cluster) -> Snapshot:
        occupancy = await db(db.store.occupancy, cluster.id)
        return occupancy.snapshot(unavailable_slots=unavailable(cluster))

    return load


class OccupancyCache:
    """One snapshot per cluster with a lock that serialises place-and-commit."""

    def __init__(self, load: Loader) -> None:
        self._load = load
        self._entries: dict[str, _Entry] = {}
        self._locks: dict[str, asyncio.Lock] = {}
        self._generation = 0

    def lock(self, cluster_id: str) -> asyncio.Lock:
        """Held while a use-case places and commits in the cluster, so two
        requests of this process never race for the same IPUs."""
        lock = self._locks.get(cluster_id)
        if lock is None:
            lock = self._locks[cluster_id] = asyncio.Lock()
        return lock

    async def get(self, cluster: Cluster, *, fresh: bool = False) -> Snapshot:
        entry = self._entries.get(cluster.id)
        if entry is None or fresh:
            self._generation += 1
            entry = _Entry(await self._load(cluster), self._generation)
            self._entries[cluster.id] = entry
        return entry.snapshot

    def put(self, cluster_id: str, snapshot: Snapshot) -> None:
        """Record the snapshot after a commit this process made."""
        self._generation += 1
        self._entries[cluster_id] = _Entry(snapshot, self._generation)

    def forget(self, cluster_id: str | None = None) -> None:
        """Drop cached snapshots (all when ``cluster_id`` is None): the next get reloads."""
        if cluster_id is None:
            self._entries.clear()
        else:
            self._entries.pop(cluster_id, None)
