"""Translation between the agent's values (:mod:`vpod.agent.model`) and ``vpod.agent.v1``.

Both directions live here so the service and the client cannot drift apart.
Enum numbers are the wire numbers; the wire's 0 (``*_UNDEFINED`` /
``*_UNSPECIFIED``) is ``None`` in the model. ``*_from_wire`` raises
:class:`~vpod.agent.errors.InvalidRequest` for values the model cannot hold
(an enum number this version does not know).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import TypeVar

from google.protobuf.timestamp_pb2 import Timestamp

from vpod.domain.catalog import machine_spec
from vpod.domain.excerpts import excerpt
from vpod.domain.routing import GwRouting, IpuLinkRouting, SyncType
from vpod.wire import agent_pb2 as pb
from vpod.wire import virmgrpc_pb2 as vpb
from vpod.wire.field_copy import copy_fields

from .errors import InvalidRequest
from .model import (
    AgentEvent,
    ConfiguredPartition,
    ConfigureOutcome,
    EventBatch,
    EventKind,
    Fault,
    FaultKind,
    Holder,
    IpuAssignment,
    IpuHealth,
    IpuIdentity,
    IpuTelemetry,
    LinkHealth,
    LinkKind,
    LinkTestKind,
    LinkTestResult,
    MachineHealth,
    MachineIdentity,
    PartitionConfig,
)

E = TypeVar("E")


def _enum(kind: Callable[[int], E], number: int, what: str) -> E | None:
    if number == 0:
        return None
    try:
        return kind(number)
    except ValueError:
        raise InvalidRequest(f"{what} {number} is not known to this agent") from None


def _required_enum(kind: Callable[[int], E], number: int, what: str) -> E:
    value = _enum(kind, number, what)
    if value is None:
        raise InvalidRequest(f"{what} is not set")
    return value


def _number(value: object | None) -> int:
    return 0 if value is None else int(getattr(value, "value", 0))


def timestamp(seconds: float) -> Timestamp:
    stamp = Timestamp()
    stamp.FromNanoseconds(round(seconds * 1e9))
    return stamp


def seconds(stamp: Timestamp) -> float:
    return float(stamp.ToNanoseconds()) / 1e9


# -------------------------------------------------------------------- identity


def identity_to_wire(ident: MachineIdentity) -> pb.Identity:
    return copy_fields(
        pb.Identity,
        ident,
        machine_type=ident.machine_type.value,
        ipus=[copy_fields(pb.IpuIdentity, i) for i in ident.ipus],
    )


def identity_from_wire(msg: pb.Identity) -> MachineIdentity:
    try:
        machine_type = machine_spec(msg.machine_type).machine_type
    except ValueError as exc:
        raise InvalidRequest(str(exc)) from None
    return copy_fields(
        MachineIdentity,
        msg,
        machine_type=machine_type,
        ipus=tuple(copy_fields(IpuIdentity, i) for i in msg.ipus),
    )


def attributes_to_wire(
    agent_id: str, attrs: dict[int, dict[str, str]]
) -> pb.ListIpuAttributesReply:
    reply = pb.ListIpuAttributesReply(agent_id=agent_id)
    for device_id, values in attrs.items():
        reply.ipus[device_id].attributes.update(values)
    return reply


def attributes_from_wire(msg: pb.ListIpuAttributesReply) -> dict[int, dict[str, str]]:
    return {device_id: dict(entry.attributes) for device_id, entry in sorted(msg.ipus.items())}


# --------------------------------------------------------------- configuration


def config_to_wire(config: PartitionConfig) -> pb.PartitionConfiguration:
    return copy_fields(
        pb.PartitionConfiguration,
        config,
        ipus=[
            copy_fields(pb.IpuAssignment, i, ipulink_segment_id=i.segment_id) for i in config.ipus
        ],
        ipulink_routing_type=vpb.IpuLinkRoutingType.ValueType(_number(config.ipulink_routing)),
        sync_type=vpb.SyncType.ValueType(_number(config.sync_type)),
        gw_routing_type=vpb.GatewayRoutingType.ValueType(_number(config.gw_routing)),
    )


def config_from_wire(msg: pb.PartitionConfiguration) -> PartitionConfig:
    return copy_fields(
        PartitionConfig,
        msg,
        ipus=tuple(
            copy_fields(IpuAssignment, i, segment_id=i.ipulink_segment_id) for i in msg.ipus
        ),
        ipulink_routing=_enum(IpuLinkRouting, msg.ipulink_routing_type, "IPU-Link routing type"),
        sync_type=_enum(SyncType, msg.sync_type, "sync type"),
        gw_routing=_enum(GwRouting, msg.gw_routing_type, "GW routing type"),
    )


def configured_to_wire(held: ConfiguredPartition) -> pb.ConfiguredPartition:
    return copy_fields(
        pb.ConfiguredPartition,
        held,
        config=config_to_wire(held.config),
        configured_at=timestamp(held.configured_at),
    )


def configured_from_wire(msg: pb.ConfiguredPartition) -> ConfiguredPartition:
    return copy_fields(
        ConfiguredPartition,
        msg,
        config=config_from_wire(msg.config),
        attached_device_ids=tuple(msg.attached_device_ids),
        configured_at=seconds(msg.configured_at),
        allowed_hosts=tuple(msg.allowed_hosts),
    )


def outcome_to_wire(outcome: ConfigureOutcome) -> pb.ConfigurePartitionReply:
    return pb.ConfigurePartitionReply(
        partition=configured_to_wire(outcome.partition), changed=outcome.changed
    )


def outcome_from_wire(msg: pb.ConfigurePartitionReply) -> ConfigureOutcome:
    return ConfigureOutcome(partition=configured_from_wire(msg.partition), changed=msg.changed)


# ---------------------------------------------------------------------- faults


def fault_to_wire(fault: Fault) -> pb.Fault:
    return pb.Fault(
        kind=pb.FaultKind.ValueType(fault.kind.value),
        device_id=fault.device_id or 0,
        link_id=fault.link_id or "",
        delay_ms=round(fault.delay_s * 1000),
        reason=fault.reason,
    )


FAULT_REASON_MAX = 200
"""A fault's reason is a short note shown in health and events."""
LINK_ID_MAX = 63


def fault_from_wire(msg: pb.Fault) -> Fault:
    kind = _required_enum(FaultKind, msg.kind, "fault kind")
    if len(msg.reason) > FAULT_REASON_MAX:
        raise InvalidRequest(
            f"fault reason {excerpt(msg.reason, quote=True)} is too long: give at most"
            f" {FAULT_REASON_MAX} characters"
        )
    if len(msg.link_id) > LINK_ID_MAX:
        raise InvalidRequest(
            f"link id {excerpt(msg.link_id, quote=True)} is too long: name a link such as"
            " ipulink0 or gwlink0"
        )
    return Fault.of_kind(
        kind,
        device_id=msg.device_id,
        link_id=msg.link_id,
        delay_s=msg.delay_ms / 1000,
        reason=msg.reason,
    )


def faults_to_wire(faults: Iterable[Fault]) -> list[pb.Fault]:
    return [fault_to_wire(f) for f in faults]


# ---------------------------------------------------------------------- events


def event_to_wire(event: AgentEvent) -> pb.AgentEvent:
    return copy_fields(
        pb.AgentEvent,
        event,
        kind=pb.EventKind.ValueType(event.kind.value),
        time=timestamp(event.time),
        has_device=event.device_id is not None,
        device_id=event.device_id or 0,
    )


def event_from_wire(msg: pb.AgentEvent) -> AgentEvent:
    return copy_fields(
        AgentEvent,
        msg,
        kind=_required_enum(EventKind, msg.kind, "event kind"),
        time=seconds(msg.time),
        device_id=msg.device_id if msg.has_device else None,
    )


def batch_to_wire(batch: EventBatch) -> pb.WatchEventsReply:
    return pb.WatchEventsReply(
        boot_id=batch.boot_id,
        events=[event_to_wire(e) for e in batch.events],
        events_truncated=batch.truncated,
    )


def batch_from_wire(msg: pb.WatchEventsReply) -> EventBatch:
    events = tuple(event_from_wire(e) for e in msg.events)
    return EventBatch(
        boot_id=msg.boot_id,
        events=events,
        last_event=events[-1].sequence if events else 0,
        truncated=msg.events_truncated,
    )


# ---------------------------------------------------------------------- health


def holder_to_wire(holder: Holder) -> pb.IpuHolder:
    return copy_fields(pb.IpuHolder, holder)


def holder_from_wire(msg: pb.IpuHolder) -> Holder:
    return copy_fields(Holder, msg)


def telemetry_to_wire(t: IpuTelemetry) -> pb.IpuTelemetry:
    return copy_fields(pb.IpuTelemetry, t)


def telemetry_from_wire(msg: pb.IpuTelemetry) -> IpuTelemetry:
    return copy_fields(IpuTelemetry, msg)


def health_to_wire(
    health: MachineHealth, links: tuple[Sequence[pb.LinkHealth], int] | None = None
) -> pb.HealthReply:
    """``links``: the health's links encoded already, and their version (a heartbeat's
    sender keeps them while they do not change)."""
    batch = health.events
    wire_links, links_version = links if links is not None else (links_to_wire(health.links), 0)
    return pb.HealthReply(
        agent_id=health.agent_id,
        boot_id=health.boot_id,
        healthy=health.healthy,
        ipus=[
            copy_fields(
                pb.IpuHealth,
                i,
                holder=holder_to_wire(i.holder),
                attached_since=timestamp(i.attached_since) if i.attached_since else None,
                telemetry=telemetry_to_wire(i.telemetry),
            )
            for i in health.ipus
        ],
        links=wire_links,
        links_version=links_version,
        faults=faults_to_wire(health.faults),
        events=[event_to_wire(e) for e in batch.events] if batch else [],
        last_event=batch.last_event if batch else 0,
        events_truncated=batch.truncated if batch else False,
        fleet_id=health.fleet_id,
    )


def health_from_wire(
    msg: pb.HealthReply, links: tuple[LinkHealth, ...] | None = None
) -> MachineHealth:
    """``links``: the links of ``msg`` decoded already (a heartbeat memo keeps them)."""
    return MachineHealth(
        agent_id=msg.agent_id,
        boot_id=msg.boot_id,
        ipus=tuple(
            copy_fields(
                IpuHealth,
                i,
                holder=holder_from_wire(i.holder),
                attached_since=seconds(i.attached_since) if i.HasField("attached_since") else 0.0,
                telemetry=telemetry_from_wire(i.telemetry),
            )
            for i in msg.ipus
        ),
        links=links_from_wire(msg.links) if links is None else links,
        faults=tuple(fault_from_wire(f) for f in msg.faults),
        events=EventBatch(
            boot_id=msg.boot_id,
            events=tuple(event_from_wire(e) for e in msg.events),
            last_event=msg.last_event,
            truncated=msg.events_truncated,
        ),
        fleet_id=msg.fleet_id,
    )


def links_to_wire(links: Iterable[LinkHealth]) -> list[pb.LinkHealth]:
    return [
        pb.LinkHealth(
            link_id=link.link_id,
            kind=pb.LinkKind.ValueType(link.kind.value),
            has_device=link.device_id is not None,
            device_id=link.device_id or 0,
            up=link.up,
            fault=link.fault,
        )
        for link in links
    ]


def links_from_wire(links: Iterable[pb.LinkHealth]) -> tuple[LinkHealth, ...]:
    return tuple(
        LinkHealth(
            link_id=link.link_id,
            kind=_required_enum(LinkKind, link.kind, "link kind"),
            device_id=link.device_id if link.has_device else None,
            up=link.up,
            fault=link.fault,
        )
        for link in links
    )


# ------------------------------------------------------------------ link tests


def link_tests_from_wire(numbers: Iterable[int]) -> list[LinkTestKind]:
    return [_required_enum(LinkTestKind, n, "link test") for n in numbers]


def link_test_result_to_wire(result: LinkTestResult) -> pb.LinkTestResult:
    return copy_fields(pb.LinkTestResult, result, test=pb.LinkTestKind.ValueType(result.test.value))


def link_test_result_from_wire(msg: pb.LinkTestResult) -> LinkTestResult:
    return copy_fields(
        LinkTestResult,
        msg,
        test=_required_enum(LinkTestKind, msg.test, "link test"),
        details=tuple(msg.details),
    )
