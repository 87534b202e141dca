"""Partition keys: records and call descriptions of ``vpod.keys.v1.PartitionKeyService``.

A partition key may get, reset and attach one partition and nothing else; a
Slurm job gets one for its partition. The user clients (:mod:`.user`) run
these calls; nothing here does I/O.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from vpod.wire import keys_pb2 as kpb

from .grpc_transport import Rpc, Service, nothing
from .records import FromWire

KEYS_SERVICE = Service(kpb.DESCRIPTOR.services_by_name["PartitionKeyService"])


@dataclass(frozen=True)
class PartitionKey(FromWire):
    """A key (never the key itself): its id, who minted it and for which partition."""

    id: str
    owner_id: str
    partition_id: str
    created_at: datetime | None


@dataclass(frozen=True)
class MintedPartitionKey:
    """A new key: present ``partition_key.id`` as the user id and ``access_key`` as the key."""

    partition_key: PartitionKey
    access_key: str = field(repr=False)

    @property
    def user_id(self) -> str:
        return self.partition_key.id


def create_partition_key(partition_id: str, key_id: str = "") -> Rpc[MintedPartitionKey]:
    """A key that may get, reset and attach ``partition_id`` only (shown once)."""
    return KEYS_SERVICE.call(
        "CreatePartitionKey",
        kpb.CreatePartitionKeyRequest(partition_id=partition_id, key_id=key_id),
        lambda reply: MintedPartitionKey(
            PartitionKey.from_wire(reply.partition_key), reply.access_key
        ),
    )


def list_partition_keys() -> Rpc[list[PartitionKey]]:
    """The partition keys the caller minted (every one, for an administrator)."""
    return KEYS_SERVICE.call(
        "ListPartitionKeys",
        kpb.ListPartitionKeysRequest(),
        lambda reply: [PartitionKey.from_wire(k) for k in reply.partition_keys],
    )


def remove_partition_key(key_id: str) -> Rpc[None]:
    """Stop a partition key now."""
    return KEYS_SERVICE.call(
        "RemovePartitionKey", kpb.RemovePartitionKeyRequest(key_id=key_id), nothing
    )
