"""What the controller manages, summed up for its gauges; and whether its store answers.

Read through the use-cases (the inventory, the partitions) and the agent
health the store keeps, so ``/metrics`` and ``/readyz`` need no store
access of their own.
"""

from __future__ import annotations

import asyncio
from collections import Counter as Tally
from collections.abc import Iterable
from dataclasses import dataclass, field

from vpod.domain.entities import Agent, Allocation, Cluster
from vpod.store.records import AgentHealth, AgentHealthState, PartitionRecord

from .caller import SYSTEM
from .db import Db
from .inventory import Inventory
from .partitions import PartitionService


@dataclass(frozen=True)
class StateSnapshot:
    """The managed state as gauge values, computed by :func:`state_snapshot`."""

    partitions: dict[tuple[str, str, str], int] = field(default_factory=dict)
    """(cluster, ready state, operation state) -> number of partitions."""
    agents: dict[str, int] = field(default_factory=dict)
    """Agent reachability (``reachable``, ``unreachable``, ``unknown``) -> number of agents."""
    ipus_used: dict[str, int] = field(default_factory=dict)
    """Cluster -> IPUs held by partitions."""
    ipus_free: dict[str, int] = field(default_factory=dict)
    """Cluster -> IPUs held by no partition."""
    ipus_allocated: dict[str, int] = field(default_factory=dict)
    """Cluster -> IPUs in allocations (used or not)."""


def state_snapshot(
    *,
    clusters: Iterable[Cluster],
    allocations: Iterable[Allocation],
    partitions: Iterable[PartitionRecord],
    agents: Iterable[Agent],
    health: Iterable[AgentHealth],
) -> StateSnapshot:
    """Fold what the store holds into gauge values (pure, so tests can check it by hand)."""
    cluster_list = list(clusters)
    by_state: Tally[tuple[str, str, str]] = Tally()
    used: Tally[str] = Tally()
    for record in partitions:
        state = record.state
        by_state[(record.cluster_id, state.ready.name, state.operation.name)] += 1
        if state.holds_ipus:
            used[record.cluster_id] += record.spec.size
    allocated: Tally[str] = Tally()
    for allocation in allocations:
        allocated[allocation.cluster_id] += allocation.size
    health_of = {h.agent_id: h.state for h in health}
    reachability: Tally[str] = Tally({s.value: 0 for s in AgentHealthState})
    for agent in agents:
        reachability[health_of.get(agent.id, AgentHealthState.UNKNOWN).value] += 1
    return StateSnapshot(
        partitions=dict(by_state),
        agents=dict(reachability),
        ipus_used={c.id: used[c.id] for c in cluster_list},
        ipus_free={c.id: c.num_ipus - used[c.id] for c in cluster_list},
        ipus_allocated={c.id: allocated[c.id] for c in cluster_list},
    )


class ControllerStatus:
    def __init__(self, db: Db, inventory: Inventory, partitions: PartitionService) -> None:
        self._db = db
        self._inventory = inventory
        self._partitions = partitions

    async def state(self) -> StateSnapshot:
        """What the gauges show, read through the use-cases (four store reads)."""
        clusters = await self._inventory.list_clusters()
        allocations = await self._inventory.list_allocations()
        agents = await self._inventory.list_agents()
        partitions = await self._partitions.list_partitions(SYSTEM)
        health = await self._db(self._db.store.list_agent_health)
        return state_snapshot(
            clusters=clusters,
            allocations=allocations,
            partitions=partitions,
            agents=agents,
            health=health,
        )

    async def ping_store(self, timeout: float) -> None:
        """Return when the store answers; TimeoutError after ``timeout`` s, or a ServiceError."""
        await asyncio.wait_for(self._db(self._db.store.ping), timeout)
