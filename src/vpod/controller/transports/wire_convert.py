"""Between the wire's messages (virmgrpc) and the domain's values.

The domain's enums carry the wire numbers as values, so enum conversion is
by number; 0 (``*_UNDEFINED``) means "not given".
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from vpod.agent.errors import AgentError
from vpod.agent.model import LinkTestKind, LinkTestResult
from vpod.domain.entities import Cluster
from vpod.domain.partitions import PartitionRequirements
from vpod.domain.routing import GwRouting, IpuLinkRouting, SyncType
from vpod.store.records import PartitionRecord
from vpod.wire import admin_pb2 as apb
from vpod.wire import virmgrpc_pb2 as pb
from vpod.wire.field_copy import copy_fields

from .. import errors
from ..partition_views import placed_ipus


def _wire_enum(number: int) -> Any:
    """A domain enum number as the generated code's enum type (both are the wire numbers)."""
    return number


def _enum(kind: type[Any], number: int, what: str) -> Any:
    if number == 0:
        return None
    try:
        return kind(number)
    except ValueError:
        allowed = ", ".join(f"{m.name}={m.value}" for m in kind)
        raise errors.InvalidArgument(f"{what} {number} is not known: use {allowed}") from None


class ExplicitIpu(Protocol):
    """One IPU a user chose, as both the wire and the REST body carry it."""

    ipulink_domain_topology_id: int
    topology_id: int
    routing_id: int


def explicit_ipus(
    ipus: Sequence[ExplicitIpu], cluster_id: str | None
) -> tuple[tuple[int, int], ...] | None:
    """(domain, position) pairs in routing order, or None when the user chose none."""
    if not ipus:
        return None
    if not cluster_id:
        raise errors.InvalidArgument(
            "explicit IPUs need cluster_id: name the cluster the IPUs belong to"
        )
    ordered = sorted(ipus, key=lambda i: i.routing_id)
    if [i.routing_id for i in ordered] != list(range(len(ordered))):
        raise errors.InvalidArgument("explicit IPUs must have routing ids 0..n-1, each once")
    return tuple((i.ipulink_domain_topology_id, i.topology_id) for i in ordered)


def requirements_from_wire(req: pb.PartitionRequirements) -> PartitionRequirements:
    return copy_fields(
        PartitionRequirements,
        req,
        allocation_id=req.allocation_id or None,
        cluster_id=req.cluster_id or None,
        num_segments=req.num_ipulink_segments,
        routing=_enum(IpuLinkRouting, req.ipulink_routing_type, "IPU-Link routing type"),
        gw_routing=_enum(GwRouting, req.gw_routing_type, "GW routing type"),
        sync_type=_enum(SyncType, req.sync_type, "sync type"),
        ipus=explicit_ipus(req.ipus, req.cluster_id),
    )


def partition_to_wire(
    record: PartitionRecord, cluster: Cluster, ipuof_server_version: str
) -> pb.Partition:
    spec = record.spec
    ipus = [
        pb.PartitionIpu(
            ipulink_domain_topology_id=ref.domain,
            ipulink_domain_routing_id=ipu.segment,
            topology_id=ref.position,
            routing_id=ipu.routing_id,
        )
        for ipu, ref in placed_ipus(record, cluster)
    ]
    return pb.Partition(
        id=record.id,
        spec=pb.PartitionSpec(
            cluster_id=record.cluster_id,
            ipus=ipus,
            ipulink_routing_type=_wire_enum(spec.routing.value),
            sync_type=_wire_enum(spec.sync_type.value),
            num_gcds=spec.num_gcds,
            num_ipulink_segments=spec.num_segments,
            reconfigurable=spec.reconfigurable,
            gw_routing_type=_wire_enum(spec.gw_routing.value if spec.gw_routing else 0),
            num_replicas=spec.num_replicas,
            allocation_id=record.allocation_id,
        ),
        ready_state=_wire_enum(record.state.ready.value),
        ipuof_server_version=ipuof_server_version,
    )


def status_to_wire(record: PartitionRecord) -> pb.PartitionStatus:
    return copy_fields(
        pb.PartitionStatus,
        record,
        partition_id=record.id,
        ready_state=_wire_enum(record.state.ready.value),
        operation_state=_wire_enum(record.state.operation.value),
    )


_ROUTING_NUMBERS = {r.name: r.value for r in IpuLinkRouting}
_GW_NUMBERS = {r.name: r.value for r in GwRouting}
_SYNC_NUMBERS = {s.name: s.value for s in SyncType}


def ipuof_config_to_wire(config: dict[str, Any]) -> pb.PartitionConfig:
    gw = config["gw_routing_type"]
    return pb.PartitionConfig(
        ipulink_routing_type=_wire_enum(_ROUTING_NUMBERS[config["ipulink_routing_type"]]),
        sync_type=_wire_enum(_SYNC_NUMBERS[config["sync_type"]]),
        reconfigurable=config["reconfigurable"],
        gw_routing_type=_wire_enum(_GW_NUMBERS[gw] if gw else 0),
        num_ipulink_segments=config["num_ipulink_segments"],
        ipuof_server_version=config["ipuof_server_version"],
        gcd_configs=[
            pb.PartitionConfig.Gcd(
                devices=[pb.IpuofDevice(**device) for device in gcd["devices"]],
                attributes=gcd["attributes"],
            )
            for gcd in config["gcd_configs"]
        ],
    )


def cluster_test_reply(
    cluster_id: str,
    agent_ids: Sequence[str],
    done: Mapping[str, Sequence[LinkTestResult]],
    failed: Mapping[str, AgentError],
    kinds: Sequence[LinkTestKind] = (),
) -> apb.TestClusterReply:
    """Fold every agent's link-test results into one row per test, failures prefixed by agent."""
    reply = apb.TestClusterReply(cluster_id=cluster_id)
    for kind in kinds or tuple(LinkTestKind):
        row = apb.ClusterTestResult(
            test=_wire_enum(kind.value), name=kind.display_name, agents_tested=len(agent_ids)
        )
        bad = 0
        for agent_id in agent_ids:
            if agent_id in failed:
                bad += 1
                row.details.append(f"{agent_id}: no answer: {failed[agent_id].message}")
                continue
            for result in done.get(agent_id, ()):
                if result.test is kind and not result.passed:
                    bad += 1
                    row.details.extend(
                        line if line.startswith(f"{agent_id}:") else f"{agent_id}: {line}"
                        for line in (result.details or (result.summary,))
                    )
        row.agents_failed = bad
        row.passed = bad == 0
        row.summary = (
            f"passed on {len(agent_ids)} agent(s)"
            if row.passed
            else f"failed on {bad} of {len(agent_ids)} agent(s)"
        )
        reply.results.append(row)
    reply.passed = all(r.passed for r in reply.results)
    return reply


def attributes_to_wire(
    attributes: Mapping[str, Mapping[int, Mapping[str, str]]],
) -> pb.ListIPUAttributesReply:
    """IPU attributes by agent and device id, as the user and admin APIs both answer them."""
    reply = pb.ListIPUAttributesReply()
    for agent_id, ipus in attributes.items():
        entry = reply.entries.add(agent=agent_id)
        for device_id, values in ipus.items():
            entry.ipu_attributes[device_id].attributes.update(values)
    return reply
