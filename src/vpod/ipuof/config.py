"""What an application knows about its partition: its IPUs as IPUoF devices, and where from.

A :class:`PartitionTarget` comes from the controller (``IPUOF_VIPU_API_*``)
or from a static IPUoF config file (vipu-system.md §5), whose shape is::

    {"devices": [{"ip", "server_port", "rdma_port", "device_id",
                  "ipulink_segment_id", "routing_id", "ipu_arch_id", "ipu_id",
                  "chip_id", "gwsw_version"}, ...],
     "attributes": {"Fabric Reconfigurable": "true", "GCD Id": "0", ...}}

``vipu get partition ID --ipuof-configs`` writes that (a JSON list of them
for a partition of several GCDs); this module reads both forms.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vpod.domain.ipuof import FILE_DEVICE_KEYS

from .errors import ConfigInvalid

GCD_FILE = re.compile(r"^(?P<partition>.+)_gcd(?P<gcd>\d+)\.conf$")
"""``<partition>_gcd<N>.conf``: the name V-IPU gives a GCD's static config file."""

_INT_KEYS = ("server_port", "rdma_port", "device_id", "ipulink_segment_id", "routing_id")


@dataclass(frozen=True, slots=True)
class IpuofDevice:
    """One IPU of the partition as an IPUoF client reaches it."""

    ip: str
    server_port: int
    rdma_port: int
    device_id: int
    """IPUoF device number on its machine (0..3)."""
    routing_id: int
    """Logical id of the IPU in the partition."""
    ipulink_segment_id: int = 0
    ipu_arch_id: int = 2
    ipu_id: int = 0
    chip_id: str = ""
    gwsw_version: str = ""

    @property
    def endpoint(self) -> str:
        return f"{self.ip}:{self.server_port}"

    def as_dict(self) -> dict[str, Any]:
        """The device as a static config file's entry holds it (its keys in file order)."""
        return {key: getattr(self, key) for key in FILE_DEVICE_KEYS}


@dataclass(frozen=True, slots=True)
class PartitionTarget:
    """The IPUs an application may use, in the order their DNC ids count them (0..N-1)."""

    ipus: tuple[IpuofDevice, ...]
    attributes: Mapping[str, str] = field(default_factory=dict)
    partition_id: str | None = None
    """None when a static config does not say (attaching then takes any active partition)."""
    gcd_id: int | None = None
    source: str = ""
    """Where the config came from: ``controller HOST:PORT`` or a file path."""

    @property
    def num_ipus(self) -> int:
        return len(self.ipus)

    def describe(self) -> str:
        name = f"partition {self.partition_id}" if self.partition_id else "a partition"
        gcd = f" GCD {self.gcd_id}" if self.gcd_id is not None else ""
        return f"{name}{gcd} ({self.num_ipus} IPUs, from {self.source})"


def device_from_dict(data: Mapping[str, Any], where: str) -> IpuofDevice:
    """One ``devices`` entry of a config file, checked."""
    if not isinstance(data, Mapping):
        raise ConfigInvalid(f"{where}: a device must be a JSON object, not {type(data).__name__}")
    missing = [k for k in ("ip", *_INT_KEYS) if k not in data]
    if missing:
        raise ConfigInvalid(f"{where}: a device lacks {', '.join(missing)}")
    try:
        return IpuofDevice(
            ip=str(data["ip"]),
            server_port=int(data["server_port"]),
            rdma_port=int(data["rdma_port"]),
            device_id=int(data["device_id"]),
            routing_id=int(data["routing_id"]),
            ipulink_segment_id=int(data["ipulink_segment_id"]),
            ipu_arch_id=int(data.get("ipu_arch_id", 2)),
            ipu_id=int(data.get("ipu_id", 0)),
            chip_id=str(data.get("chip_id", "")),
            gwsw_version=str(data.get("gwsw_version", "")),
        )
    except (TypeError, ValueError):
        raise ConfigInvalid(
            f"{where}: {', '.join(_INT_KEYS)} of a device must be whole numbers"
        ) from None


def target_from_gcds(
    gcds: Sequence[tuple[Sequence[IpuofDevice], Mapping[str, str]]],
    *,
    partition_id: str | None,
    gcd_id: int | None,
    source: str,
) -> PartitionTarget:
    """One target from one or more GCDs' devices: IPUs in routing order, the first GCD's
    attributes (without ``GCD Id`` when several GCDs are merged)."""
    ipus = sorted((d for devices, _ in gcds for d in devices), key=lambda d: d.routing_id)
    seen: set[tuple[str, int]] = set()
    for device in ipus:
        key = (device.ip, device.server_port)
        if key in seen:
            raise ConfigInvalid(f"{source}: the IPU at {device.endpoint} is listed twice")
        seen.add(key)
    if not ipus:
        raise ConfigInvalid(f"{source}: the config lists no devices")
    attributes = dict(gcds[0][1]) if gcds else {}
    if len(gcds) > 1:
        attributes.pop("GCD Id", None)
    return PartitionTarget(
        ipus=tuple(ipus),
        attributes=attributes,
        partition_id=partition_id,
        gcd_id=gcd_id,
        source=source,
    )


def read_config_files(paths: Iterable[Path]) -> PartitionTarget:
    """Read static IPUoF config files (each one GCD, or a JSON list of GCDs) as one target."""
    files = list(paths)
    gcds: list[tuple[list[IpuofDevice], dict[str, str]]] = []
    partitions: set[str] = set()
    gcd_ids: set[int] = set()
    for path in files:
        for number, entry in enumerate(_load(path)):
            where = f"{path}" if number == 0 else f"{path} (GCD entry {number})"
            devices = entry.get("devices")
            if not isinstance(devices, list):
                raise ConfigInvalid(f'{where}: no "devices" list; is this an IPUoF config?')
            attributes = entry.get("attributes") or {}
            if not isinstance(attributes, dict):
                raise ConfigInvalid(f'{where}: "attributes" must be a JSON object')
            gcds.append(
                (
                    [device_from_dict(d, where) for d in devices],
                    {str(k): str(v) for k, v in attributes.items()},
                )
            )
            if str(attributes.get("GCD Id", "")).isdigit():
                gcd_ids.add(int(attributes["GCD Id"]))
        named = GCD_FILE.match(path.name)
        partitions.add(named["partition"] if named else "")
    partition = partitions.pop() if len(partitions) == 1 else ""
    source = str(files[0]) if len(files) == 1 else f"{files[0].parent}/*.conf"
    return target_from_gcds(
        gcds,
        partition_id=partition or None,
        gcd_id=gcd_ids.pop() if len(gcds) == 1 and len(gcd_ids) == 1 else None,
        source=source,
    )


def _load(path: Path) -> list[dict[str, Any]]:
    try:
        text = path.read_text()
    except OSError as exc:
        raise ConfigInvalid(f"cannot read IPUoF config {path}: {exc.strerror}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigInvalid(
            f"{path} is not JSON (line {exc.lineno}: {exc.msg}); write it with"
            " 'vipu get partition ID --ipuof-configs'"
        ) from None
    entries = data if isinstance(data, list) else [data]
    if not entries or not all(isinstance(e, dict) for e in entries):
        raise ConfigInvalid(f'{path}: expected a JSON object with "devices" (or a list of them)')
    return entries
