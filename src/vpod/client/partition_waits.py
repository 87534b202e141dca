"""Waiting for a partition to become ACTIVE, for every client of the user API.

Mixed into the gRPC user clients and the REST clients, blocking or asyncio:
each polls its own ``partition_status`` until :func:`.user_calls.settled`.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable
from typing import Protocol

from .errors import Timeout
from .records import PartitionStatus
from .user_calls import POLL_S, WAIT_TIMEOUT_S, not_active, settled


class _ReadsStatus(Protocol):
    def partition_status(self, partition_id: str, /) -> PartitionStatus: ...


class _AwaitsStatus(Protocol):
    def partition_status(self, partition_id: str, /) -> Awaitable[PartitionStatus]: ...


class PartitionWaits:
    def wait_until_active(
        self: _ReadsStatus,
        partition_id: str,
        *,
        timeout: float = WAIT_TIMEOUT_S,
        poll: float = POLL_S,
    ) -> PartitionStatus:
        """Poll until the partition is ACTIVE; `Timeout` after ``timeout`` s, `FailedPrecondition`
        when it goes to ERROR."""
        deadline = time.monotonic() + timeout
        status: PartitionStatus | None = None
        while time.monotonic() < deadline:
            status = self.partition_status(partition_id)
            if settled(status, partition_id):
                return status
            time.sleep(poll)
        raise Timeout(not_active(partition_id, timeout, status))


class AsyncPartitionWaits:
    async def wait_until_active(
        self: _AwaitsStatus,
        partition_id: str,
        *,
        timeout: float = WAIT_TIMEOUT_S,
        poll: float = POLL_S,
    ) -> PartitionStatus:
        """Poll until the partition is ACTIVE; `Timeout` after ``timeout`` s, `FailedPrecondition`
        when it goes to ERROR."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        status: PartitionStatus | None = None
        while loop.time() < deadline:
            status = await self.partition_status(partition_id)
            if settled(status, partition_id):
                return status
            await asyncio.sleep(poll)
        raise Timeout(not_active(partition_id, timeout, status))
