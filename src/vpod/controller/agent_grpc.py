"""The agent gateway over gRPC: one pooled channel per agent address."""

from __future__ import annotations

from collections.abc import Iterable

from vpod.agent.client import AgentClient, ChannelPool
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


class GrpcAgentGateway:
    """Implements :class:`~.agent_gateway.AgentGateway`. Create it inside the serving loop."""

    def __init__(self) -> None:
        self._pool = ChannelPool()

    def _client(self, agent: Agent) -> AgentClient:
        return self._pool.client(agent.address, agent_id=agent.id)

    async def configure(self, agent: Agent, config: PartitionConfig, *, timeout: float) -> None:
        await self._client(agent).configure_partition(config, timeout=timeout)

    async def release(self, agent: Agent, partition_id: str, *, timeout: float) -> None:
        await self._client(agent).release_partition(partition_id, timeout=timeout)

    async def reset(self, agent: Agent, partition_id: str, *, timeout: float) -> None:
        await self._client(agent).reset_partition(partition_id, timeout=timeout)

    async def identity(self, agent: Agent, *, timeout: float) -> MachineIdentity:
        return await self._client(agent).get_identity(timeout=timeout)

    async def identity_at(self, address: str, *, timeout: float) -> MachineIdentity:
        async with AgentClient(address) as client:
            return await client.get_identity(timeout=timeout)

    async def configurations(self, agent: Agent, *, timeout: float) -> list[ConfiguredPartition]:
        return await self._client(agent).list_configurations(timeout=timeout)

    async def ipu_attributes(self, agent: Agent, *, timeout: float) -> dict[int, dict[str, str]]:
        return await self._client(agent).list_ipu_attributes(timeout=timeout)

    async def health(self, agent: Agent, *, since_event: int = 0, timeout: float) -> MachineHealth:
        return await self._client(agent).health(since_event, timeout=timeout)

    async def link_tests(
        self, agent: Agent, kinds: Iterable[LinkTestKind], *, timeout: float
    ) -> list[LinkTestResult]:
        return await self._client(agent).run_link_tests(kinds, timeout=timeout)

    async def inject_fault(self, agent: Agent, fault: Fault, *, timeout: float) -> list[Fault]:
        return await self._client(agent).inject_fault(fault, timeout=timeout)

    async def clear_fault(
        self, agent: Agent, fault: Fault | None, *, timeout: float
    ) -> list[Fault]:
        return await self._client(agent).clear_fault(fault, timeout=timeout)

    async def close(self) -> None:
        await self._pool.close()
