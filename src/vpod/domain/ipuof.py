"""What applications see of a partition: IPUoF configs and the ``gc-info -l`` device list.

Pure builders (vipu-system.md §5). The controller gathers one
:class:`IpuEndpoint` per IPU of the partition from its agents and calls
:func:`partition_ipuof_config` (the reply of ``GetPartitionIpuofConfig``) or
:func:`gcd_ipuof_config` (one GCD); :func:`ipuof_conf_file` gives the static
file ``<partition>_gcd<N>.conf`` for ``~/.ipuof.conf.d/``.

Decision: ``routing_id`` and ``ipulink_segment_id`` of a device keep their
partition-wide values in every GCD's config, as the wire API defines them
("logical id in the partition, 0..size-1"); GCD ``g`` holds routing ids
``g*gcd_size ..``. ``Num Replicas`` is per GCD (``num_replicas / num_gcds``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from .catalog import MachineType, machine_spec
from .errors import InvalidSpec
from .partitions import PartitionSpec

DEFAULT_VIPU_API_PORT = 8090
FILE_DEVICE_KEYS: tuple[str, ...] = (
    "ip",
    "server_port",
    "rdma_port",
    "device_id",
    "ipulink_segment_id",
    "routing_id",
    "ipu_arch_id",
    "ipu_id",
    "chip_id",
    "gwsw_version",
)
"""The keys of a device in a static IPUoF config file, in file order."""


@dataclass(frozen=True, slots=True)
class IpuEndpoint:
    """One IPU of a partition as an IPUoF client must reach it, filled from agent data."""

    routing_id: int
    """Logical id of the IPU in the partition, 0..size-1."""
    segment_id: int
    """Which IPU-Link segment of the partition holds it."""
    ip: str
    """Address of the machine's RDMA NIC."""
    server_port: int
    rdma_port: int
    device_id: int
    """IPUoF device number on its machine (3, 2, 1, 0 in ladder order)."""
    chip_id: str
    gwsw_version: str
    ipum_sw_version: str = ""
    ipu_id: int = 0
    """The IPU's ``ipu_id`` attribute."""
    ipu_arch_id: int = 2

    def as_device(self) -> dict[str, Any]:
        """The wire's ``IpuofDevice`` as plain data (the file keys plus ``ipum_sw_version``)."""
        named = {"ipulink_segment_id": "segment_id"}  # the file's key for this field
        keys = (*FILE_DEVICE_KEYS, "ipum_sw_version")
        return {key: getattr(self, named.get(key, key)) for key in keys}


def _by_routing_id(spec: PartitionSpec, endpoints: Iterable[IpuEndpoint]) -> list[IpuEndpoint]:
    """The endpoints in routing order, checked to be exactly one per IPU of the partition."""
    ordered: list[IpuEndpoint | None] = [None] * spec.size
    for endpoint in endpoints:
        if not 0 <= endpoint.routing_id < spec.size:
            raise InvalidSpec(
                f"partition {spec.id} has {spec.size} IPUs, so routing id {endpoint.routing_id}"
                f" is out of range: use 0..{spec.size - 1}"
            )
        if ordered[endpoint.routing_id] is not None:
            raise InvalidSpec(
                f"partition {spec.id}: two IPUs claim routing id {endpoint.routing_id}"
            )
        if endpoint.segment_id != spec.segment_of(endpoint.routing_id):
            raise InvalidSpec(
                f"partition {spec.id}: the IPU with routing id {endpoint.routing_id} belongs to"
                f" segment {spec.segment_of(endpoint.routing_id)}, not {endpoint.segment_id}"
            )
        ordered[endpoint.routing_id] = endpoint
    missing = [i for i, e in enumerate(ordered) if e is None]
    if missing:
        raise InvalidSpec(
            f"partition {spec.id}: no IPU was given for routing id"
            f"{'s' if len(missing) > 1 else ''} {', '.join(map(str, missing[:8]))}"
            f"{' ...' if len(missing) > 8 else ''}"
        )
    return [e for e in ordered if e is not None]


def gcd_attributes(
    spec: PartitionSpec, gcd_id: int, *, machine_type: MachineType
) -> dict[str, str]:
    """The ``attributes`` map of one GCD's IPUoF config."""
    spec.gcd_routing_ids(gcd_id)  # raises for a GCD the partition does not have
    return {
        "Fabric Reconfigurable": "true" if spec.reconfigurable else "false",
        "IPU version": machine_spec(machine_type).ipu_version,
        "Num Replicas": str(spec.replicas_per_gcd),
        "Routing Type": spec.routing.name,
        "Sync Type": spec.sync_type.cli_name,
        "GCD Id": str(gcd_id),
    }


def gcd_ipuof_config(
    spec: PartitionSpec,
    endpoints: Iterable[IpuEndpoint],
    gcd_id: int,
    *,
    machine_type: MachineType,
) -> dict[str, Any]:
    """One GCD's config: ``{"devices": [...], "attributes": {...}}``, devices in routing order."""
    ordered = _by_routing_id(spec, endpoints)
    ids = spec.gcd_routing_ids(gcd_id)
    return {
        "devices": [ordered[i].as_device() for i in ids],
        "attributes": gcd_attributes(spec, gcd_id, machine_type=machine_type),
    }


def partition_ipuof_config(
    spec: PartitionSpec,
    endpoints: Iterable[IpuEndpoint],
    *,
    machine_type: MachineType,
    ipuof_server_version: str = "",
    gcd_id: int | None = None,
) -> dict[str, Any]:
    """The wire's ``PartitionConfig`` as plain data: every GCD, or only ``gcd_id``.

    Enum fields carry member names (``"DNC"``, ``"RING"``, ``"GS2_DEFAULT"``);
    ``gw_routing_type`` is ``None`` for a single-segment partition.
    """
    ordered = _by_routing_id(spec, endpoints)
    gcds = range(spec.num_gcds) if gcd_id is None else [gcd_id]
    return {
        "ipulink_routing_type": spec.routing.name,
        "sync_type": spec.sync_type.name,
        "reconfigurable": spec.reconfigurable,
        "gw_routing_type": spec.gw_routing.name if spec.gw_routing else None,
        "num_ipulink_segments": spec.num_segments,
        "gcd_configs": [
            gcd_ipuof_config(spec, ordered, g, machine_type=machine_type) for g in gcds
        ],
        "ipuof_server_version": ipuof_server_version,
    }


def ipuof_conf_file(partition_id: str, gcd_config: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """The static file for one GCD: its name and its JSON content (file keys only)."""
    gcd = gcd_config["attributes"]["GCD Id"]
    devices = [{k: device[k] for k in FILE_DEVICE_KEYS} for device in gcd_config["devices"]]
    return f"{partition_id}_gcd{gcd}.conf", {
        "devices": devices,
        "attributes": dict(gcd_config["attributes"]),
    }


def ipuof_environment(
    *,
    api_host: str,
    partition_id: str,
    api_port: int = DEFAULT_VIPU_API_PORT,
    gcd_id: int | None = None,
    timeout_seconds: int | None = None,
) -> dict[str, str]:
    """The environment that lets an IPUoF client fetch its config from the controller."""
    env = {
        "IPUOF_VIPU_API_HOST": api_host,
        "IPUOF_VIPU_API_PORT": str(api_port),
        "IPUOF_VIPU_API_PARTITION_ID": partition_id,
    }
    if gcd_id is not None:
        env["IPUOF_VIPU_API_GCD_ID"] = str(gcd_id)
    if timeout_seconds is not None:
        env["IPUOF_VIPU_API_TIMEOUT"] = str(timeout_seconds)
    return env


@dataclass(frozen=True, slots=True)
class ListedDevice:
    """One device of ``gc-info -l``: a single IPU or a group of them."""

    id: int
    members: tuple[int, ...]
    """The DNC ids (single-IPU device ids) of its IPUs; ``(id,)`` for a single IPU."""

    @property
    def num_ipus(self) -> int:
        return len(self.members)


def device_listing(num_ipus: int) -> tuple[ListedDevice, ...]:
    """The devices an IPUoF client lists for ``num_ipus`` IPUs.

    Ids ``0..N-1`` are the single IPUs, then N/2 pairs, N/4 quads and so on up
    to one device of all N: 2N-1 ids when N is a power of two. Decision: when
    N is not (a partition of 192 IPUs), groups double while they divide N and
    one last device holds all N.
    """
    if num_ipus < 1:
        raise InvalidSpec(f"a device listing needs at least 1 IPU, not {num_ipus}")
    devices = [ListedDevice(i, (i,)) for i in range(num_ipus)]
    group = 2
    while group <= num_ipus and num_ipus % group == 0:
        first_id = len(devices)
        devices.extend(
            ListedDevice(first_id + n, tuple(range(start, start + group)))
            for n, start in enumerate(range(0, num_ipus, group))
        )
        group *= 2
    if devices[-1].num_ipus != num_ipus:
        devices.append(ListedDevice(len(devices), tuple(range(num_ipus))))
    return tuple(devices)


def listing_table(devices: Sequence[ListedDevice]) -> list[dict[str, Any]]:
    """The listing as rows for a CLI table or ``--json``: id, IPU count, member DNC ids."""
    return [{"id": d.id, "ipus": d.num_ipus, "members": list(d.members)} for d in devices]
