"""Typed records of the user API's replies (``virmgrpc``), read from the wire once.

Enums are the domain's (:class:`~vpod.domain.partition_states.ReadyState`,
:class:`~vpod.domain.routing.IpuLinkRouting` ...); a wire value of 0
("undefined") reads as ``None``. Every record keeps what it was read from in
``raw`` (not compared, not shown by ``repr``): the protobuf message over
gRPC, the JSON object over REST (:mod:`.rest_records`), for tools that print
the wire form, such as ``vipu list partitions --json``. Fields one API does not carry are
``None`` when the record comes from that API.
"""

from __future__ import annotations

import dataclasses
import enum
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cache
from typing import Any, Self, TypeVar

from google.protobuf.timestamp_pb2 import Timestamp

from vpod.domain.ipuof import FILE_DEVICE_KEYS
from vpod.domain.partition_states import OperationState, ReadyState
from vpod.domain.routing import GwRouting, IpuLinkRouting, SyncType
from vpod.wire import virmgrpc_pb2 as pb

from .raw_record import RawRecord

E = TypeVar("E", bound=enum.Enum)
R = TypeVar("R")

IPUOF_ATTRIBUTE_ORDER: tuple[str, ...] = (
    "Fabric Reconfigurable",
    "IPU version",
    "Num Replicas",
    "Routing Type",
    "Sync Type",
    "GCD Id",
)
"""The attributes of an IPUoF config in the order of the V-IPU docs; others follow, sorted."""


def enum_or_none(cls: type[E], value: int) -> E | None:
    """The domain enum member of a wire number; ``None`` for 0 (undefined) or unknown."""
    try:
        return cls(value) if value else None
    except ValueError:
        return None


def enum_by_name(cls: type[E], text: str | None) -> E | None:
    """The member a JSON name spells (``ipu-link`` -> ``LinkTest.IPU_LINK``); ``None`` for
    an empty or unknown name."""
    if not text:
        return None
    return cls.__members__.get(text.upper().replace("-", "_"))


def timestamp_or_none(stamp: Timestamp, present: bool = True) -> datetime | None:
    """A wire timestamp as an aware UTC datetime; ``None`` when unset."""
    if not present or (stamp.seconds == 0 and stamp.nanos == 0):
        return None
    return stamp.ToDatetime(tzinfo=UTC)


@cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def copy_fields(cls: type[R], source: object, *parts: object, **given: Any) -> R:
    """A record ``cls`` of the wire shape ``source`` (a protobuf message, a REST shape): each
    field is ``given``, else the field of the same name of ``source`` or, failing that, of the
    first of ``parts`` (messages it nests, such as a partition's ``spec``) that has one (a field
    none has takes the record's default), repeated fields as tuples, maps as dicts, timestamps
    as aware datetimes (``None`` when unset), an optional enum from its wire number
    (:func:`enum_or_none`) or its JSON name (:func:`enum_by_name`); ``raw`` is ``source``
    unless given."""
    values = dict(given)
    hints = _hints(typing.cast(type, cls))
    sources = (source, *parts)
    for spec in dataclasses.fields(cls):  # type: ignore[arg-type]
        name = spec.name
        if name in values:
            continue
        if name == "raw":
            values[name] = source
            continue
        holder = next((s for s in sources if hasattr(s, name)), None)
        if holder is not None:
            values[name] = _as_annotated(hints[name], getattr(holder, name), holder, name)
    return cls(**values)


@dataclass(frozen=True)
class FromWire(RawRecord):
    """A record whose fields are its wire message's, by name (:func:`copy_fields`)."""

    @classmethod
    def from_wire(cls, message: Any) -> Self:
        return copy_fields(cls, message)


def _as_annotated(hint: Any, value: Any, source: Any, name: str) -> Any:
    if isinstance(value, Timestamp):
        return timestamp_or_none(value, source.HasField(name))
    origin = typing.get_origin(hint)
    member = _optional_enum(hint)
    if member is not None and isinstance(value, int):
        return enum_or_none(member, value)
    if member is not None and isinstance(value, str | None):
        return enum_by_name(member, value)
    if origin is tuple:
        return tuple(value)
    if origin in (Mapping, dict):
        return dict(value)
    return value


def _optional_enum(hint: Any) -> type[enum.Enum] | None:
    """``E`` of an ``E | None`` annotation, when ``E`` is an enum."""
    if typing.get_origin(hint) not in (typing.Union, types.UnionType):
        return None
    options = [arg for arg in typing.get_args(hint) if arg is not type(None)]
    if len(options) == 1 and isinstance(options[0], type) and issubclass(options[0], enum.Enum):
        return options[0]
    return None


def routing_of(message: pb.PartitionSpec | pb.PartitionConfig) -> dict[str, Any]:
    """The ``ipulink_routing``, ``gw_routing`` and ``sync_type`` fields of a record of a
    partition (its spec, its IPUoF config) from the wire numbers named ``*_type``."""
    return {
        "ipulink_routing": enum_or_none(IpuLinkRouting, message.ipulink_routing_type),
        "gw_routing": enum_or_none(GwRouting, message.gw_routing_type),
        "sync_type": enum_or_none(SyncType, message.sync_type),
    }


@dataclass(frozen=True)
class Version:
    """The controller's version and where it was asked."""

    version: str
    endpoint: str


@dataclass(frozen=True)
class PartitionIpu:
    """One IPU of a partition: its domain and place, physical and logical."""

    ipulink_domain_topology_id: int
    ipulink_domain_routing_id: int
    topology_id: int
    routing_id: int
    gcd: int | None = None
    """REST only: the graph compile domain holding it."""
    agent_id: str | None = None
    """REST only: the agent of its machine."""
    device_id: int | None = None
    """REST only: its device number on that machine."""


@dataclass(frozen=True)
class Partition(RawRecord):
    """A partition as the user API lists it."""

    id: str
    cluster_id: str
    allocation_id: str
    ready_state: ReadyState | None
    ipus: tuple[PartitionIpu, ...]
    num_gcds: int
    num_replicas: int
    num_ipulink_segments: int
    reconfigurable: bool
    ipulink_routing: IpuLinkRouting | None
    gw_routing: GwRouting | None
    sync_type: SyncType | None
    ipuof_server_version: str
    operation_state: OperationState | None = None
    """REST only (over gRPC: :meth:`~.user.UserClient.partition_status`)."""
    disable_auto_reset: bool | None = None
    relocatable: bool | None = None
    created_at: datetime | None = None
    updated_at: datetime | None = None

    @property
    def size(self) -> int:
        return len(self.ipus)

    @classmethod
    def from_wire(cls, message: pb.Partition) -> Partition:
        spec = message.spec
        return copy_fields(
            cls,
            message,
            spec,
            ipus=tuple(copy_fields(PartitionIpu, ipu) for ipu in spec.ipus),
            **routing_of(spec),
        )


@dataclass(frozen=True)
class PartitionStatus(FromWire):
    """What the controller says about a partition now."""

    partition_id: str
    ready_state: ReadyState | None
    operation_state: OperationState | None
    errors: tuple[str, ...]
    max_auto_reset_retries: int
    auto_reset_retry_count: int
    last_auto_reset_time: datetime | None


@dataclass(frozen=True)
class IpuofDevice:
    """One IPU as an IPUoF client reaches it: a device of the static IPUoF file (the REST
    shape ``vpod.wire.rest.ipuof.IpuofDevice`` has the same fields), and the IPU-Machine's
    software version. A dataclass, not that pydantic shape: the command lines read it over
    gRPC, and loading pydantic would add a sixth of a second to every ``vipu`` call."""

    ip: str
    server_port: int
    rdma_port: int
    device_id: int
    ipulink_segment_id: int
    routing_id: int
    ipu_arch_id: int
    ipu_id: int
    chip_id: str
    gwsw_version: str
    ipum_sw_version: str

    @classmethod
    def from_wire(cls, message: pb.IpuofDevice) -> IpuofDevice:
        return copy_fields(cls, message)


def ordered_attributes(attributes: Mapping[str, str]) -> dict[str, str]:
    """IPUoF attributes in the documented order, the others sorted after them."""
    known = [key for key in IPUOF_ATTRIBUTE_ORDER if key in attributes]
    rest = sorted(key for key in attributes if key not in IPUOF_ATTRIBUTE_ORDER)
    return {key: attributes[key] for key in (*known, *rest)}


@dataclass(frozen=True)
class GcdConfig(RawRecord):
    """The IPUoF config of one graph compile domain."""

    devices: tuple[IpuofDevice, ...]
    attributes: Mapping[str, str]

    def file(self) -> dict[str, Any]:
        """The static IPUoF file shape an application reads (``~/.ipuof.conf.d/*.conf``)."""
        devices = [
            {key: getattr(device, key) for key in FILE_DEVICE_KEYS}
            for device in sorted(self.devices, key=lambda d: d.routing_id)
        ]
        return {"devices": devices, "attributes": ordered_attributes(self.attributes)}


@dataclass(frozen=True)
class IpuofConfig(RawRecord):
    """A partition's IPUoF configuration: one :class:`GcdConfig` per GCD."""

    gcds: tuple[GcdConfig, ...]
    ipulink_routing: IpuLinkRouting | None
    gw_routing: GwRouting | None
    sync_type: SyncType | None
    reconfigurable: bool
    num_ipulink_segments: int
    ipuof_server_version: str

    def files(self) -> list[dict[str, Any]]:
        """Every GCD's IPUoF file, in GCD order."""
        return [gcd.file() for gcd in self.gcds]

    @classmethod
    def from_wire(cls, message: pb.PartitionConfig) -> IpuofConfig:
        gcds = tuple(
            copy_fields(GcdConfig, gcd, devices=tuple(map(IpuofDevice.from_wire, gcd.devices)))
            for gcd in message.gcd_configs
        )
        return copy_fields(
            cls,
            message,
            gcds=gcds,
            **routing_of(message),
        )


@dataclass(frozen=True)
class IpuAttributes(RawRecord):
    """The attributes of every IPU of one agent, by the IPU's id on its machine."""

    agent: str
    ipus: Mapping[int, Mapping[str, str]]

    @classmethod
    def from_wire(cls, entry: pb.ListIPUAttributesReply.Entry) -> IpuAttributes:
        ipus = {ipu: dict(entry.ipu_attributes[ipu].attributes) for ipu in entry.ipu_attributes}
        return cls(agent=entry.agent, ipus=ipus, raw=entry)
