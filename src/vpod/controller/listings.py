"""What the listing endpoints show, and to whom: one use-case per listing.

The user gRPC API, the admin gRPC API and the REST API render these rows in
their own shapes; which rows a caller sees, and what is joined to them, is
decided here once:

- allocations: those the caller may use, with their cluster, the users
  granted each one (shown to administrators, and to everyone in open mode:
  a user of a secure controller does not learn who else shares an
  allocation) and how many partitions each holds;
- partitions: those of the allocations the caller may use, each with its
  cluster (a partition whose cluster vanished meanwhile is left out);
- agents: every agent with the cluster and allocation it is in and its
  health (the admin API's; callers are admins by then).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from vpod.domain.entities import Agent, Allocation, Cluster
from vpod.domain.naming import natural_key
from vpod.store.records import PartitionRecord

from . import errors
from .caller import Caller
from .fleet import Fleet, HealthView
from .inventory import Inventory
from .partition_views import with_unreachable_agents
from .partitions import PartitionService
from .settings import Settings


@dataclass(frozen=True)
class AllocationRow:
    allocation: Allocation
    cluster: Cluster | None
    """None when the cluster was removed between two reads."""
    user_ids: tuple[str, ...]
    """Sorted; empty when the caller may not see who else uses the allocation."""
    num_partitions: int


@dataclass(frozen=True)
class PartitionRow:
    record: PartitionRecord
    cluster: Cluster


@dataclass(frozen=True)
class AgentRow:
    agent: Agent
    cluster_id: str
    """Empty when the agent is in no cluster."""
    allocation_id: str
    """Empty when the agent's machine is in no allocation."""
    health: HealthView


@dataclass(eq=False)
class Listings:
    """Which allocations, partitions and agents each caller sees, with what joined to them."""

    _settings: Settings
    _inventory: Inventory
    _partitions: PartitionService
    _fleet: Fleet

    def shows_users(self, caller: Caller) -> bool:
        """Whether the caller may see who is granted an allocation."""
        return caller.admin or not self._settings.secure

    async def allocations(
        self, caller: Caller, cluster_id: str | None = None
    ) -> list[AllocationRow]:
        """The allocations the caller may use (of one cluster when ``cluster_id``), by id."""
        errors.check_filter("cluster", cluster_id)
        allocations = [
            a for a in await self._inventory.list_allocations(cluster_id) if caller.may_use(a.id)
        ]
        clusters = {c.id: c for c in await self._inventory.list_clusters()}
        users = await self._inventory.list_users() if self.shows_users(caller) else []
        counts = Counter(r.allocation_id for r in await self._partitions.list_partitions(caller))
        return [
            AllocationRow(
                allocation=a,
                cluster=clusters.get(a.cluster_id),
                user_ids=tuple(
                    sorted((u.id for u in users if a.id in u.allocation_ids), key=natural_key)
                ),
                num_partitions=counts.get(a.id, 0),
            )
            for a in allocations
        ]

    async def allocation(self, caller: Caller, allocation_id: str) -> AllocationRow:
        """One allocation's row, as :meth:`allocations` shows it (NotFound if not visible)."""
        allocation = await self._inventory.allocation_for(caller, allocation_id)
        for row in await self.allocations(caller, allocation.cluster_id):
            if row.allocation.id == allocation_id:
                return row
        raise errors.NotFound(f"allocation {allocation_id} does not exist any more")

    async def new_allocation(self, allocation: Allocation) -> AllocationRow:
        """A just-created allocation's row (no users granted it yet, no partitions)."""
        cluster = await self._inventory.cluster(allocation.cluster_id)
        return AllocationRow(allocation=allocation, cluster=cluster, user_ids=(), num_partitions=0)

    async def partitions(
        self, caller: Caller, *, allocation_id: str | None = None, cluster_id: str | None = None
    ) -> list[PartitionRow]:
        """The partitions the caller may see, by id; NOT_FOUND for an allocation not theirs."""
        errors.check_filter("allocation", allocation_id)
        errors.check_filter("cluster", cluster_id)
        records = await self._partitions.list_partitions(
            caller, allocation_id=allocation_id, cluster_id=cluster_id
        )
        clusters = {c.id: c for c in await self._inventory.list_clusters()}
        health = await self._fleet.health_of_all() if records else {}
        unreachable = {a: h.reason for a, h in health.items() if not h.reachable}
        return [
            PartitionRow(
                record=with_unreachable_agents(r, clusters[r.cluster_id], unreachable),
                cluster=clusters[r.cluster_id],
            )
            for r in records
            if r.cluster_id in clusters
        ]

    async def agents(self, cluster_id: str | None = None) -> list[AgentRow]:
        """Every agent (of one cluster when ``cluster_id``) with where it is and its health."""
        errors.check_filter("cluster", cluster_id)
        agents = await self._inventory.list_agents()
        clusters = await self._inventory.list_clusters()
        cluster_of = {a: c.id for c in clusters for a in c.agent_ids}
        by_id = {c.id: c for c in clusters}
        allocation_of: dict[str, str] = {}
        for allocation in await self._inventory.list_allocations():
            owner = by_id.get(allocation.cluster_id)
            if owner is not None:
                allocation_of.update(dict.fromkeys(allocation.agent_ids(owner), allocation.id))
        if cluster_id:
            agents = [a for a in agents if cluster_of.get(a.id) == cluster_id]
        health = await self._fleet.health_of_all()
        return [
            AgentRow(
                agent=a,
                cluster_id=cluster_of.get(a.id, ""),
                allocation_id=allocation_of.get(a.id, ""),
                health=health[a.id] if a.id in health else await self._fleet.health_of(a.id),
            )
            for a in agents
        ]

    async def new_agent(self, agent: Agent) -> AgentRow:
        """A just-created agent's row (in no cluster yet)."""
        return AgentRow(
            agent=agent,
            cluster_id="",
            allocation_id="",
            health=await self._fleet.health_of(agent.id),
        )
