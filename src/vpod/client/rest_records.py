"""The REST API's JSON (``/api/v1``) read into the same records the gRPC clients return.

One record per concept whatever the transport: a partition is a
:class:`~.records.Partition` whether it came over gRPC or REST. The JSON is
read with the shapes the controller answers with (:mod:`vpod.wire.rest`,
defined once), then turned into the record: the REST shapes spell enums the
CLI's way (``dnc``, ``c2-compatible``, ``ACTIVE``, ``link-down``) and carry a
few fields gRPC does not (a partition's operation state and times, each
IPU's agent); fields REST lacks read as empty or ``None``. ``raw`` keeps the
JSON object.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from vpod.domain.routing import GwRouting, IpuLinkRouting, SyncType
from vpod.domain.topology import GwTopology, IldTopology
from vpod.wire.rest import agents as agent_shapes
from vpod.wire.rest import allocations as allocation_shapes
from vpod.wire.rest import clusters as cluster_shapes
from vpod.wire.rest import events as event_shapes
from vpod.wire.rest import ipu_attributes as attribute_shapes
from vpod.wire.rest import partitions as partition_shapes
from vpod.wire.rest import users as user_shapes
from vpod.wire.rest.fields import kebab

from .admin_records import (
    Agent,
    AgentFaults,
    AgentState,
    Allocation,
    AuditEvent,
    Cluster,
    ClusterTestReport,
    ClusterTestResult,
    CreatedUser,
    DiscoveredAgent,
    Fault,
    FaultKind,
    IpuLocation,
    PartitionInfo,
    User,
)
from .errors import ServerError
from .records import (
    IpuAttributes,
    Partition,
    PartitionIpu,
    PartitionStatus,
    copy_fields,
    enum_by_name,
)

E = TypeVar("E", bound=enum.Enum)
S = TypeVar("S", bound=BaseModel)
Json = Mapping[str, Any]

_SYNC_BY_NAME = {s.cli_name: s for s in SyncType}


def _read(shape: type[S], data: Json) -> S:
    """``data`` as the controller's shape; a reply that is not one is the server's fault."""
    try:
        return shape.model_validate(data)
    except ValidationError as exc:
        raise ServerError(f"the API answered no {shape.__name__}: {exc}") from None


def partition(data: Json) -> Partition:
    return _partition(_read(partition_shapes.Partition, data), data)


def _partition(found: partition_shapes.Partition, data: Json) -> Partition:
    return copy_fields(
        Partition,
        found,
        ipus=tuple(copy_fields(PartitionIpu, ipu) for ipu in found.ipus),
        ipulink_routing=enum_by_name(IpuLinkRouting, found.ipulink_routing_type),
        gw_routing=enum_by_name(GwRouting, found.gw_routing_type),
        sync_type=_SYNC_BY_NAME.get(found.sync_type),
        raw=data,
    )


def partition_status(data: Json) -> PartitionStatus:
    return _status(_read(partition_shapes.PartitionStatus, data), data)


def _status(found: partition_shapes.PartitionStatus, data: Json) -> PartitionStatus:
    return copy_fields(PartitionStatus, found, raw=data)


def partition_info(data: Json) -> PartitionInfo:
    both = _read(partition_shapes.PartitionWithStatus, data)
    found = _partition(both.partition, data["partition"])
    locations = tuple(
        IpuLocation(ipu.agent_id or "", ipu.device_id or 0, ipu.routing_id)
        for ipu in sorted(found.ipus, key=lambda i: i.routing_id)
    )
    return PartitionInfo(found, _status(both.status, data["status"]), locations, raw=data)


def allocation(data: Json) -> Allocation:
    return copy_fields(Allocation, _read(allocation_shapes.AllocationOut, data), raw=data)


def ipu_attributes(data: Json) -> IpuAttributes:
    found = _read(attribute_shapes.AgentIpuAttributes, data)
    ipus = {ipu.device_id: dict(ipu.attributes) for ipu in found.ipus}
    return IpuAttributes(agent=found.agent_id, ipus=ipus, raw=data)


def _fault(found: agent_shapes.FaultOut) -> Fault:
    return copy_fields(
        Fault,
        found,
        kind=enum_by_name(FaultKind, found.kind) or FaultKind.IPU,
        device_id=found.device_id or 0,
        link_id=found.link_id or "",
    )


def fault_body(wanted: Fault) -> dict[str, Any]:
    """The JSON body (:class:`vpod.wire.rest.agents.FaultBody`) that injects ``wanted``; the
    controller checks it."""
    body: dict[str, Any] = {"kind": kebab(wanted.kind.name)}
    if wanted.kind is FaultKind.IPU:
        body["device_id"] = wanted.device_id
    if wanted.kind is FaultKind.LINK_DOWN:
        body["link_id"] = wanted.link_id
    if wanted.kind is FaultKind.AGENT_SLOW:
        body["delay_ms"] = wanted.delay_ms
    if wanted.reason:
        body["reason"] = wanted.reason
    return body


def agent(data: Json) -> Agent:
    found = _read(agent_shapes.AgentOut, data)
    return copy_fields(
        Agent,
        found,
        ipuof_address="",
        cluster_id=found.cluster_id or "",
        allocation_id=found.allocation_id or "",
        state=AgentState.ONLINE if found.reachable else AgentState.OFFLINE,
        boot_id="",
        faults=tuple(_fault(f) for f in found.faults),
        raw=data,
    )


def agent_faults(data: Json) -> AgentFaults:
    found = _read(agent_shapes.AgentFaults, data)
    return AgentFaults(found.agent_id, tuple(_fault(f) for f in found.active_faults), raw=data)


def discovered(data: Json) -> DiscoveredAgent:
    return copy_fields(DiscoveredAgent, _read(agent_shapes.DiscoveredAgent, data), raw=data)


def cluster(data: Json) -> Cluster:
    found = _read(cluster_shapes.ClusterOut, data)
    topology, gw = found.topology, found.cluster_topology
    return copy_fields(
        Cluster,
        found,
        topology=IldTopology(topology) if topology in IldTopology._value2member_map_ else None,
        cluster_topology=GwTopology(gw) if gw in GwTopology._value2member_map_ else None,
        raw=data,
    )


def test_report(data: Json) -> ClusterTestReport:
    found = _read(cluster_shapes.ClusterTestReport, data)
    results = tuple(copy_fields(ClusterTestResult, r, name=r.test) for r in found.results)
    return copy_fields(ClusterTestReport, found, results=results, raw=data)


def user(data: Json) -> User:
    return copy_fields(User, _read(user_shapes.UserOut, data), created_at=None, raw=data)


def created_user(data: Json) -> CreatedUser:
    found = _read(user_shapes.CreatedUser, data)
    return CreatedUser(user(data["user"]), found.access_key, raw=data)


def event(data: Json) -> AuditEvent:
    return copy_fields(AuditEvent, _read(event_shapes.EventOut, data), raw=data)
