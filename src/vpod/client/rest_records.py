"""The REST API's JSON (``/api/v1``) read into the same records the gRPC clients return.

One record per concept whatever the transport: a partition is a
:class:`~.records.Partition` whether it came over gRPC or REST. The REST
shapes spell enums the CLI's way (``dnc``, ``c2-compatible``, ``ACTIVE``,
``link-down``) and carry a few fields gRPC does not (a partition's operation
state and times, each IPU's agent); fields REST lacks read as empty or
``None``. ``raw`` keeps the JSON object.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from datetime import datetime
from typing import Any, TypeVar

from vpod.domain.partition_states import OperationState, ReadyState
from vpod.domain.routing import GwRouting, IpuLinkRouting, SyncType
from vpod.domain.topology import GwTopology, IldTopology

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
    LinkTest,
    PartitionInfo,
    User,
)
from .records import IpuAttributes, Partition, PartitionIpu, PartitionStatus

E = TypeVar("E", bound=enum.Enum)
Json = Mapping[str, Any]

_SYNC_BY_NAME = {s.cli_name: s for s in SyncType}


def _by_name(cls: type[E], text: str | None) -> E | None:
    """``ipu-link`` -> ``LinkTest.IPU_LINK``; unknown or empty -> None."""
    if not text:
        return None
    return cls.__members__.get(text.upper().replace("-", "_"))


def _time(text: str | None) -> datetime | None:
    return datetime.fromisoformat(text.replace("Z", "+00:00")) if text else None


def partition(data: Json) -> Partition:
    ipus = tuple(
        PartitionIpu(
            ipulink_domain_topology_id=ipu["ipulink_domain_topology_id"],
            ipulink_domain_routing_id=ipu["ipulink_domain_routing_id"],
            topology_id=ipu["topology_id"],
            routing_id=ipu["routing_id"],
            gcd=ipu.get("gcd"),
            agent_id=ipu.get("agent_id"),
            device_id=ipu.get("device_id"),
        )
        for ipu in data["ipus"]
    )
    return Partition(
        id=data["id"],
        cluster_id=data["cluster_id"],
        allocation_id=data["allocation_id"],
        ready_state=_by_name(ReadyState, data.get("ready_state")),
        ipus=ipus,
        num_gcds=data["num_gcds"],
        num_replicas=data["num_replicas"],
        num_ipulink_segments=data["num_ipulink_segments"],
        reconfigurable=data["reconfigurable"],
        ipulink_routing=_by_name(IpuLinkRouting, data.get("ipulink_routing_type")),
        gw_routing=_by_name(GwRouting, data.get("gw_routing_type")),
        sync_type=_SYNC_BY_NAME.get(data.get("sync_type") or ""),
        ipuof_server_version=data.get("ipuof_server_version", ""),
        raw=data,
        operation_state=_by_name(OperationState, data.get("operation_state")),
        disable_auto_reset=data.get("disable_auto_reset"),
        relocatable=data.get("relocatable"),
        created_at=_time(data.get("created_at")),
        updated_at=_time(data.get("updated_at")),
    )


def partition_status(data: Json) -> PartitionStatus:
    return PartitionStatus(
        partition_id=data["partition_id"],
        ready_state=_by_name(ReadyState, data.get("ready_state")),
        operation_state=_by_name(OperationState, data.get("operation_state")),
        errors=tuple(data.get("errors", ())),
        max_auto_reset_retries=data.get("max_auto_reset_retries", 0),
        auto_reset_retry_count=data.get("auto_reset_retry_count", 0),
        last_auto_reset_time=_time(data.get("last_auto_reset_time")),
        raw=data,
    )


def partition_info(data: Json) -> PartitionInfo:
    found = partition(data["partition"])
    locations = tuple(
        IpuLocation(ipu.agent_id or "", ipu.device_id or 0, ipu.routing_id)
        for ipu in sorted(found.ipus, key=lambda i: i.routing_id)
    )
    return PartitionInfo(found, partition_status(data["status"]), locations, raw=data)


def allocation(data: Json) -> Allocation:
    return Allocation(
        id=data["id"],
        cluster_id=data["cluster_id"],
        agent_ids=tuple(data["agent_ids"]),
        size=data["size"],
        user_ids=tuple(data.get("user_ids", ())),
        num_partitions=data.get("num_partitions", 0),
        raw=data,
        hosts=tuple(data.get("hosts", ())),
    )


def ipu_attributes(data: Json) -> IpuAttributes:
    ipus = {ipu["device_id"]: dict(ipu["attributes"]) for ipu in data["ipus"]}
    return IpuAttributes(agent=data["agent_id"], ipus=ipus, raw=data)


def fault(data: Json) -> Fault:
    return Fault(
        kind=_by_name(FaultKind, data["kind"]) or FaultKind.IPU,
        device_id=data.get("device_id") or 0,
        link_id=data.get("link_id") or "",
        delay_ms=data.get("delay_ms") or 0,
        reason=data.get("reason", ""),
    )


def fault_body(wanted: Fault) -> dict[str, Any]:
    """The JSON body that injects ``wanted``."""
    body: dict[str, Any] = {"kind": wanted.kind.name.lower().replace("_", "-")}
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
    return Agent(
        id=data["id"],
        host=data["host"],
        port=data["port"],
        machine_type=data.get("machine_type", ""),
        serial=data.get("serial", ""),
        ipuof_address="",
        cluster_id=data.get("cluster_id") or "",
        allocation_id=data.get("allocation_id") or "",
        state=AgentState.ONLINE if data.get("reachable") else AgentState.OFFLINE,
        state_detail=data.get("state_detail", ""),
        last_seen=_time(data.get("last_seen")),
        boot_id="",
        faults=tuple(fault(f) for f in data.get("faults", ())),
        raw=data,
    )


def agent_faults(data: Json) -> AgentFaults:
    faults = tuple(fault(f) for f in data["active_faults"])
    return AgentFaults(data["agent_id"], faults, raw=data)


def discovered(data: Json) -> DiscoveredAgent:
    return DiscoveredAgent(
        agent_id=data.get("agent_id", ""),
        host=data["host"],
        port=data["port"],
        machine_type=data.get("machine_type", ""),
        serial=data.get("serial", ""),
        known=data.get("known", False),
        added=data.get("added", False),
        error=data.get("error", ""),
        raw=data,
    )


def cluster(data: Json) -> Cluster:
    topology = str(data.get("topology") or "")
    gw = str(data.get("cluster_topology") or "")
    return Cluster(
        id=data["id"],
        agent_ids=tuple(data["agent_ids"]),
        num_ipulinkdomains=data["num_ipulinkdomains"],
        topology=IldTopology(topology) if topology in IldTopology._value2member_map_ else None,
        cluster_topology=GwTopology(gw) if gw in GwTopology._value2member_map_ else None,
        num_ipus=data["num_ipus"],
        machine_type=data.get("machine_type", ""),
        raw=data,
    )


def test_report(data: Json) -> ClusterTestReport:
    results = tuple(
        ClusterTestResult(
            test=_by_name(LinkTest, r["test"]),
            name=r["test"],
            passed=r["passed"],
            summary=r["summary"],
            details=tuple(r.get("details", ())),
            agents_tested=r.get("agents_tested", 0),
            agents_failed=r.get("agents_failed", 0),
        )
        for r in data["results"]
    )
    return ClusterTestReport(data["cluster_id"], data["passed"], results, raw=data)


def user(data: Json) -> User:
    return User(
        id=data["id"],
        allocation_ids=tuple(data.get("allocation_ids", ())),
        admin=data.get("admin", False),
        created_at=_time(data.get("created_at")),
        raw=data,
    )


def created_user(data: Json) -> CreatedUser:
    return CreatedUser(user(data["user"]), data["access_key"], raw=data)


def event(data: Json) -> AuditEvent:
    return AuditEvent(
        id=data["id"],
        time=_time(data.get("time")),
        actor=data["actor"],
        action=data["action"],
        target=data["target"],
        outcome=data["outcome"],
        source=data["source"],
        detail=data["detail"],
        raw=data,
    )
