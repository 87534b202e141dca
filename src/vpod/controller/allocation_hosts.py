"""Who may attach to an allocation's IPUs over IPUoF, and pushing changes to the agents.

Each allocation names the hosts whose applications may use its partitions
(IP addresses or CIDRs; none: the operator's trusted host network,
``Settings.trusted_hosts``). The controller sends them with every configure;
when they change, :meth:`AllocationHosts.set` stores them and pushes them at
once to the agents of every partition of the allocation
(``SetPartitionHosts``), and reconciliation (:mod:`.fleet`) re-applies them
to any agent that missed the push. A partition created later gets them at
configure.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from vpod.agent.errors import AgentError
from vpod.domain.entities import Agent, Allocation

from .agent_gateway import describe_failures, fan_out
from .caller import Caller
from .context import Context
from .inventory import Inventory
from .partitions import PartitionService

log = logging.getLogger("vpod.allocation_hosts")


class AllocationHosts:
    def __init__(self, ctx: Context, inventory: Inventory, partitions: PartitionService) -> None:
        self._ctx = ctx
        self._inventory = inventory
        self._partitions = partitions

    async def set(self, caller: Caller, allocation_id: str, hosts: Sequence[str]) -> Allocation:
        """Store the allocation's hosts and push them to its partitions' agents (idempotent).

        Agents that cannot be reached now get them at the next reconciliation, so this
        does not fail for them; NotFound for an unknown allocation, InvalidArgument for a
        host that is neither an address nor a CIDR."""
        allocation = await self._inventory.store_allocation_hosts(caller, allocation_id, hosts)
        failed = await self.push(allocation)
        if failed:
            log.warning(
                "IPUoF hosts of allocation %s not pushed to every agent yet (reconciliation"
                " will): %s",
                allocation_id,
                describe_failures(failed),
            )
        return allocation

    async def push(self, allocation: Allocation) -> dict[str, AgentError]:
        """Send the allocation's hosts to the agents of each of its partitions; returns the
        agents that failed (by agent id)."""
        ctx = self._ctx
        hosts = await self._inventory.allocation_hosts(allocation.id)
        cluster = await self._inventory.cluster(allocation.cluster_id)
        records = await ctx.db(ctx.db.store.list_partitions, allocation_ids=[allocation.id])
        timeout = ctx.settings.agent_timeout_s
        failed: dict[str, AgentError] = {}
        for record in records:
            agents = await self._partitions.agents_of(cluster, record)

            async def send(agent: Agent, partition_id: str = record.id) -> bool:
                return await ctx.gateway.set_partition_hosts(
                    agent, partition_id, hosts, timeout=timeout
                )

            _, missed = await fan_out(agents, send)
            failed.update(missed)
        return failed
