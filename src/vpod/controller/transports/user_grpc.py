"""The V-IPU user API on the wire: ``virmgrpc.VersionService`` and ``virmgrpc.UserService``.

Each handler gets its caller authenticated (:mod:`.grpc_handlers`), parses
the request, calls one use-case and renders the reply; errors become status
codes in :mod:`.grpc_errors`.
"""

from __future__ import annotations

from dataclasses import dataclass

import grpc

from vpod.wire import virmgrpc_pb2 as pb
from vpod.wire import virmgrpc_pb2_grpc as pb_grpc

from ..caller import Caller
from ..listings import Listings
from ..partition_views import PartitionViews
from ..partitions import PartitionService
from ..settings import Settings
from .auth import GrpcAuthenticator
from .grpc_errors import grpc_errors
from .grpc_handlers import as_user
from .wire_convert import (
    attributes_to_wire,
    ipuof_config_to_wire,
    partition_to_wire,
    requirements_from_wire,
    status_to_wire,
)


@dataclass(eq=False)
class VersionServicer(pb_grpc.VersionServiceServicer):
    """``virmgrpc.VersionService``: open to every caller, credentials or not."""

    settings: Settings

    @grpc_errors
    async def GetVersion(  # noqa: N802 - the wire's name
        self, request: pb.VersionRequest, context: grpc.aio.ServicerContext
    ) -> pb.VersionReply:
        return pb.VersionReply(version=self.settings.api_version)


@dataclass(eq=False)
class UserServicer(pb_grpc.UserServiceServicer):
    """``virmgrpc.UserService``: each method calls one use-case."""

    settings: Settings
    partitions: PartitionService
    views: PartitionViews
    listings: Listings
    auth: GrpcAuthenticator

    @as_user
    async def ListPartitions(  # noqa: N802
        self, request: pb.ListPartitionsRequest, caller: Caller
    ) -> pb.ListPartitionsReply:
        rows = await self.listings.partitions(caller, allocation_id=request.allocation_id or None)
        version = self.settings.ipuof_server_version
        return pb.ListPartitionsReply(
            partitions=[partition_to_wire(row.record, row.cluster, version) for row in rows]
        )

    @as_user
    async def ListIPUAttributes(  # noqa: N802
        self, request: pb.ListIPUAttributesRequest, caller: Caller
    ) -> pb.ListIPUAttributesReply:
        attributes = await self.views.ipu_attributes(caller, request.agents)
        return attributes_to_wire(attributes)

    @as_user
    async def CreatePartition(  # noqa: N802
        self, request: pb.CreatePartitionRequest, caller: Caller
    ) -> pb.CreatePartitionReply:
        record = await self.partitions.create(
            caller,
            requirements_from_wire(request.requirements),
            disable_auto_reset=request.disable_auto_reset,
            relocatable=request.relocatable,
        )
        return pb.CreatePartitionReply(partition_id=record.id)

    @as_user
    async def RemovePartition(  # noqa: N802
        self, request: pb.RemovePartitionRequest, caller: Caller
    ) -> pb.RemovePartitionReply:
        await self.partitions.remove(caller, request.partition_id, force=request.force)
        return pb.RemovePartitionReply()

    @as_user
    async def ResetPartition(  # noqa: N802
        self, request: pb.ResetPartitionRequest, caller: Caller
    ) -> pb.ResetPartitionReply:
        await self.partitions.reset(caller, request.partition_id, relocatable=request.relocatable)
        return pb.ResetPartitionReply()

    @as_user
    async def GetPartitionIpuofConfig(  # noqa: N802
        self, request: pb.GetPartitionIpuofConfigRequest, caller: Caller
    ) -> pb.GetPartitionIpuofConfigReply:
        record = await self.partitions.get(caller, request.partition_id)
        gcd = request.gcd_id.id if request.HasField("gcd_id") else None
        config = await self.views.ipuof_config(record, gcd)
        return pb.GetPartitionIpuofConfigReply(ipuof_config=ipuof_config_to_wire(config))

    @as_user
    async def GetPartitionStatus(  # noqa: N802
        self, request: pb.GetPartitionStatusRequest, caller: Caller
    ) -> pb.GetPartitionStatusReply:
        record = await self.partitions.get(caller, request.partition_id)
        return pb.GetPartitionStatusReply(status=status_to_wire(await self.views.status(record)))


def add_version_api(server: grpc.aio.Server, settings: Settings) -> None:
    """``GetVersion`` alone: the admin endpoint serves it too (``vipu-admin --server-version``)."""
    pb_grpc.add_VersionServiceServicer_to_server(VersionServicer(settings), server)


def add_user_api(server: grpc.aio.Server, settings: Settings, servicer: UserServicer) -> None:
    """The user API and ``GetVersion`` on ``server``."""
    add_version_api(server, settings)
    pb_grpc.add_UserServiceServicer_to_server(servicer, server)
