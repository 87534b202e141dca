"""The agent gateway over gRPC: one pooled channel per agent address.

Every call presents the agent's key (``Agent.key``, from the store): agents obey
only the controller that knows it (docs/adr/0002-agent-credentials.md).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import TypeVar

from vpod.agent.client import AgentClient, ChannelPool, HealthMemo
from vpod.agent.errors import AgentUnavailable
from vpod.agent.model import (
    ConfiguredPartition,
    Fault,
    LinkTestKind,
    LinkTestResult,
    MachineHealth,
    MachineIdentity,
    PartitionConfig,
)
from vpod.domain.entities import Agent

T = TypeVar("T")


class GrpcAgentGateway:
    """Implements :class:`~.agent_gateway.AgentGateway`. Create it inside the serving loop."""

    def __init__(self) -> None:
        self._pool = ChannelPool()
        self._health_memo = HealthMemo()
        self._closing: set[asyncio.Task[None]] = set()

    def _client(self, agent: Agent) -> AgentClient:
        return self._pool.client(agent.address, agent_id=agent.id, key=agent.key)

    async def _call(self, agent: Agent, call: Callable[[AgentClient], Awaitable[T]]) -> T:
        """One call; if its channel was swapped for a fresh one meanwhile (the agent
        restarted, see :meth:`reconnect`), it is made once more on the new channel."""
        client = self._client(agent)
        try:
            return await call(client)
        except AgentUnavailable:
            fresh = self._client(agent)
            if fresh is client:
                raise
            return await call(fresh)

    async def configure(
        self,
        agent: Agent,
        config: PartitionConfig,
        *,
        hosts: Sequence[str],
        timeout: float,
    ) -> None:
        await self._call(
            agent, lambda c: c.configure_partition_changed(config, hosts=hosts, timeout=timeout)
        )

    async def set_partition_hosts(
        self, agent: Agent, partition_id: str, hosts: Sequence[str], *, timeout: float
    ) -> bool:
        return await self._call(
            agent, lambda c: c.set_partition_hosts(partition_id, hosts, timeout=timeout)
        )

    async def release(self, agent: Agent, partition_id: str, *, timeout: float) -> None:
        await self._call(agent, lambda c: c.release_partition(partition_id, timeout=timeout))

    async def reset(
        self, agent: Agent, partition_id: str, *, unless_attached: bool = False, timeout: float
    ) -> None:
        await self._call(
            agent,
            lambda c: c.reset_partition(
                partition_id, unless_attached=unless_attached, timeout=timeout
            ),
        )

    async def identity(self, agent: Agent, *, timeout: float) -> MachineIdentity:
        return await self._call(agent, lambda c: c.get_identity(timeout=timeout))

    async def identity_at(self, address: str, *, key: str, timeout: float) -> MachineIdentity:
        async with AgentClient(address, key=key) as client:
            return await client.get_identity(timeout=timeout)

    async def configurations(self, agent: Agent, *, timeout: float) -> list[ConfiguredPartition]:
        return await self._call(agent, lambda c: c.list_configurations(timeout=timeout))

    async def fleet_configurations(
        self, agent: Agent, agent_ids: Sequence[str], *, timeout: float
    ) -> dict[str, list[ConfiguredPartition]]:
        return await self._call(agent, lambda c: c.fleet_configurations(agent_ids, timeout=timeout))

    async def ipu_attributes(self, agent: Agent, *, timeout: float) -> dict[int, dict[str, str]]:
        return await self._call(agent, lambda c: c.list_ipu_attributes(timeout=timeout))

    async def health(self, agent: Agent, *, since_event: int = 0, timeout: float) -> MachineHealth:
        return await self._call(agent, lambda c: c.health(since_event, timeout=timeout))

    async def fleet_health(
        self, agent: Agent, machines: Sequence[tuple[str, int]], *, timeout: float
    ) -> list[MachineHealth]:
        return await self._call(
            agent, lambda c: c.fleet_health(machines, timeout=timeout, memo=self._health_memo)
        )

    async def link_tests(
        self, agent: Agent, kinds: Iterable[LinkTestKind], *, timeout: float
    ) -> list[LinkTestResult]:
        return await self._call(agent, lambda c: c.run_link_tests(kinds, timeout=timeout))

    async def inject_fault(self, agent: Agent, fault: Fault, *, timeout: float) -> list[Fault]:
        return await self._call(agent, lambda c: c.inject_fault(fault, timeout=timeout))

    async def clear_fault(
        self, agent: Agent, fault: Fault | None, *, timeout: float
    ) -> list[Fault]:
        return await self._call(agent, lambda c: c.clear_fault(fault, timeout=timeout))

    async def reconnect(self, agent: Agent) -> None:
        # A pooled channel to a restarted agent may sit in reconnect backoff for seconds:
        # dial a new one. The old one is closed in the background, as closing waits for
        # the calls still on it.
        old = self._pool.detach(agent.address)
        if old is not None:
            task = asyncio.get_running_loop().create_task(old.close(grace=1.0))
            self._closing.add(task)
            task.add_done_callback(self._closing.discard)

    async def close(self) -> None:
        await self._pool.close()
