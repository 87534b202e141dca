"""Removals that can take what depends on them along: the admin's ``--force``.

Without ``force`` each removal refuses while something depends on it (a
cluster with allocations, an allocation with partitions, an agent in a
cluster) and says what to remove first. With ``force`` the dependants go
first, innermost first, each through its own use-case (partitions are
released on their agents, every step is audited), so a force that stops
half way (an agent refusing, the database going away) leaves a consistent
state that the same command finishes when repeated.
"""

from __future__ import annotations

from .caller import Caller
from .inventory import Inventory
from .partitions import PartitionService


class Teardown:
    def __init__(self, inventory: Inventory, partitions: PartitionService) -> None:
        self._inventory = inventory
        self._partitions = partitions

    async def remove_allocation(
        self, caller: Caller, allocation_id: str, *, force: bool = False
    ) -> None:
        """Remove an allocation; with ``force``, its partitions first (forced removes)."""
        if force:
            for record in await self._partitions.list_partitions(
                caller, allocation_id=allocation_id
            ):
                await self._partitions.remove(caller, record.id, force=True)
        await self._inventory.remove_allocation(caller, allocation_id)

    async def remove_cluster(self, caller: Caller, cluster_id: str, *, force: bool = False) -> None:
        """Remove a cluster (its agents stay); with ``force``, its allocations first."""
        if force:
            for allocation in await self._inventory.list_allocations(cluster_id):
                await self.remove_allocation(caller, allocation.id, force=True)
        await self._inventory.remove_cluster(caller, cluster_id)

    async def remove_agent(self, caller: Caller, agent_id: str, *, force: bool = False) -> None:
        """Forget an agent; with ``force``, the cluster it is in first (as a forced cluster
        removal: its allocations and partitions too; the cluster's other agents stay)."""
        if force:
            for cluster in await self._inventory.list_clusters():
                if agent_id in cluster.agent_ids:
                    await self.remove_cluster(caller, cluster.id, force=True)
        await self._inventory.remove_agent(caller, agent_id)
