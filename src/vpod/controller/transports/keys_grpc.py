"""Partition keys on the wire: ``vpod.keys.v1.PartitionKeyService`` on the user endpoint."""

from __future__ import annotations

from dataclasses import dataclass

import grpc

from vpod.store.records import PartitionKeyRecord
from vpod.wire import keys_pb2 as kpb
from vpod.wire import keys_pb2_grpc as kpb_grpc
from vpod.wire.field_copy import copy_fields

from ..caller import Caller
from ..partition_keys import PartitionKeys
from .auth import GrpcAuthenticator
from .grpc_handlers import as_user


@dataclass(eq=False)
class PartitionKeyServicer(kpb_grpc.PartitionKeyServiceServicer):
    """``vpod.keys.v1.PartitionKeyService``: each method calls one use-case."""

    keys: PartitionKeys
    auth: GrpcAuthenticator

    @as_user
    async def CreatePartitionKey(  # noqa: N802 - the wire's name
        self, request: kpb.CreatePartitionKeyRequest, caller: Caller
    ) -> kpb.CreatePartitionKeyReply:
        minted = await self.keys.mint(caller, request.partition_id, request.key_id)
        return kpb.CreatePartitionKeyReply(
            partition_key=_key_to_wire(minted.record), access_key=minted.access_key
        )

    @as_user
    async def ListPartitionKeys(  # noqa: N802
        self, request: kpb.ListPartitionKeysRequest, caller: Caller
    ) -> kpb.ListPartitionKeysReply:
        records = await self.keys.list(caller)
        return kpb.ListPartitionKeysReply(partition_keys=[_key_to_wire(r) for r in records])

    @as_user
    async def RemovePartitionKey(  # noqa: N802
        self, request: kpb.RemovePartitionKeyRequest, caller: Caller
    ) -> kpb.RemovePartitionKeyReply:
        await self.keys.revoke(caller, request.key_id)
        return kpb.RemovePartitionKeyReply()


def _key_to_wire(record: PartitionKeyRecord) -> kpb.PartitionKey:
    return copy_fields(kpb.PartitionKey, record)


def add_partition_key_api(server: grpc.aio.Server, servicer: PartitionKeyServicer) -> None:
    kpb_grpc.add_PartitionKeyServiceServicer_to_server(servicer, server)
