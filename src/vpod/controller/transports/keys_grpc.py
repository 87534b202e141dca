"""Partition keys on the wire: ``vpod.keys.v1.PartitionKeyService`` on the user endpoint."""

from __future__ import annotations

import grpc

from vpod.store.records import PartitionKeyRecord
from vpod.wire import keys_pb2 as kpb
from vpod.wire import keys_pb2_grpc as kpb_grpc

from ..partition_keys import PartitionKeys
from .auth import GrpcAuthenticator
from .grpc_errors import grpc_errors


class PartitionKeyServicer(kpb_grpc.PartitionKeyServiceServicer):
    def __init__(self, keys: PartitionKeys, auth: GrpcAuthenticator) -> None:
        self._keys = keys
        self._auth = auth

    @grpc_errors
    async def CreatePartitionKey(  # noqa: N802 - the wire's name
        self, request: kpb.CreatePartitionKeyRequest, context: grpc.aio.ServicerContext
    ) -> kpb.CreatePartitionKeyReply:
        caller = await self._auth.user(context)
        minted = await self._keys.mint(caller, request.partition_id, request.key_id)
        return kpb.CreatePartitionKeyReply(
            partition_key=_key_to_wire(minted.record), access_key=minted.access_key
        )

    @grpc_errors
    async def ListPartitionKeys(  # noqa: N802
        self, request: kpb.ListPartitionKeysRequest, context: grpc.aio.ServicerContext
    ) -> kpb.ListPartitionKeysReply:
        caller = await self._auth.user(context)
        records = await self._keys.list(caller)
        return kpb.ListPartitionKeysReply(partition_keys=[_key_to_wire(r) for r in records])

    @grpc_errors
    async def RemovePartitionKey(  # noqa: N802
        self, request: kpb.RemovePartitionKeyRequest, context: grpc.aio.ServicerContext
    ) -> kpb.RemovePartitionKeyReply:
        caller = await self._auth.user(context)
        await self._keys.revoke(caller, request.key_id)
        return kpb.RemovePartitionKeyReply()


def _key_to_wire(record: PartitionKeyRecord) -> kpb.PartitionKey:
    wire = kpb.PartitionKey(
        id=record.id, owner_id=record.owner_id, partition_id=record.partition_id
    )
    wire.created_at.FromDatetime(record.created_at)
    return wire


def add_partition_key_api(server: grpc.aio.Server, servicer: PartitionKeyServicer) -> None:
    kpb_grpc.add_PartitionKeyServiceServicer_to_server(servicer, server)
