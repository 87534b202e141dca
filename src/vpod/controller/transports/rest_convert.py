"""Between the service layer's values and the HTTP API's bodies (:mod:`.rest_models`).

The HTTP twin of :mod:`.wire_convert`: pure functions, no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from vpod.agent.model import Fault, FaultKind, LinkTestKind
from vpod.domain.entities import Cluster
from vpod.domain.ipuof import ipuof_conf_file
from vpod.domain.naming import natural_key
from vpod.domain.partitions import PartitionRequirements
from vpod.store.records import PartitionRecord
from vpod.wire.field_copy import copy_fields
from vpod.wire.rest.agents import FaultBody, FaultOut
from vpod.wire.rest.allocations import AllocationList, AllocationOut
from vpod.wire.rest.fields import kebab
from vpod.wire.rest.ipu_attributes import AgentIpuAttributes, IpuAttributeList, IpuAttributesOut
from vpod.wire.rest.ipuof import IpuofConfigFile, IpuofConfigSet
from vpod.wire.rest.partitions import (
    CreatePartitionBody,
    Partition,
    PartitionIpuOut,
    PartitionStatus,
)

from ..listings import AllocationRow, PartitionRow
from ..partition_views import placed_ipus
from .wire_convert import explicit_ipus


def requirements_of(body: CreatePartitionBody) -> PartitionRequirements:
    """The domain's request from the JSON body (mirrors ``wire_convert.requirements_from_wire``)."""
    return copy_fields(
        PartitionRequirements,
        body,
        num_segments=body.num_ipulink_segments,
        routing=body.ipulink_routing_type,
        gw_routing=body.gw_routing_type,
        ipus=explicit_ipus(body.ipus or [], body.cluster_id),
    )


def partition_out(
    record: PartitionRecord, cluster: Cluster, ipuof_server_version: str
) -> Partition:
    spec = record.spec
    ipus = [
        copy_fields(
            PartitionIpuOut,
            ipu,
            ipulink_domain_topology_id=ref.domain,
            ipulink_domain_routing_id=ipu.segment,
            topology_id=ref.position,
            agent_id=cluster.agent_of(ref.machine),
            device_id=ref.device_id,
        )
        for ipu, ref in placed_ipus(record, cluster)
    ]
    return copy_fields(
        Partition,
        record,
        size=spec.size,
        num_ipulink_segments=spec.num_segments,
        num_gcds=spec.num_gcds,
        num_replicas=spec.num_replicas,
        reconfigurable=spec.reconfigurable,
        ipulink_routing_type=spec.routing.cli_name,
        gw_routing_type=spec.gw_routing.cli_name if spec.gw_routing else None,
        sync_type=spec.sync_type.cli_name,
        ready_state=record.state.ready.name,
        operation_state=record.state.operation.name,
        ipuof_server_version=ipuof_server_version,
        ipus=ipus,
    )


def partitions_out(rows: Iterable[PartitionRow], ipuof_server_version: str) -> list[Partition]:
    return [partition_out(r.record, r.cluster, ipuof_server_version) for r in rows]


def status_out(record: PartitionRecord) -> PartitionStatus:
    return copy_fields(
        PartitionStatus,
        record,
        partition_id=record.id,
        ready_state=record.state.ready.name,
        operation_state=record.state.operation.name,
    )


def ipuof_files(partition_id: str, config: Mapping[str, Any]) -> dict[str, IpuofConfigFile]:
    """The static config file of each GCD in a ``PartitionConfig`` (vipu-system.md §5)."""
    files: dict[str, IpuofConfigFile] = {}
    for gcd in config["gcd_configs"]:
        name, content = ipuof_conf_file(partition_id, gcd)
        files[name] = IpuofConfigFile.model_validate(content)
    return files


def ipuof_set(partition_id: str, config: Mapping[str, Any]) -> IpuofConfigSet:
    return IpuofConfigSet(
        partition_id=partition_id,
        ipuof_server_version=config["ipuof_server_version"],
        files=ipuof_files(partition_id, config),
    )


def allocation_out(row: AllocationRow) -> AllocationOut:
    return AllocationOut(
        id=row.allocation.id,
        cluster_id=row.allocation.cluster_id,
        agent_ids=list(row.allocation.agent_ids(row.cluster)) if row.cluster else [],
        size=row.allocation.size,
        user_ids=list(row.user_ids),
        num_partitions=row.num_partitions,
        hosts=list(row.allocation.hosts),
    )


def allocations_out(rows: Iterable[AllocationRow]) -> AllocationList:
    """A listing's reply (the user's and the admin's ``GET .../allocations``)."""
    return AllocationList(allocations=[allocation_out(row) for row in rows])


def attributes_out(attributes: Mapping[str, Mapping[int, Mapping[str, str]]]) -> IpuAttributeList:
    """The reply of ``GET .../ipu-attributes`` (as ``wire_convert.attributes_to_wire`` is
    the gRPC one): agents in natural order, each agent's IPUs by device id."""
    return IpuAttributeList(
        agents=[
            AgentIpuAttributes(
                agent_id=agent_id,
                ipus=[
                    IpuAttributesOut(device_id=device_id, attributes=dict(values))
                    for device_id, values in sorted(ipus.items())
                ],
            )
            for agent_id, ipus in sorted(attributes.items(), key=lambda item: natural_key(item[0]))
        ]
    )


def link_test_kind(name: str) -> LinkTestKind:
    return next(k for k in LinkTestKind if kebab(k.name) == name)


def fault_kind(name: str) -> FaultKind:
    return next(k for k in FaultKind if kebab(k.name) == name)


def fault_of(body: FaultBody) -> Fault:
    return Fault.of_kind(
        fault_kind(body.kind),
        device_id=body.device_id,
        link_id=body.link_id,
        delay_s=body.delay_ms / 1000,
        reason=body.reason,
    )


def fault_out(fault: Fault) -> FaultOut:
    return FaultOut(
        kind=kebab(fault.kind.name),
        device_id=fault.device_id,
        link_id=fault.link_id,
        delay_ms=round(fault.delay_s * 1000),
        reason=fault.reason,
        description=fault.describe(),
    )
