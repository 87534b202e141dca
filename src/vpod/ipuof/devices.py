"""The devices of a partition as ``gc-info -l`` lists them (vipu-system.md §5).

For N IPUs, ids ``0..N-1`` are the single IPUs (their DNC ids, in routing
order), then N/2 pairs, N/4 quads, ... up to one device of all N: 2N-1 ids.
A multi-IPU device lists its members by DNC id. The grouping itself is the
domain's (:func:`vpod.domain.ipuof.device_listing`); this module puts the
IPUoF endpoints behind each id.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from vpod.domain.ipuof import device_listing

from .config import IpuofDevice, PartitionTarget
from .errors import DeviceNotFound


@dataclass(frozen=True, slots=True)
class Device:
    """One device of the listing: a single IPU or a group of them."""

    id: int
    members: tuple[int, ...]
    """DNC ids (single-IPU device ids) of its IPUs."""
    ipus: tuple[IpuofDevice, ...]

    @property
    def num_ipus(self) -> int:
        return len(self.members)

    def as_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"id": self.id, "num_ipus": self.num_ipus}
        if self.num_ipus == 1:
            ipu = self.ipus[0]
            data.update(
                ip=ipu.ip,
                server_port=ipu.server_port,
                device_id=ipu.device_id,
                routing_id=ipu.routing_id,
            )
        else:
            data["members"] = list(self.members)
        return data


def list_devices(target: PartitionTarget) -> tuple[Device, ...]:
    """Every device of the target: single IPUs first, then the groups, largest last."""
    return tuple(
        Device(id=d.id, members=d.members, ipus=tuple(target.ipus[m] for m in d.members))
        for d in device_listing(target.num_ipus)
    )


def find_device(target: PartitionTarget, device_id: int) -> Device:
    devices = list_devices(target)
    if not 0 <= device_id < len(devices):
        raise DeviceNotFound(
            f"{target.describe()} has devices 0..{len(devices) - 1}, not {device_id}:"
            " list them with 'ipu-info -l'"
        )
    return devices[device_id]


def device_for_ipus(target: PartitionTarget, members: tuple[int, ...]) -> Device:
    """The listed device made of exactly these DNC ids (a replica's or an instance's IPUs)."""
    for device in list_devices(target):
        if device.members == members:
            return device
    raise DeviceNotFound(
        f"{target.describe()} has no device of IPUs {members[0]}..{members[-1]}: a device"
        " holds 1, 2, 4, ... IPUs aligned to its size"
    )
