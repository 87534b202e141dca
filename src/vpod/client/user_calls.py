"""The user API's calls, described once: request building and reply reading.

Each function returns an :class:`~.grpc_transport.Rpc`; :mod:`.user` runs
them on a blocking or an asyncio transport. Nothing here does I/O.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, TypedDict, Unpack

from vpod.domain.partition_states import ReadyState
from vpod.domain.routing import GwRouting, IpuLinkRouting, SyncType
from vpod.wire import virmgrpc_pb2 as pb

from .api_methods import Procedure
from .errors import FailedPrecondition, NotFound
from .grpc_transport import Rpc, Service, nothing
from .records import IpuAttributes, IpuofConfig, Partition, PartitionStatus
from .wire_values import whole

if TYPE_CHECKING:
    from .admin_records import Allocation

USER_SERVICE = Service(pb.DESCRIPTOR.services_by_name["UserService"])
VERSION_SERVICE = Service(pb.DESCRIPTOR.services_by_name["VersionService"])
WAIT_TIMEOUT_S = 120.0
POLL_S = 0.2


class PartitionOptions(TypedDict, total=False):
    """What a partition may ask for beyond its id and size; unset = the controller's default."""

    allocation: str
    cluster: str
    """Deprecated by V-IPU: name the allocation instead."""
    num_gcds: int
    num_replicas: int
    reconfigurable: bool
    sync_type: SyncType
    routing: IpuLinkRouting
    gw_routing: GwRouting
    num_ilds: int
    """IPU-Link domains (segments) to span."""
    disable_auto_reset: bool
    relocatable: bool


def version() -> Rpc[str]:
    return VERSION_SERVICE.call("GetVersion", pb.VersionRequest(), lambda reply: str(reply.version))


def list_partitions(allocation: str | None = None) -> Rpc[list[Partition]]:
    """The partitions the caller may see (of one allocation when given)."""
    return USER_SERVICE.call(
        "ListPartitions",
        pb.ListPartitionsRequest(allocation_id=allocation or ""),
        lambda reply: [Partition.from_wire(p) for p in reply.partitions],
    )


def pick_partition(partitions: Iterable[Partition], partition_id: str) -> Partition:
    """The partition ``partition_id`` of a listing, or `NotFound`."""
    for partition in partitions:
        if partition.id == partition_id:
            return partition
    raise NotFound(f"partition {partition_id} is not in the list of partitions you may see")


def get_partition(partition_id: str) -> Procedure[Partition]:
    """One partition; `NotFound` when the caller may not see it."""
    partitions = yield list_partitions()
    return pick_partition(partitions, partition_id)


def create_partition(partition_id: str, size: int, **options: Unpack[PartitionOptions]) -> Rpc[str]:
    """Create a partition of ``size`` IPUs; returns its id once it is ACTIVE or refused."""
    sync_type = options.get("sync_type")
    routing = options.get("routing")
    gw_routing = options.get("gw_routing")
    requirements = pb.PartitionRequirements(
        id=partition_id,
        size=whole(size, "size"),
        cluster_id=options.get("cluster") or "",
        allocation_id=options.get("allocation") or "",
        num_gcds=whole(options.get("num_gcds") or 0, "num_gcds"),
        num_replicas=whole(options.get("num_replicas") or 0, "num_replicas"),
        reconfigurable=options.get("reconfigurable", False),
        num_ipulink_segments=whole(options.get("num_ilds") or 0, "num_ilds"),
        sync_type=pb.SyncType.ValueType(sync_type.value if sync_type else 0),
        ipulink_routing_type=pb.IpuLinkRoutingType.ValueType(routing.value if routing else 0),
        gw_routing_type=pb.GatewayRoutingType.ValueType(gw_routing.value if gw_routing else 0),
    )
    request = pb.CreatePartitionRequest(
        requirements=requirements,
        disable_auto_reset=options.get("disable_auto_reset", False),
        relocatable=options.get("relocatable", False),
    )
    return USER_SERVICE.call(
        "CreatePartition", request, lambda reply: str(reply.partition_id or partition_id)
    )


def remove_partition(partition_id: str, *, force: bool = False) -> Rpc[None]:
    return USER_SERVICE.call(
        "RemovePartition",
        pb.RemovePartitionRequest(partition_id=partition_id, force=force),
        nothing,
    )


def reset_partition(partition_id: str, *, relocatable: bool = False) -> Rpc[None]:
    return USER_SERVICE.call(
        "ResetPartition",
        pb.ResetPartitionRequest(partition_id=partition_id, relocatable=relocatable),
        nothing,
    )


def partition_status(partition_id: str) -> Rpc[PartitionStatus]:
    return USER_SERVICE.call(
        "GetPartitionStatus",
        pb.GetPartitionStatusRequest(partition_id=partition_id),
        lambda reply: PartitionStatus.from_wire(reply.status),
    )


def ipuof_config(partition_id: str, gcd: int | None = None) -> Rpc[IpuofConfig]:
    """The IPUoF config of every GCD of the partition, or of GCD ``gcd`` only."""
    request = pb.GetPartitionIpuofConfigRequest(partition_id=partition_id)
    if gcd is not None:
        request.gcd_id.id = whole(gcd, "gcd")
    return USER_SERVICE.call(
        "GetPartitionIpuofConfig", request, lambda reply: IpuofConfig.from_wire(reply.ipuof_config)
    )


def list_ipu_attributes(agents: Sequence[str] = ()) -> Rpc[list[IpuAttributes]]:
    return USER_SERVICE.call(
        "ListIPUAttributes",
        pb.ListIPUAttributesRequest(agents=list(agents)),
        lambda reply: [IpuAttributes.from_wire(e) for e in reply.entries],
    )


def list_allocations(cluster: str | None = None) -> Rpc[list[Allocation]]:
    """The allocations granted to the caller (every one, for an administrator): the admin
    service's listing, served on the user endpoint too. The admin API's messages load on
    this call's first use: no other user call needs them (a ``vipu`` command starts a
    quarter faster without them)."""
    from . import admin_calls

    return admin_calls.list_allocations(cluster)


def settled(status: PartitionStatus, partition_id: str) -> bool:
    """Whether a waited-on partition is ACTIVE; `FailedPrecondition` when it is in ERROR."""
    if status.ready_state is ReadyState.ERROR:
        reasons = "; ".join(status.errors) or "no reason given"
        raise FailedPrecondition(f"partition {partition_id} is in ERROR: {reasons}")
    return status.ready_state is ReadyState.ACTIVE


def not_active(partition_id: str, timeout: float, status: PartitionStatus | None) -> str:
    state = status.ready_state.name if status and status.ready_state else "unknown"
    return f"partition {partition_id} is not ACTIVE after {timeout:g} s (it is {state})"
