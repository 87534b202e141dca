"""Registered hosts, the slots servers hold on them, and the GPU agents' hosts and GPUs."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime

from vpod.store.errors import Conflict

from ...model.hosts import GpuAgent, HealthChange, Host, HostGpu, HostUsage
from .base import RecordsBase
from .convert import (
    gpu_agent_of,
    host_gpu_of,
    host_of,
    host_usage_of,
    row_of_gpu_agent,
    row_of_health,
    row_of_host,
    row_of_host_gpu,
)


class HostRecords(RecordsBase):
    async def add_host(self, host: Host) -> Host:
        return host_of(await self._db(self._store.add_host, row_of_host(host)))

    async def list_host_usage(self) -> list[HostUsage]:
        """Every registered host with the slots its servers hold, from one snapshot."""
        return [host_usage_of(u) for u in await self._db(self._store.list_host_usage)]

    async def set_host_enabled(self, host_id: str, enabled: bool) -> None:
        await self._db(self._store.set_host_enabled, host_id, enabled)

    async def remove_host(self, host_id: str) -> None:
        """Unregister a host (FailedPrecondition while a server runs on it)."""
        await self._db(self._store.remove_host, host_id)

    async def take_slots(self, server_id: str, host_id: str, slots: Sequence[int]) -> bool:
        """Give host slots to a server; False if another request took one of them meanwhile
        (place again on a fresh view)."""
        try:
            await self._db.racing(self._store.take_slots, server_id, host_id, slots)
        except Conflict:
            return False
        return True

    async def release_slots(self, server_id: str) -> None:
        await self._db(self._store.release_slots, server_id)

    # -- GPU hosts' agents and GPUs -----------------------------------------------------------

    async def register_gpu_host(self, host: Host, agent: GpuAgent, gpus: Sequence[HostGpu]) -> bool:
        """Record a host with its agent and GPUs (again: replaced); True if it is new."""
        return await self._db(
            self._store.gpu_hosts.register,
            row_of_host(host),
            row_of_gpu_agent(agent),
            [row_of_host_gpu(g) for g in gpus],
        )

    async def gpu_agent(self, host_id: str) -> GpuAgent | None:
        return await self._found(gpu_agent_of, self._store.gpu_hosts.agent, host_id)

    async def list_gpu_agents(self) -> list[GpuAgent]:
        return [gpu_agent_of(a) for a in await self._db(self._store.gpu_hosts.list_agents)]

    async def list_host_gpus(self, host_ids: Iterable[str] | None = None) -> list[HostGpu]:
        """The GPUs of ``host_ids`` (every host's without)."""
        ids = None if host_ids is None else list(host_ids)
        return [host_gpu_of(g) for g in await self._db(self._store.gpu_hosts.list_gpus, ids)]

    async def record_gpu_health(
        self, host_id: str, changes: Iterable[HealthChange], at: datetime
    ) -> None:
        """Store the GPUs' changed health and that the agent reported at ``at``."""
        rows = [row_of_health(c) for c in changes]
        await self._db(self._store.gpu_hosts.record_health, host_id, rows, at)

    async def server_slots(
        self, server_ids: Iterable[str]
    ) -> dict[str, tuple[str, tuple[int, ...]]]:
        """Server id -> (its host, the slots it holds there), for servers holding any."""
        return await self._db(self._store.gpu_hosts.server_slots, list(server_ids))
