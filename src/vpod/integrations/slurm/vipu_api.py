"""What the integration asks of V-IPU: create, remove and list its partitions, and mint and
revoke each job's partition key.

:class:`PartitionApi` is the whole surface the jobs logic uses, so unit tests
can stand in for V-IPU. :class:`ClientPartitionApi` is it over
:class:`vpod.client.AsyncUserClient`, with the endpoint and credentials of a
vipu-cli.hcl (and ``VIPU_CLI_*``, as the CLIs read them).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Protocol, TypeVar

from vpod.client import (
    AsyncUserClient,
    FailedPrecondition,
    NotFound,
    Unreachable,
    VpodError,
)

T = TypeVar("T")


class PartitionFailure(Exception):
    """A call to V-IPU failed; the message is one sentence naming the cause."""


class _OpenController(Exception):
    """The controller checks no credentials: a job needs no key."""


class PartitionApi(Protocol):
    async def create(self, partition_id: str, size: int, allocation: str) -> None:
        """Create the partition (or find it already made with that size); it is ACTIVE after."""

    async def remove(self, partition_id: str) -> bool:
        """Remove the partition; False when it did not exist."""

    async def list_ids(self) -> list[str]:
        """Ids of every partition the integration's user sees."""

    async def mint_key(self, partition_id: str, key_id: str) -> str | None:
        """A new key ``key_id`` for the partition only; None when the controller checks no
        credentials (it runs without --secure)."""

    async def revoke_key(self, key_id: str) -> bool:
        """Stop the key; False when it did not exist."""

    async def close(self) -> None: ...


class SharedPartitionApi(PartitionApi, Protocol):
    """What the static and reconfigurable modes also need: partitions that outlive jobs."""

    async def create_lasting(
        self, partition_id: str, size: int, allocation: str, *, reconfigurable: bool
    ) -> None:
        """Create it, or find it made already with that shape (idempotent); ACTIVE after."""

    async def reset(self, partition_id: str) -> None:
        """Put its IPUs back in their initial state (ends every attachment)."""


class ClientPartitionApi:
    """The V-IPU user API through one :class:`AsyncUserClient`, opened on first use.

    After a connection failure the client is retired, so the next job's call
    opens a fresh channel instead of waiting out the old one's reconnect
    backoff (up to two minutes in gRPC) once the controller is back. A retired
    client is closed when its last call in flight has finished: closing it
    earlier would cancel the calls of other jobs.
    """

    def __init__(self, config: str, *, timeout_s: float) -> None:
        self.config = config
        self.timeout_s = timeout_s
        self._client: AsyncUserClient | None = None
        self._in_flight: dict[AsyncUserClient, int] = {}

    def _vipu(self) -> AsyncUserClient:
        if self._client is None:
            try:
                self._client = AsyncUserClient.from_config(self.config, timeout=str(self.timeout_s))
            except VpodError as exc:
                raise PartitionFailure(f"cannot use {self.config}: {exc}") from None
            self._in_flight[self._client] = 0
        return self._client

    async def _call(self, what: str, call: Callable[[AsyncUserClient], Awaitable[T]]) -> T:
        client = self._vipu()
        self._in_flight[client] += 1
        try:
            return await call(client)
        except NotFound:
            raise
        except FailedPrecondition as exc:
            if "without --secure" in str(exc):
                raise _OpenController(str(exc)) from None
            raise PartitionFailure(f"{what}: {exc}") from None
        except VpodError as exc:
            if isinstance(exc, Unreachable) and self._client is client:
                self._client = None
            raise PartitionFailure(f"{what}: {exc}") from None
        finally:
            self._in_flight[client] -= 1
            if self._client is not client and self._in_flight[client] == 0:
                del self._in_flight[client]
                await client.close()

    async def create(self, partition_id: str, size: int, allocation: str) -> None:
        await self._call(
            f"cannot create partition {partition_id}",
            lambda vipu: vipu.create_partition(partition_id, size, allocation=allocation),
        )

    async def create_lasting(
        self, partition_id: str, size: int, allocation: str, *, reconfigurable: bool
    ) -> None:
        await self._call(
            f"cannot create partition {partition_id}",
            lambda vipu: vipu.create_partition(
                partition_id, size, allocation=allocation, reconfigurable=reconfigurable
            ),
        )

    async def reset(self, partition_id: str) -> None:
        try:
            await self._call(
                f"cannot reset partition {partition_id}",
                lambda vipu: vipu.reset_partition(partition_id),
            )
        except NotFound:
            raise PartitionFailure(f"partition {partition_id} does not exist") from None

    async def remove(self, partition_id: str) -> bool:
        try:
            await self._call(
                f"cannot remove partition {partition_id}",
                lambda vipu: vipu.remove_partition(partition_id, force=True),
            )
        except NotFound:
            return False
        return True

    async def list_ids(self) -> list[str]:
        partitions = await self._call("cannot list partitions", lambda v: v.list_partitions())
        return [p.id for p in partitions]

    async def mint_key(self, partition_id: str, key_id: str) -> str | None:
        try:
            minted = await self._call(
                f"cannot mint a key for partition {partition_id}",
                lambda vipu: vipu.create_partition_key(partition_id, key_id),
            )
        except _OpenController:
            return None
        return minted.access_key

    async def revoke_key(self, key_id: str) -> bool:
        try:
            await self._call(
                f"cannot revoke key {key_id}", lambda vipu: vipu.remove_partition_key(key_id)
            )
        except (NotFound, _OpenController):
            return False
        return True

    async def close(self) -> None:
        self._client = None
        for client in list(self._in_flight):
            del self._in_flight[client]
            await client.close()
