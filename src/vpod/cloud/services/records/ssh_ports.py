"""Direct SSH ports held by servers (the operator option ``ssh_direct_ports``)."""

from __future__ import annotations

from collections.abc import Collection
from datetime import datetime

from .base import RecordsBase


class SshPortRecords(RecordsBase):
    async def assign_ssh_ports(
        self, server_ids: Collection[str], first: int, last: int, now: datetime
    ) -> dict[str, int]:
        """Give each server the lowest free port of ``first..last`` it lacks (idempotent);
        server id -> port for those that hold one (a full range leaves the rest out)."""
        return await self._db(self._store.ssh_ports.assign, server_ids, first, last, now)

    async def free_ssh_ports(self, first: int, last: int) -> int:
        return await self._db(self._store.ssh_ports.free_count, first, last)

    async def ssh_ports_of(self, server_ids: Collection[str]) -> dict[str, int]:
        return await self._db(self._store.ssh_ports.of_servers, server_ids)

    async def ssh_port_holder(self, port: int) -> tuple[str, str] | None:
        """(server id, cluster id) of the server holding ``port``, if any."""
        return await self._db(self._store.ssh_ports.holder, port)

    async def held_ssh_ports(self) -> dict[int, str]:
        """Every held port -> its server's id."""
        return await self._db(self._store.ssh_ports.held)

    async def servers_needing_ssh_ports(self, first: int, last: int) -> list[str]:
        """Servers holding no port within ``first..last``."""
        return await self._db(self._store.ssh_ports.servers_needing, first, last)
