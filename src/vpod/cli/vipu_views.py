"""How user-API replies look on the command line: partition rows, details, IPUoF files.

Pure functions from wire messages (the ``raw`` of :mod:`vpod.client`'s
records) to table rows, ``Key: value`` pairs or plain data; both CLIs use
them (``vipu-admin list partitions`` shows the same first eight columns as
``vipu list partitions``).
"""

from __future__ import annotations

from collections.abc import Sequence

from vpod.client import IpuAttributes
from vpod.domain.naming import natural_key
from vpod.domain.routing import SyncType
from vpod.wire import virmgrpc_pb2 as pb

from .render import EMPTY_CELL, enum_label, timestamp_text

PARTITION_HEADERS: tuple[str, ...] = (
    "Partition",
    "Cluster",
    "ILDs",
    "GW Routing",
    "ILD Routing",
    "Size",
    "GCDs",
    "State",
)
"""``vipu list partitions`` (vipu-system.md §6): scripts parse these, keep them as they are."""

IPU_ATTRIBUTE_HEADERS: tuple[str, ...] = ("Agent", "IPU", "Attribute", "Value")
ALLOCATION_HEADERS: tuple[str, ...] = ("Allocation ID", "Agents")


def routing_label(value: pb.IpuLinkRoutingType.ValueType) -> str:
    return enum_label(pb.IpuLinkRoutingType.Name(value), "IRT_")


def gw_routing_label(value: pb.GatewayRoutingType.ValueType) -> str:
    return enum_label(pb.GatewayRoutingType.Name(value), "GRT_")


def ready_label(value: pb.PartitionReadyState.ValueType) -> str:
    return enum_label(pb.PartitionReadyState.Name(value), "PS_")


def operation_label(value: pb.PartitionOperationState.ValueType) -> str:
    return enum_label(pb.PartitionOperationState.Name(value), "POS_")


def sync_label(value: int) -> str:
    """The CLI spelling (``c2-compatible``), as ``--sync-type`` takes it."""
    try:
        return SyncType(value).cli_name
    except ValueError:
        return EMPTY_CELL


def num_ilds(spec: pb.PartitionSpec) -> int:
    """How many IPU-Link domains the partition uses."""
    domains = {ipu.ipulink_domain_topology_id for ipu in spec.ipus}
    return max(len(domains), spec.num_ipulink_segments, 1)


def partition_row(partition: pb.Partition) -> list[object]:
    spec = partition.spec
    return [
        partition.id,
        spec.cluster_id,
        num_ilds(spec),
        gw_routing_label(spec.gw_routing_type),
        routing_label(spec.ipulink_routing_type),
        len(spec.ipus) or EMPTY_CELL,
        spec.num_gcds or 1,
        ready_label(partition.ready_state),
    ]


def status_pairs(status: pb.PartitionStatus) -> list[tuple[str, object]]:
    retries = f"{status.auto_reset_retry_count} of {status.max_auto_reset_retries}"
    return [
        ("State", ready_label(status.ready_state)),
        ("Operation", operation_label(status.operation_state)),
        ("Auto-reset retries", retries),
        ("Last auto-reset", timestamp_text(status.last_auto_reset_time)),
        ("Errors", "; ".join(status.errors) or EMPTY_CELL),
    ]


def partition_pairs(
    partition: pb.Partition, status: pb.PartitionStatus | None
) -> list[tuple[str, object]]:
    """``vipu get partition ID``: the spec, then the status."""
    spec = partition.spec
    pairs: list[tuple[str, object]] = [
        ("Partition", partition.id),
        ("Cluster", spec.cluster_id),
        ("Allocation", spec.allocation_id),
        ("Size", len(spec.ipus)),
        ("GCDs", spec.num_gcds or 1),
        ("Replicas", spec.num_replicas or spec.num_gcds or 1),
        ("ILDs", num_ilds(spec)),
        ("ILD Routing", routing_label(spec.ipulink_routing_type)),
        ("GW Routing", gw_routing_label(spec.gw_routing_type)),
        ("Sync Type", sync_label(spec.sync_type)),
        ("Reconfigurable", spec.reconfigurable),
        ("IPUoF server", partition.ipuof_server_version),
    ]
    if status is None:
        pairs.append(("State", ready_label(partition.ready_state)))
    else:
        pairs += status_pairs(status)
    return pairs


IPU_HEADERS: tuple[str, ...] = ("Routing ID", "ILD", "ILD Routing ID", "Topology ID")


def ipu_rows(spec: pb.PartitionSpec) -> list[list[object]]:
    """One row per IPU of the partition, in routing order."""
    ordered = sorted(spec.ipus, key=lambda ipu: ipu.routing_id)
    return [
        [
            ipu.routing_id,
            ipu.ipulink_domain_topology_id,
            ipu.ipulink_domain_routing_id,
            ipu.topology_id,
        ]
        for ipu in ordered
    ]


def attributes_reply(entries: Sequence[IpuAttributes]) -> pb.ListIPUAttributesReply:
    """The wire reply of an attribute listing, as ``--json`` prints it."""
    return pb.ListIPUAttributesReply(entries=[entry.raw for entry in entries])


def ipu_attribute_rows(entries: Sequence[IpuAttributes]) -> list[list[object]]:
    """One row per attribute: agents, IPUs and attribute names in sorted order."""
    rows: list[list[object]] = []
    for entry in sorted(entries, key=lambda e: natural_key(e.agent)):
        for ipu in sorted(entry.ipus):
            attributes = entry.ipus[ipu]
            rows += [[entry.agent, ipu, name, attributes[name]] for name in sorted(attributes)]
    return rows
