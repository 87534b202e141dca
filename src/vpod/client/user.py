"""Clients of the V-IPU user API: :class:`UserClient` (blocking) and :class:`AsyncUserClient`.

Both run the same call descriptions (:mod:`.user_calls`) and raise the same
:mod:`.errors`. The user API has no allocation call: ``list_allocations``
calls the admin service's ``ListAllocations``, which the controller serves on
the user endpoint too, with the user's own credentials; it shows a user only
the allocations granted to them. A user client never dials the admin
endpoint (a vPOD's server has no way to it).

    >>> from vpod.client import UserClient
    >>> with UserClient.from_config() as vipu:          # vipu-cli.hcl, VIPU_CLI_*
    ...     vipu.create_partition("p1", 4)
    ...     vipu.wait_until_active("p1")
    ...     files = vipu.ipuof_config("p1").files()
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping, Sequence
from typing import Unpack

from . import partition_keys as key_calls
from . import user_calls as calls
from .admin_records import Allocation
from .config import Endpoint, load_settings, user_endpoint
from .errors import Timeout
from .grpc_transport import (
    DEFAULT_CREDENTIALS_HINT,
    DEFAULT_HINT,
    AsyncGrpcTransport,
    Diagnosis,
    GrpcTransport,
)
from .partition_keys import MintedPartitionKey, PartitionKey
from .records import IpuAttributes, IpuofConfig, Partition, PartitionStatus, Version
from .retry import DEFAULT_RETRY, RetryPolicy
from .user_calls import PartitionOptions

ADMIN_HINT = "admin-api-host/admin-api-port in vipu-cli.hcl or VIPU_CLI_ADMIN_API_PORT"


def _endpoint(
    config: str | None,
    env: Mapping[str, str] | None,
    overrides: Mapping[str, str | int | float | None],
) -> Endpoint:
    return user_endpoint(load_settings(overrides, env=env, config_path=config))


class _UserBase:
    def __init__(
        self,
        endpoint: Endpoint,
        *,
        hint: str = DEFAULT_HINT,
        credentials_hint: str = DEFAULT_CREDENTIALS_HINT,
    ) -> None:
        self.endpoint = endpoint
        self._diagnosis = Diagnosis(endpoint, hint, credentials_hint)


class UserClient(_UserBase):
    """The user API of one controller, over blocking gRPC.

    ``endpoint`` is the user endpoint (port 8090 by default).
    """

    def __init__(
        self,
        endpoint: Endpoint,
        *,
        hint: str = DEFAULT_HINT,
        credentials_hint: str = DEFAULT_CREDENTIALS_HINT,
        retry: RetryPolicy = DEFAULT_RETRY,
    ) -> None:
        super().__init__(endpoint, hint=hint, credentials_hint=credentials_hint)
        self._user = GrpcTransport(self._diagnosis, retry)

    @classmethod
    def from_config(
        cls,
        config: str | None = None,
        *,
        env: Mapping[str, str] | None = None,
        **overrides: str | int | float | None,
    ) -> UserClient:
        """Settings as ``vipu`` reads them: ``overrides`` (``api_host=...``), env, config file."""
        options = {key.replace("_", "-"): value for key, value in overrides.items()}
        return cls(_endpoint(config, env, options))

    def __enter__(self) -> UserClient:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._user.close()

    def version(self) -> Version:
        """The controller's version."""
        return Version(self._user.invoke(calls.version()), self.endpoint.target)

    def list_partitions(self, allocation: str | None = None) -> list[Partition]:
        """The partitions the caller may see (of one allocation when given)."""
        return self._user.invoke(calls.list_partitions(allocation))

    def get_partition(self, partition_id: str) -> Partition:
        """One partition; `NotFound` when the caller may not see it."""
        return calls.pick_partition(self.list_partitions(), partition_id)

    def create_partition(
        self, partition_id: str, size: int, **options: Unpack[PartitionOptions]
    ) -> str:
        """Create a partition of ``size`` IPUs; returns its id once it is ACTIVE or refused."""
        return self._user.invoke(calls.create_partition(partition_id, size, options))

    def remove_partition(self, partition_id: str, *, force: bool = False) -> None:
        self._user.invoke(calls.remove_partition(partition_id, force))

    def reset_partition(self, partition_id: str, *, relocatable: bool = False) -> None:
        self._user.invoke(calls.reset_partition(partition_id, relocatable))

    def partition_status(self, partition_id: str) -> PartitionStatus:
        return self._user.invoke(calls.partition_status(partition_id))

    def ipuof_config(self, partition_id: str, gcd: int | None = None) -> IpuofConfig:
        """The IPUoF config of every GCD of the partition, or of GCD ``gcd`` only."""
        return self._user.invoke(calls.ipuof_config(partition_id, gcd))

    def list_ipu_attributes(self, agents: Sequence[str] = ()) -> list[IpuAttributes]:
        return self._user.invoke(calls.list_ipu_attributes(agents))

    def list_allocations(self) -> list[Allocation]:
        """The allocations granted to the caller (every one, for an administrator)."""
        return self._user.invoke(calls.list_allocations())

    def create_partition_key(self, partition_id: str, key_id: str = "") -> MintedPartitionKey:
        """A key that may get, reset and attach ``partition_id`` only (shown once)."""
        return self._user.invoke(key_calls.create_partition_key(partition_id, key_id))

    def list_partition_keys(self) -> list[PartitionKey]:
        """The partition keys the caller minted (every one, for an administrator)."""
        return self._user.invoke(key_calls.list_partition_keys())

    def remove_partition_key(self, key_id: str) -> None:
        """Stop a partition key now."""
        self._user.invoke(key_calls.remove_partition_key(key_id))

    def wait_until_active(
        self,
        partition_id: str,
        *,
        timeout: float = calls.WAIT_TIMEOUT_S,
        poll: float = calls.POLL_S,
    ) -> PartitionStatus:
        """Poll until the partition is ACTIVE; `Timeout` after ``timeout`` s, `FailedPrecondition`
        when it goes to ERROR."""
        deadline = time.monotonic() + timeout
        status: PartitionStatus | None = None
        while time.monotonic() < deadline:
            status = self.partition_status(partition_id)
            if calls.settled(status, partition_id):
                return status
            time.sleep(poll)
        raise Timeout(calls.not_active(partition_id, timeout, status))


class AsyncUserClient(_UserBase):
    """The user API over ``grpc.aio``; the same methods as :class:`UserClient`."""

    def __init__(
        self,
        endpoint: Endpoint,
        *,
        hint: str = DEFAULT_HINT,
        credentials_hint: str = DEFAULT_CREDENTIALS_HINT,
        retry: RetryPolicy = DEFAULT_RETRY,
    ) -> None:
        super().__init__(endpoint, hint=hint, credentials_hint=credentials_hint)
        self._user = AsyncGrpcTransport(self._diagnosis, retry)

    @classmethod
    def from_config(
        cls,
        config: str | None = None,
        *,
        env: Mapping[str, str] | None = None,
        **overrides: str | int | float | None,
    ) -> AsyncUserClient:
        options = {key.replace("_", "-"): value for key, value in overrides.items()}
        return cls(_endpoint(config, env, options))

    async def __aenter__(self) -> AsyncUserClient:
        return self

    async def __aexit__(self, *_exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        await self._user.close()

    async def version(self) -> Version:
        return Version(await self._user.invoke(calls.version()), self.endpoint.target)

    async def list_partitions(self, allocation: str | None = None) -> list[Partition]:
        return await self._user.invoke(calls.list_partitions(allocation))

    async def get_partition(self, partition_id: str) -> Partition:
        return calls.pick_partition(await self.list_partitions(), partition_id)

    async def create_partition(
        self, partition_id: str, size: int, **options: Unpack[PartitionOptions]
    ) -> str:
        return await self._user.invoke(calls.create_partition(partition_id, size, options))

    async def remove_partition(self, partition_id: str, *, force: bool = False) -> None:
        await self._user.invoke(calls.remove_partition(partition_id, force))

    async def reset_partition(self, partition_id: str, *, relocatable: bool = False) -> None:
        await self._user.invoke(calls.reset_partition(partition_id, relocatable))

    async def partition_status(self, partition_id: str) -> PartitionStatus:
        return await self._user.invoke(calls.partition_status(partition_id))

    async def ipuof_config(self, partition_id: str, gcd: int | None = None) -> IpuofConfig:
        return await self._user.invoke(calls.ipuof_config(partition_id, gcd))

    async def list_ipu_attributes(self, agents: Sequence[str] = ()) -> list[IpuAttributes]:
        return await self._user.invoke(calls.list_ipu_attributes(agents))

    async def list_allocations(self) -> list[Allocation]:
        return await self._user.invoke(calls.list_allocations())

    async def create_partition_key(self, partition_id: str, key_id: str = "") -> MintedPartitionKey:
        return await self._user.invoke(key_calls.create_partition_key(partition_id, key_id))

    async def list_partition_keys(self) -> list[PartitionKey]:
        return await self._user.invoke(key_calls.list_partition_keys())

    async def remove_partition_key(self, key_id: str) -> None:
        await self._user.invoke(key_calls.remove_partition_key(key_id))

    async def wait_until_active(
        self,
        partition_id: str,
        *,
        timeout: float = calls.WAIT_TIMEOUT_S,
        poll: float = calls.POLL_S,
    ) -> PartitionStatus:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        status: PartitionStatus | None = None
        while loop.time() < deadline:
            status = await self.partition_status(partition_id)
            if calls.settled(status, partition_id):
                return status
            await asyncio.sleep(poll)
        raise Timeout(calls.not_active(partition_id, timeout, status))
