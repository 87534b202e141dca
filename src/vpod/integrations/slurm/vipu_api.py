"""What the integration asks of V-IPU: create, remove and list its partitions.

:class:`PartitionApi` is the whole surface the jobs logic uses, so tests and
the benchmark can count calls and a different client can sit behind it.
:class:`GrpcPartitionApi` speaks the V-IPU user gRPC API on one long-lived
asynchronous channel, with the endpoint and credentials of a vipu-cli.hcl.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import grpc
import grpc.aio

from vpod.wire import virmgrpc_pb2 as pb
from vpod.wire import virmgrpc_pb2_grpc as pb_grpc

CHANNEL_OPTIONS = (
    ("grpc.initial_reconnect_backoff_ms", 200),
    ("grpc.min_reconnect_backoff_ms", 200),
    ("grpc.max_reconnect_backoff_ms", 2000),
)
"""Reconnect soon after a controller restart: a job's retry must not wait on gRPC's 2-minute cap."""
USER_ID_METADATA = "vipu-user-id"
ACCESS_KEY_METADATA = "vipu-access-key"


class PartitionFailure(Exception):
    """A call to V-IPU failed; the message is one sentence naming the cause."""


class PartitionApi(Protocol):
    async def create(self, partition_id: str, size: int, allocation: str) -> None:
        """Create the partition (or find it already made with that size); it is ACTIVE after."""

    async def remove(self, partition_id: str) -> bool:
        """Remove the partition; False when it did not exist."""

    async def list_ids(self) -> list[str]:
        """Ids of every partition the integration's user sees."""

    async def close(self) -> None: ...


@dataclass(frozen=True)
class Endpoint:
    host: str = "localhost"
    port: int = 8090
    user_id: str = ""
    access_key: str = ""
    tls_ca: str = ""

    @property
    def target(self) -> str:
        return f"{self.host}:{self.port}"


def parse_hcl_pairs(text: str) -> dict[str, str]:
    """The ``key = value`` lines of a vipu-cli.hcl (values unquoted); comments skipped."""
    values: dict[str, str] = {}
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith(("#", "//")) or "=" not in line:
            continue
        key, value = (part.strip() for part in line.split("=", 1))
        if value.startswith('"'):
            value = value[1:].split('"', 1)[0]
        else:
            value = value.split("#", 1)[0].strip()
        values[key] = value
    return values


def endpoint_from_hcl(path: str) -> Endpoint:
    try:
        values = parse_hcl_pairs(Path(path).read_text())
    except OSError as exc:
        raise PartitionFailure(f"cannot read the V-IPU config {path}: {exc.strerror}") from None
    try:
        port = int(values.get("api-port", "8090"))
    except ValueError:
        raise PartitionFailure(f"{path}: api-port must be a number") from None
    return Endpoint(
        host=values.get("api-host", "localhost"),
        port=port,
        user_id=values.get("api-user-id", ""),
        access_key=values.get("api-access-key", ""),
        tls_ca=values.get("tls-ca", ""),
    )


class GrpcPartitionApi:
    """The V-IPU user API on one asynchronous channel, opened on first use."""

    def __init__(self, endpoint: Endpoint, *, timeout_s: float) -> None:
        self.endpoint = endpoint
        self.timeout_s = timeout_s
        self._channel: grpc.aio.Channel | None = None
        self._stub: pb_grpc.UserServiceAsyncStub | None = None

    def _users(self) -> pb_grpc.UserServiceAsyncStub:
        if self._stub is None:
            if self.endpoint.tls_ca:
                credentials = grpc.ssl_channel_credentials(Path(self.endpoint.tls_ca).read_bytes())
                self._channel = grpc.aio.secure_channel(
                    self.endpoint.target, credentials, options=CHANNEL_OPTIONS
                )
            else:
                self._channel = grpc.aio.insecure_channel(
                    self.endpoint.target, options=CHANNEL_OPTIONS
                )
            self._stub = pb_grpc.UserServiceStub(self._channel)  # type: ignore[assignment]
        assert self._stub is not None
        return self._stub

    def _metadata(self) -> tuple[tuple[str, str], ...]:
        if not self.endpoint.user_id:
            return ()
        return (
            (USER_ID_METADATA, self.endpoint.user_id),
            (ACCESS_KEY_METADATA, self.endpoint.access_key),
        )

    def _failure(self, exc: grpc.RpcError, what: str) -> PartitionFailure:
        code = exc.code()
        details = " ".join((exc.details() or "").split())
        if code == grpc.StatusCode.UNAVAILABLE and "failed to connect" in details.lower():
            return PartitionFailure(
                f"{what}: cannot reach the V-IPU controller at {self.endpoint.target}"
            )
        if code == grpc.StatusCode.DEADLINE_EXCEEDED:
            return PartitionFailure(
                f"{what}: the V-IPU controller at {self.endpoint.target} did not answer"
                f" within {self.timeout_s:g} s"
            )
        return PartitionFailure(f"{what}: {details or code.name}")

    async def create(self, partition_id: str, size: int, allocation: str) -> None:
        request = pb.CreatePartitionRequest(
            requirements=pb.PartitionRequirements(
                id=partition_id, size=size, allocation_id=allocation
            )
        )
        try:
            await self._users().CreatePartition(
                request, timeout=self.timeout_s, metadata=self._metadata()
            )
        except grpc.RpcError as exc:
            raise self._failure(exc, f"cannot create partition {partition_id}") from None

    async def remove(self, partition_id: str) -> bool:
        request = pb.RemovePartitionRequest(partition_id=partition_id, force=True)
        try:
            await self._users().RemovePartition(
                request, timeout=self.timeout_s, metadata=self._metadata()
            )
        except grpc.RpcError as exc:
            if exc.code() == grpc.StatusCode.NOT_FOUND:
                return False
            raise self._failure(exc, f"cannot remove partition {partition_id}") from None
        return True

    async def list_ids(self) -> list[str]:
        try:
            reply = await self._users().ListPartitions(
                pb.ListPartitionsRequest(), timeout=self.timeout_s, metadata=self._metadata()
            )
        except grpc.RpcError as exc:
            raise self._failure(exc, "cannot list partitions") from None
        return [p.id for p in reply.partitions]

    async def close(self) -> None:
        if self._channel is not None:
            await self._channel.close()
            self._channel = None
            self._stub = None
