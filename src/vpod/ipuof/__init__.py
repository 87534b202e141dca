"""The application side of IPUoF: find the partition, list its devices, attach one.

An edge (it imports only :mod:`vpod.client`, :mod:`vpod.wire` and
:mod:`vpod.domain`), written against the documented IPUoF line protocol of
the agents (docs/agent-protocol.md) and the V-IPU user API::

    from vpod.ipuof import find_partition, list_devices, attach

    target = find_partition()               # IPUOF_VIPU_API_*, IPUOF_CONFIG_PATH, *.conf dirs
    for device in list_devices(target):     # 2N-1 devices: N single IPUs, pairs, quads, ... all
        print(device.id, device.members)
    with attach(target, device_id=0) as held:   # exclusive; refused with DeviceBusy(holder)
        held.set_load(0.9)                  # emulated machines: telemetry follows
        held.check()                        # DeviceLost if the machine ended it (reset ...)

Console scripts built on it: ``ipu-info``, ``ipu-monitor``, ``vpod-workload``
and the launcher ``vpod-run`` (docs/applications.md).
"""

from __future__ import annotations

from .attach import AttachedIpu, Attachment, attach, attach_device
from .config import IpuofDevice, PartitionTarget, read_config_files
from .devices import Device, device_for_ipus, find_device, list_devices
from .discovery import find_partition
from .errors import (
    AttachRefused,
    ConfigInvalid,
    ConfigNotFound,
    ControllerUnreachable,
    DeviceBusy,
    DeviceLost,
    DeviceNotFound,
    IpuofError,
    PartitionNotReady,
    PartitionUnavailable,
)
from .protocol import Holder, IpuStatus, query_status, query_statuses

__all__ = [
    "AttachRefused",
    "AttachedIpu",
    "Attachment",
    "ConfigInvalid",
    "ConfigNotFound",
    "ControllerUnreachable",
    "Device",
    "DeviceBusy",
    "DeviceLost",
    "DeviceNotFound",
    "Holder",
    "IpuStatus",
    "IpuofDevice",
    "IpuofError",
    "PartitionNotReady",
    "PartitionTarget",
    "PartitionUnavailable",
    "attach",
    "attach_device",
    "device_for_ipus",
    "find_device",
    "find_partition",
    "list_devices",
    "query_status",
    "query_statuses",
    "read_config_files",
]
